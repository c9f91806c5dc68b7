"""Celery tasks of the dashboards app: thin, idempotent, each calling one function of ``ascode``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from celery import shared_task
from django.db import transaction

from embedadmin.dashboards import ascode

logger = logging.getLogger(__name__)


@shared_task(name="dashboards.apply_model_dir", ignore_result=True)
def apply_model_dir(model_dir: str) -> int:
    """Apply the dashboards files of ``model_dir`` to every deployment serving it; returns the files applied.
    Applying again writes nothing, so a duplicate run (two processes noticed the change) is harmless."""
    return sum(1 for outcome in ascode.apply_for_model_dir(model_dir) if outcome.ok)


def on_dashboard_files_changed(sender: Any, root: Path, **kwargs: Any) -> None:
    """Receiver of ``semantic.modeling.registry.dashboard_files_changed`` (connected in ``DashboardsConfig.ready``):
    enqueue :func:`apply_model_dir` once the current transaction commits. A failure to enqueue is logged, never
    raised: it must not break serving the model."""
    model_dir = str(root)

    def enqueue() -> None:
        # Runs at commit, outside this function's frame: it guards itself (an unreachable broker must not fail
        # the commit of whatever request or command happened to notice the files; `apply_dashboards` applies them).
        try:
            apply_model_dir.delay(model_dir)
        except Exception:
            logger.warning("could not enqueue applying the dashboards of %s", model_dir, exc_info=True)

    try:
        transaction.on_commit(enqueue)
    except Exception:  # no usable database connection here (the look ran outside any request): nothing to apply to
        logger.warning("could not schedule applying the dashboards of %s", model_dir, exc_info=True)

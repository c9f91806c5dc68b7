"""Celery tasks of the pre-aggregation store: thin, idempotent, late-acked (settings), each calling one service.

``semantic.refresh_pre_aggregations`` runs on the beat (``PRE_AGGREGATIONS_TICK_SECONDS``): for every deployment with a
model and a data source it queues the builds its rollups' ``refresh_key`` says are due, and removes what no partition
uses any more. ``semantic.build_pre_aggregation_partition`` builds one partition under its lease; a second delivery
of the same task (a worker that died after acking late) finds the lease held, or the partition built, and returns.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings

from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import ApiError
from embedadmin.semantic.errors import ModelError
from embedadmin.semantic.serving import pre_aggregations
from embedadmin.semantic.serving.services import ServedModel, served_model

logger = logging.getLogger(__name__)


def serve(deployment: Deployment) -> ServedModel:
    """The model a deployment serves its administrators (no caller's compile key or tenant): what rollups are
    built from."""
    return served_model(deployment=deployment, ctx=None)


def enqueue_build(partition_id: int) -> None:
    build_pre_aggregation_partition.delay(partition_id)


@shared_task(name="semantic.refresh_pre_aggregations", ignore_result=True)
def refresh_pre_aggregations() -> int:
    """Queue every due rollup partition of every deployment; returns how many were queued."""
    queued = 0
    deployments = Deployment.objects.exclude(model_dir="").exclude(data_source_url_encrypted="").order_by("pk")
    for deployment in deployments:
        # One deployment's failure (its model, its data source, a rollup home whose writer cannot be opened, a
        # fault of ours) is logged with its id; the deployments after it are refreshed and collected all the same.
        try:
            queued += pre_aggregations.pre_aggregations_refresh(
                deployment=deployment, serve=serve, enqueue=enqueue_build
            )
        except (ApiError, ModelError) as exc:
            logger.warning("pre-aggregations of deployment %s not refreshed: %s", deployment.pk, exc)
        except Exception:
            logger.exception("pre-aggregations of deployment %s not refreshed", deployment.pk)
        try:
            pre_aggregations.pre_aggregations_collect_garbage(deployment=deployment, serve=serve)
        except (ApiError, ModelError) as exc:
            logger.warning("pre-aggregations of deployment %s not collected: %s", deployment.pk, exc)
        except Exception:
            logger.exception("pre-aggregations of deployment %s not collected", deployment.pk)
    return queued


@shared_task(
    name="semantic.build_pre_aggregation_partition",
    ignore_result=True,
    soft_time_limit=int(settings.PRE_AGGREGATIONS["BUILD_TIMEOUT_SECONDS"]) + 60,
    time_limit=int(settings.PRE_AGGREGATIONS["BUILD_TIMEOUT_SECONDS"]) + 120,
)
def build_pre_aggregation_partition(partition_id: int) -> str:
    """Build one partition of a rollup (``built``, ``busy``, ``gone``, ``obsolete``, ``lost`` or ``failed``)."""
    return pre_aggregations.pre_aggregation_partition_build(partition_id=partition_id, serve=serve)

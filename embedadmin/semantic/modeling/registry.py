"""Compiled models, cached per directory and dialect, recompiled when a file changes.

``load_model(directory, dialect=...)`` is cheap on the hot path: at most every ``check_interval`` seconds it
lists the model files and compares their modification time and size with the last look; only when those
differ are the files read, and only when their content hash differs is the model recompiled. A model that
no longer compiles does not replace the last good one: the :class:`ModelVersion` carries both the model
still being served and the error of the files on disk.

The same look notices a change of the directory's dashboards-as-code files (``dashboards/*.yml``, not model files)
and, after the model it goes with is in place, sends :data:`dashboard_files_changed` (the dashboards app applies
them; this layer does not know it).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.dispatch import Signal

from embedadmin.semantic.errors import ModelError, ModelProblem
from embedadmin.semantic.modeling.compiler import compile_model
from embedadmin.semantic.modeling.dialects import MODEL_DIALECTS
from embedadmin.semantic.modeling.files import (
    FileStamp,
    content_hash,
    list_dashboard_files,
    list_model_files,
    read_model_files,
    stamp_files,
)
from embedadmin.semantic.modeling.model import CompiledModel

logger = logging.getLogger(__name__)

DEFAULT_CHECK_INTERVAL = 1.0
RACY_WINDOW_NS = 2_000_000_000

# Sent with ``root`` (the resolved model directory, a Path) when a look finds that directory's dashboards files
# new or changed, or its model recompiled while it has some; sent after the look, outside every lock.
dashboard_files_changed = Signal()


@dataclass(frozen=True, slots=True)
class ModelVersion:
    """What a request gets: the model to serve (None if none ever compiled) and the current error, if any."""

    model: CompiledModel | None
    error: ModelError | None

    def require(self) -> CompiledModel:
        """The model to serve, or the compile error when there is none."""
        if self.model is None:
            assert self.error is not None
            raise self.error
        return self.model


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    stamps: tuple[FileStamp, ...] | None = None
    content: str | None = None
    checked_at: float = float("-inf")
    read_at_ns: int = 0
    version: ModelVersion = field(default_factory=lambda: ModelVersion(None, None))
    dashboards: str | None = None  # content hash of the dashboards files at the last look ("" when none)
    notify: bool = False  # the last look found dashboards files to apply
    used_at: float = 0.0  # monotonic time of the last ``get`` that checked it (which model to drop first)

    def fresh(self, interval: float) -> bool:
        """Whether the files were checked less than ``interval`` seconds ago."""
        return time.monotonic() - self.checked_at < interval


class ModelRegistry:
    """The per-process cache of compiled models: at most ``max_models`` (by default ``LIMITS["MAX_MODELS"]``), the
    one least recently checked dropped to make room for another directory's (compiled again if asked for)."""

    def __init__(self, check_interval: float = DEFAULT_CHECK_INTERVAL, *, max_models: int | None = None) -> None:
        self.check_interval = check_interval
        limits = getattr(settings, "LIMITS", None)
        self.max_models = max_models if max_models is not None else limits["MAX_MODELS"] if limits else 256
        self._entries: dict[tuple[str, str], _Entry] = {}
        # The entry each directory as given resolved to at its last check: while that check is fresh,
        # ``get`` skips ``Path.resolve()`` (a system call per path component); once it is due, the
        # directory is resolved again, so a repointed symlink is followed within ``check_interval``.
        self._resolved: dict[tuple[str, str], _Entry] = {}
        self._lock = threading.Lock()

    def get(self, directory: str | Path, *, dialect: str, check_interval: float | None = None) -> ModelVersion:
        if dialect not in MODEL_DIALECTS:
            raise ValueError(f"unsupported dialect {dialect!r}")
        interval = self.check_interval if check_interval is None else check_interval
        given = (str(directory), dialect)
        known = self._fresh(given, interval)
        if known is not None:
            return known
        root = Path(directory).resolve()
        with self._lock:
            entry = self._resolved[given] = self._entries.setdefault((str(root), dialect), _Entry())
            entry.used_at = time.monotonic()
            if len(self._entries) > self.max_models:
                self._drop_least_used()
        with entry.lock:
            notify = False
            if not entry.fresh(interval):
                self._refresh(entry, root, dialect)
                notify, entry.notify = entry.notify, False
            version = entry.version
        if notify:
            dashboard_files_changed.send(sender=ModelRegistry, root=root)
        return version

    def _fresh(self, given: tuple[str, str], interval: float) -> ModelVersion | None:
        entry = self._resolved.get(given)  # a dict read is atomic; writers hold the lock
        return entry.version if entry is not None and entry.fresh(interval) else None

    def _drop_least_used(self) -> None:
        """Forget the model least recently checked, and every directory name that resolved to it."""
        key = min(self._entries, key=lambda k: self._entries[k].used_at)
        dropped = self._entries.pop(key)
        for given in [g for g, e in self._resolved.items() if e is dropped]:
            del self._resolved[given]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._resolved.clear()

    def _refresh(self, entry: _Entry, root: Path, dialect: str) -> None:
        # The check counts as done only once its outcome is in ``entry.version``: ``get`` returns the
        # version without the lock while the check is fresh, so marking it fresh first would hand
        # concurrent first requests an empty version while the model compiles.
        started = time.monotonic()
        try:
            self._look(entry, root, dialect)
        finally:
            entry.checked_at = started

    def _look(self, entry: _Entry, root: Path, dialect: str) -> None:
        if not root.is_dir():
            error = ModelError([ModelProblem(str(root), 0, "", "model directory not found")])
            entry.version = ModelVersion(entry.version.model, error)
            entry.stamps = entry.content = None
            return
        paths = list_model_files(root)
        dashboard_paths = list_dashboard_files(root)
        stamps = stamp_files(root, paths + dashboard_paths)
        if stamps == entry.stamps and not _racy(stamps, entry.read_at_ns):
            return
        entry.read_at_ns = time.time_ns()
        files = read_model_files(root, paths)
        content = content_hash(files)
        dashboards = content_hash(read_model_files(root, dashboard_paths)) if dashboard_paths else ""
        entry.stamps = stamps
        if dashboards != entry.dashboards:
            entry.dashboards = dashboards
            entry.notify = bool(dashboards)
        if content == entry.content:
            return
        entry.content = content
        entry.notify = entry.notify or bool(dashboards)
        compile_started = time.perf_counter()
        try:
            model = compile_model(files, root=root, dialect=dialect)
        except ModelError as exc:
            logger.warning("data model %s does not compile: %s", root, exc.message)
            entry.version = ModelVersion(entry.version.model, exc)
            return
        logger.info(
            "compiled data model %s (%d entities) in %.0f ms",
            root,
            len(model.entities),
            (time.perf_counter() - compile_started) * 1000,
        )
        entry.version = ModelVersion(model, None)


def _racy(stamps: tuple[FileStamp, ...], read_at_ns: int) -> bool:
    """Whether a file changed so close to our last read that its timestamp may not show a later edit
    (file systems with coarse timestamps): then the contents are read again and compared by hash."""
    return any(stamp.mtime_ns >= read_at_ns - RACY_WINDOW_NS for stamp in stamps)


_registry = ModelRegistry()


def load_model(directory: str | Path, *, dialect: str = "duckdb", check_interval: float | None = None) -> ModelVersion:
    """The compiled model for ``directory`` (cached; see the module docstring)."""
    return _registry.get(directory, dialect=dialect, check_interval=check_interval)


def clear_models() -> None:
    """Forget every cached model (tests)."""
    _registry.clear()

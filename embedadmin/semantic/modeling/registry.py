"""Compiled models, cached per directory, dialect and compile key, recompiled when a file changes.

``load_model(directory, dialect=...)`` is cheap on the hot path: at most every ``check_interval`` seconds it
lists the model files and compares their modification time and size with the last look; only when those
differ are the files read, and only when their content hash differs is the model recompiled. A model that
no longer compiles does not replace the last good one: the :class:`ModelVersion` carries both the model
still being served and the error of the files on disk.

A model may be compiled for a security context (``load_model(..., security_context={"tenant": "a"})``): its
``COMPILE_CONTEXT.securityContext``, the fields a deployment's compile-context keys name (Cube's
``contextToAppId``). Each distinct one is its own compiled model, kept per directory in a least-recently-used table
of at most ``LIMITS["MAX_COMPILE_KEYS"]``; a change of the files makes every key compile again on its next request
(each keeps serving its last good model if the new files do not compile for it). Only values that cannot carry SQL
syntax may select a model (:func:`compile_key`): a compile key's values are written into the model's SQL, as in
Cube, where that is what they are for (a schema or a table per tenant).

The same look notices a change of the directory's dashboards-as-code files (``dashboards/*.yml``, not model files)
and, after the model it goes with is in place, sends :data:`dashboard_files_changed` (the dashboards app applies
them; this layer does not know it).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.dispatch import Signal

from embedadmin.semantic.errors import ModelError, ModelProblem
from embedadmin.semantic.modeling.compiler import compile_model
from embedadmin.semantic.modeling.dialects import MODEL_DIALECTS
from embedadmin.semantic.modeling.files import (
    FileStamp,
    ModelFile,
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
# What a compile key's text values may be: an identifier's characters (they are written into the model's SQL).
COMPILE_KEY_TEXT = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
NO_KEY = "{}"

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


def compile_key(security_context: Mapping[str, Any] | None) -> str:
    """The key of a compile context's security context (canonical JSON); :class:`ValueError` for a value that may
    not select a model: text beyond letters, digits, ``_`` and ``-`` (100 at most), a number that is not whole,
    a list, null."""

    def check(value: Any, path: str) -> None:
        if isinstance(value, Mapping):
            for name, item in value.items():
                check(item, f"{path}.{name}" if path else str(name))
        elif isinstance(value, str):
            if not COMPILE_KEY_TEXT.match(value):
                raise ValueError(f"{path}: a compile key's text has letters, digits, '_' and '-' only (100 at most)")
        elif not isinstance(value, bool | int):
            raise ValueError(f"{path}: a compile key's value is text, a whole number or a boolean")

    check(security_context or {}, "")
    return json.dumps(security_context or {}, sort_keys=True, separators=(",", ":"))


@dataclass
class _Keyed:
    """One compile key's model in a directory: the version served and the content hash it was compiled from."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    content: str | None = None
    version: ModelVersion = field(default_factory=lambda: ModelVersion(None, None))
    used_at: float = 0.0


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    stamps: tuple[FileStamp, ...] | None = None
    content: str | None = None
    files: list[ModelFile] = field(default_factory=list)  # the files ``content`` hashes, read at the last change
    error: ModelError | None = None  # the directory is gone
    checked_at: float = float("-inf")
    read_at_ns: int = 0
    keyed: dict[str, _Keyed] = field(default_factory=dict)  # compile key -> its model
    dashboards: str | None = None  # content hash of the dashboards files at the last look ("" when none)
    notify: bool = False  # the last look found dashboards files to apply
    used_at: float = 0.0  # monotonic time of the last ``get`` that checked it (which model to drop first)

    def fresh(self, interval: float) -> bool:
        """Whether the files were checked less than ``interval`` seconds ago."""
        return time.monotonic() - self.checked_at < interval


class ModelRegistry:
    """The per-process cache of compiled models: at most ``max_models`` directories (by default
    ``LIMITS["MAX_MODELS"]``), the one least recently checked dropped to make room for another directory's
    (compiled again if asked for), and at most ``max_keys`` compile keys per directory
    (``LIMITS["MAX_COMPILE_KEYS"]``), the least recently used dropped likewise."""

    def __init__(
        self,
        check_interval: float = DEFAULT_CHECK_INTERVAL,
        *,
        max_models: int | None = None,
        max_keys: int | None = None,
    ) -> None:
        self.check_interval = check_interval
        limits: Any = getattr(settings, "LIMITS", None) or {}
        self.max_models = max_models if max_models is not None else limits.get("MAX_MODELS", 256)
        self.max_keys = max_keys if max_keys is not None else limits.get("MAX_COMPILE_KEYS", 64)
        self._entries: dict[tuple[str, str, bool], _Entry] = {}
        # The entry each directory as given resolved to at its last check: while that check is fresh,
        # ``get`` skips ``Path.resolve()`` (a system call per path component); once it is due, the
        # directory is resolved again, so a repointed symlink is followed within ``check_interval``.
        self._resolved: dict[tuple[str, str, bool], _Entry] = {}
        self._lock = threading.Lock()

    def get(
        self,
        directory: str | Path,
        *,
        dialect: str,
        check_interval: float | None = None,
        security_context: Mapping[str, Any] | None = None,
        partial: bool = False,
    ) -> ModelVersion:
        if dialect not in MODEL_DIALECTS:
            raise ValueError(f"unsupported dialect {dialect!r}")
        interval = self.check_interval if check_interval is None else check_interval
        given = (str(directory), dialect, partial)
        key = compile_key(security_context)
        known = self._fresh(given, interval, key)
        if known is not None:
            return known
        root = Path(directory).resolve()
        with self._lock:
            entry = self._resolved[given] = self._entries.setdefault((str(root), dialect, partial), _Entry())
            entry.used_at = time.monotonic()
            if len(self._entries) > self.max_models:
                self._drop_least_used()
        with entry.lock:
            notify = False
            if not entry.fresh(interval):
                self._refresh(entry, root, dialect)
                notify, entry.notify = entry.notify, False
            keyed = entry.keyed.get(key)
            if keyed is None:
                keyed = entry.keyed[key] = _Keyed()
                if len(entry.keyed) > self.max_keys:
                    least = min((k for k in entry.keyed if k != key), key=lambda k: entry.keyed[k].used_at)
                    del entry.keyed[least]
            keyed.used_at = time.monotonic()
            files, content, missing = entry.files, entry.content, entry.error
        with keyed.lock:
            if content is not None and keyed.content != content:
                keyed.version = _compiled(keyed.version, files, root, dialect, key, partial)
                keyed.content = content
            version = keyed.version
        if notify:
            dashboard_files_changed.send(sender=ModelRegistry, root=root)
        return ModelVersion(version.model, missing) if missing is not None else version

    def _fresh(self, given: tuple[str, str, bool], interval: float, key: str) -> ModelVersion | None:
        entry = self._resolved.get(given)  # dict reads are atomic; writers hold the locks
        if entry is None or not entry.fresh(interval) or entry.error is not None:
            return None
        keyed = entry.keyed.get(key)
        if keyed is None or keyed.content != entry.content:
            return None
        keyed.used_at = time.monotonic()
        return keyed.version

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
        # The check counts as done only once its outcome is in the entry: ``get`` reads the entry without its lock
        # while the check is fresh, so marking it fresh first would hand concurrent first requests the files of
        # the look before.
        started = time.monotonic()
        try:
            self._look(entry, root, dialect)
        finally:
            entry.checked_at = started

    def _look(self, entry: _Entry, root: Path, dialect: str) -> None:
        if not root.is_dir():
            entry.error = ModelError([ModelProblem(str(root), 0, "", "model directory not found")])
            entry.stamps = entry.content = None
            return
        entry.error = None
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
        entry.files = files  # each compile key compiles them on its next request
        entry.notify = entry.notify or bool(dashboards)


def _compiled(
    last: ModelVersion, files: list[ModelFile], root: Path, dialect: str, key: str, partial: bool
) -> ModelVersion:
    """The version a compile key serves once ``files`` are compiled for it: the new model, or its last good one with
    the error of the new files (``partial``: what compiles of them, listing what does not)."""
    security_context = json.loads(key) if key != NO_KEY else None
    tenant = f" for {key}" if security_context else ""
    started = time.perf_counter()
    try:
        model = compile_model(files, root=root, dialect=dialect, security_context=security_context, partial=partial)
    except ModelError as exc:
        logger.warning("data model %s does not compile%s: %s", root, tenant, exc.message)
        return ModelVersion(last.model, exc)
    milliseconds = (time.perf_counter() - started) * 1000
    logger.info("compiled data model %s%s (%d entities) in %.0f ms", root, tenant, len(model.entities), milliseconds)
    if model.compiler_errors:
        first = model.compiler_errors[0]
        logger.warning(
            "data model %s%s compiles in part: %d faults, the first %s:%s: %s",
            *(root, tenant, len(model.compiler_errors), first.file, first.line, first.message),
        )
    return ModelVersion(model, None)


def _racy(stamps: tuple[FileStamp, ...], read_at_ns: int) -> bool:
    """Whether a file changed so close to our last read that its timestamp may not show a later edit
    (file systems with coarse timestamps): then the contents are read again and compared by hash."""
    return any(stamp.mtime_ns >= read_at_ns - RACY_WINDOW_NS for stamp in stamps)


_registry = ModelRegistry()


def load_model(
    directory: str | Path,
    *,
    dialect: str = "duckdb",
    check_interval: float | None = None,
    security_context: Mapping[str, Any] | None = None,
    partial: bool = False,
) -> ModelVersion:
    """The compiled model for ``directory`` (cached; see the module docstring), compiled for ``security_context``
    (``COMPILE_CONTEXT.securityContext``: the compile-key fields only) when one is given; ``partial``: a
    deployment's "load what compiles" (the cubes and views that compile, the others in the model's
    ``compiler_errors``)."""
    return _registry.get(
        directory, dialect=dialect, check_interval=check_interval, security_context=security_context, partial=partial
    )


def clear_models() -> None:
    """Forget every cached model (tests)."""
    _registry.clear()

"""Reading a model directory: which files are model files, Jinja rendering, and YAML that remembers lines.

A model directory holds Cube-format YAML files (``.yml``/``.yaml``, and Jinja templates of YAML: ``.jinja``) and
JavaScript files (``.js``, read by :mod:`.js_models`), any nesting; hidden files and folders are skipped, and so is
a top-level ``dashboards/`` folder: it holds dashboards as code, read by the dashboards app, not model files. A
YAML file that contains Jinja syntax (and every ``.jinja`` file) is rendered first, in a sandbox, with Python-like
globals and templates importable from the model directory (``{% import "macros/x.jinja" as m %}``). Python files
(Cube's ``globals.py``) are never executed: a model may come from an upload, and running its code would hand the
server to whoever wrote it.

YAML mappings and sequences come back as :class:`YamlMap` / :class:`YamlList`, which carry the line they
start on (and, for mappings, the line of each key) so compile errors can name ``file:line``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import SandboxedEnvironment

from embedadmin.semantic.errors import ModelError, ModelProblem

YAML_SUFFIXES = (".yml", ".yaml")
# A ``.jinja`` file (``orders.yml.jinja``) is a template whose output is YAML, rendered even without Jinja syntax,
# as Cube reads it; a macros file rendered on its own gives an empty document.
JINJA_SUFFIX = ".jinja"
MODEL_SUFFIXES = (*YAML_SUFFIXES, JINJA_SUFFIX, ".js")
# The top-level folder of a model directory that holds dashboards as code (``docs/dashboards.md``).
DASHBOARDS_DIR = "dashboards"
JINJA_MARKERS = ("{%", "{{", "{#")


class YamlMap(dict):
    """A YAML mapping with the line it starts on and the line of each of its keys (1-based)."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        return self.key_lines.get(key, self.line)


class YamlList(list):
    """A YAML sequence with the line it starts on (1-based)."""

    line: int = 0


class _DuplicateKey(yaml.MarkedYAMLError):
    pass


# libyaml's parser when PyYAML has it (several times faster); the constructors below are ours either way.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """PyYAML's safe loader building :class:`YamlMap`/:class:`YamlList` and refusing duplicate keys."""


def _construct_map(loader: _LineLoader, node: yaml.MappingNode) -> YamlMap:
    loader.flatten_mapping(node)
    result = YamlMap()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            raise _DuplicateKey(None, None, f'duplicate key "{key}"', key_node.start_mark)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = key_node.start_mark.line + 1
    return result


def _construct_list(loader: _LineLoader, node: yaml.SequenceNode) -> YamlList:
    result = YamlList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    return result


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_list)


@dataclass(frozen=True, slots=True)
class ModelFile:
    """One model file as read from disk: ``display`` is how errors name it (``model/cubes/orders.yml``)."""

    path: Path
    display: str
    content: bytes


@dataclass(frozen=True, slots=True)
class FileStamp:
    """What tells a changed file from an unchanged one without reading it."""

    relative: str
    mtime_ns: int
    size: int


def list_model_files(root: Path) -> list[Path]:
    """Every model file (YAML or JavaScript) below ``root``, sorted by relative path; hidden entries and the top-level
    ``dashboards/`` folder are skipped."""
    found: list[Path] = []
    for directory, subdirs, names in os.walk(root):
        top = Path(directory) == root
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and not (top and d == DASHBOARDS_DIR))
        found.extend(
            Path(directory) / name for name in names if name.endswith(MODEL_SUFFIXES) and not name.startswith(".")
        )
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def list_dashboard_files(root: Path) -> list[Path]:
    """The dashboards-as-code files of a model directory: ``dashboards/*.yml`` (and ``.yaml``), not hidden, sorted."""
    folder = root / DASHBOARDS_DIR
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.iterdir() if p.is_file() and p.name.endswith(YAML_SUFFIXES) and not p.name.startswith(".")
    )


def stamp_files(root: Path, paths: list[Path]) -> tuple[FileStamp, ...]:
    stamps = []
    for path in paths:
        stat = path.stat()
        stamps.append(FileStamp(path.relative_to(root).as_posix(), stat.st_mtime_ns, stat.st_size))
    return tuple(stamps)


def read_model_files(root: Path, paths: list[Path]) -> list[ModelFile]:
    return [ModelFile(path, display_name(root, path), path.read_bytes()) for path in paths]


def display_name(root: Path, path: Path) -> str:
    """``<model dir name>/<relative path>``: short, and unambiguous within one deployment."""
    return f"{root.name}/{path.relative_to(root).as_posix()}"


def content_hash(files: list[ModelFile]) -> str:
    """A stable hash of the model: relative names and contents, in order. Used as ``compilerId``."""
    digest = hashlib.sha256()
    for model_file in files:
        digest.update(model_file.display.encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(model_file.content).digest())
    return digest.hexdigest()


# What ``COMPILE_CONTEXT`` holds when a model compiles without a compile key, in Jinja templates and JavaScript
# files alike; with one, ``securityContext`` holds its fields (:func:`compile_context`).
DEFAULT_COMPILE_CONTEXT: dict[str, Any] = {"securityContext": {}}
# Python-like names a Cube Jinja template may use; the sandbox keeps attribute access safe.
_TEMPLATE_GLOBALS: dict[str, Any] = {
    "range": range,
    "len": len,
    "list": list,
    "dict": dict,
    "set": set,
    "tuple": tuple,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "enumerate": enumerate,
    "zip": zip,
    "min": min,
    "max": max,
    "sum": sum,
    "sorted": sorted,
    "reversed": reversed,
    "abs": abs,
    "round": round,
    "any": any,
    "all": all,
    "COMPILE_CONTEXT": DEFAULT_COMPILE_CONTEXT,
}


def compile_context(security_context: Mapping[str, Any] | None) -> dict[str, Any]:
    """``COMPILE_CONTEXT`` for a compile key's security context (a copy: a template cannot change another's)."""
    return {"securityContext": json.loads(json.dumps(security_context or {}))}


def template_environment(root: Path, context: Mapping[str, Any] | None = None) -> SandboxedEnvironment:
    """A sandboxed Jinja environment loading imported templates from the model directory; ``COMPILE_CONTEXT`` is
    ``context`` (with ``security_context``, Cube's snake_case spelling of ``securityContext``)."""
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.globals.update(_TEMPLATE_GLOBALS)
    if context is not None:
        security = context.get("securityContext", {})
        env.globals["COMPILE_CONTEXT"] = {**context, "securityContext": security, "security_context": security}
    return env


def parse_model_file(model_file: ModelFile, env: SandboxedEnvironment) -> Any:
    """Render (if templated) and parse one file; any failure is a :class:`ModelError` naming file and line."""
    try:
        text = model_file.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _file_error(model_file, 0, f"not UTF-8 text ({exc.reason})") from None
    if model_file.path.name.endswith(JINJA_SUFFIX) or any(marker in text for marker in JINJA_MARKERS):
        text = _render(model_file, text, env)
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - _LineLoader is a (C)SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        raise _file_error(model_file, line, f"invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:
        raise _file_error(model_file, 0, f"invalid YAML: {exc}") from None


def _render(model_file: ModelFile, text: str, env: SandboxedEnvironment) -> str:
    try:
        return env.from_string(text).render()
    except jinja2.TemplateSyntaxError as exc:
        raise _file_error(model_file, exc.lineno or 0, f"template error: {exc.message}") from None
    except jinja2.UndefinedError as exc:
        raise _file_error(model_file, _template_line(exc), f"template error: {exc}{_python_hint(env)}") from None
    except (jinja2.TemplateError, jinja2.exceptions.SecurityError, TypeError, ValueError, ArithmeticError) as exc:
        raise _file_error(model_file, _template_line(exc), f"template error: {exc}") from None


def _python_hint(env: SandboxedEnvironment) -> str:
    """For a name a template calls that the folder's Python (Cube's ``globals.py``) would have defined: why it is
    undefined here and what to write instead. Empty when the folder has no Python file at its root."""
    loader = env.loader
    roots = loader.searchpath if isinstance(loader, jinja2.FileSystemLoader) else []
    python = sorted(p.name for root in roots for p in Path(root).glob("*.py"))
    if not python:
        return ""
    return (
        f" ({', '.join(python)} defines Python helpers, which this server never runs: executing a model's code would"
        " hand the server to whoever wrote it. Inline what each helper returns: write its values in the template, or"
        " as a Jinja macro in a .jinja file of the folder imported with {% import %})"
    )


def _template_line(exc: BaseException) -> int:
    """The template line a render-time error came from, found in its traceback (0 when unknown)."""
    line = 0
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _file_error(model_file: ModelFile, line: int, message: str) -> ModelError:
    return ModelError([ModelProblem(model_file.display, line, "", message)])

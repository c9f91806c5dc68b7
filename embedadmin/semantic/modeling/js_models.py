"""JavaScript model files (Cube's ``cube()``/``view()``), read into the same documents YAML files give.

A model folder's ``.js`` files are evaluated together, once per compile, by QuickJS (the ``quickjs-ng``
package) in a child process (:mod:`.js_sandbox`) with Cube's model API (``js_model_api.js``): no Node, no file
system, network or timers, a time and a memory limit. What the files define comes back as JSON and is built
here into :class:`YamlMap` documents (``{cubes: [...], views: [...]}``, members as named list items, the lines
they are written on found in the source), so :mod:`.compiler` validates and compiles JavaScript and YAML
definitions alike, and cubes and views of both kinds refer to each other.

Why a child process: no engine's own limits hold for every builtin. Measured with this package: QuickJS checks
its interrupt between bytecodes, so ``new Array(2**31).join()`` runs on for minutes past the time limit; V8
(``mini-racer``) cannot run under an address-space limit and aborted the whole process on ``Array.fill`` past its
heap limit. A process can be stopped at a deadline and capped by the kernel; a thread cannot.

ES module syntax (``import``/``export``), which Cube's transpiler turns into its ``require``/``addExport``, is
rewritten here line for line (line numbers stay those of the file).
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from embedadmin.semantic.errors import ModelProblem
from embedadmin.semantic.modeling.files import ModelFile, YamlList, YamlMap

logger = logging.getLogger(__name__)

JS_SUFFIX = ".js"
SANDBOX = Path(__file__).with_name("js_sandbox.py")
PROGRESS = "running file "  # what js_sandbox.py writes on stderr before each file runs
# Python's start and the JSON on both sides, beyond the JavaScript's own time.
_GRACE_SECONDS = 5.0
# Sections of a cube or view that JavaScript writes as objects keyed by name and YAML as lists with ``name``.
_NAMED_SECTIONS = frozenset(
    {"measures", "dimensions", "segments", "hierarchies", "joins", "preAggregations", "pre_aggregations"}
)
# ... and inside a member: a dimension's granularities, a pre-aggregation's indexes.
_NAMED_MEMBER_SECTIONS = frozenset({"granularities", "indexes"})
_KEY_LINE = re.compile(r"""^\s*(?:["'`]?)([A-Za-z_$][\w$]*)(?:["'`]?)\s*:(?!:)""")
_CALL_LINE = re.compile(r"""\b(?:cube|view)\s*\(\s*(?:["'`]([A-Za-z_][\w]*)["'`])?""")
_IDENTIFIER = r"[A-Za-z_$][\w$]*"
_IMPORT = re.compile(
    r"""^([ \t]*)import\s+(?:(?P<clause>[^'"`;]*?)\s+from\s+)?(?P<quote>['"])(?P<spec>[^'"]+)(?P=quote)[ \t]*;?""",
    re.MULTILINE,
)
_EXPORT_DECLARATION = re.compile(
    rf"^([ \t]*)export\s+(?=(?:const|let|var|class|function\*?|async\s+function)\s+\*?\s*({_IDENTIFIER}))",
    re.MULTILINE,
)
_EXPORT_DEFAULT = re.compile(r"^([ \t]*)export\s+default\s+", re.MULTILINE)
_EXPORT_LIST = re.compile(
    r"""^([ \t]*)export\s*\{(?P<names>[^}]*)\}(?:\s*from\s*(?P<quote>['"])(?P<spec>[^'"]+)(?P=quote))?[ \t]*;?""",
    re.MULTILINE,
)
_EXPORT_ALL = re.compile(r"""^([ \t]*)export\s*\*\s*from\s*(?P<quote>['"])(?P<spec>[^'"]+)(?P=quote)[ \t]*;?""", re.M)
_LEFT_OVER = re.compile(r"^[ \t]*(import|export)\b(?!\s*\()", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one compile's JavaScript may use: seconds of run time and bytes of JavaScript heap."""

    seconds: float = 10.0
    memory_bytes: int = 256 * 1024 * 1024


DEFAULT_LIMITS = SandboxLimits()


def is_javascript(model_file: ModelFile) -> bool:
    return model_file.path.suffix == JS_SUFFIX


def javascript_documents(
    files: list[ModelFile], *, compile_context: Mapping[str, Any], limits: SandboxLimits = DEFAULT_LIMITS
) -> tuple[dict[str, YamlMap], list[ModelProblem]]:
    """Each file's document (by display name) and the problems found; a file with problems may have none."""
    problems: list[ModelProblem] = []
    sources: list[str] = []
    for model_file in files:
        try:
            text = model_file.content.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(ModelProblem(model_file.display, 0, "", f"not UTF-8 text ({exc.reason})"))
            text = ""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        rewritten = rewrite_modules(text)
        for match in _LEFT_OVER.finditer(rewritten):
            line = rewritten.count("\n", 0, match.start()) + 1
            problems.append(
                ModelProblem(model_file.display, line, "", f"this form of {match.group(1)} is not supported")
            )
        sources.append(rewritten)
    if problems:
        return {}, problems
    request = {
        "files": [{"path": _relative(f), "source": s} for f, s in zip(files, sources, strict=True)],
        "compileContext": dict(compile_context),
        "timeLimit": limits.seconds,
        "memoryLimit": limits.memory_bytes,
    }
    answer = _sandbox(request, files, limits)
    return _documents(answer, files, sources, problems)


def _relative(model_file: ModelFile) -> str:
    """The file's path inside the model folder (``cubes/orders.js``), what ``require`` resolves against."""
    return model_file.display.split("/", 1)[1] if "/" in model_file.display else model_file.display


# --- ES module syntax -------------------------------------------------------------------------------------------------


def rewrite_modules(source: str) -> str:
    """``import``/``export`` as the sandbox's ``require``/``addExport``, on the same lines (Cube's transpiler)."""
    exported: list[str] = []

    def keep_lines(match: re.Match[str], replacement: str) -> str:
        return replacement + "\n" * match.group(0).count("\n")

    def on_import(match: re.Match[str]) -> str:
        indent, clause, spec = match.group(1), (match.group("clause") or "").strip(), json.dumps(match.group("spec"))
        if not clause:
            return keep_lines(match, f"{indent}require({spec});")
        default, _, named = clause.partition("{")
        default = default.strip().rstrip(",").strip()
        statements = []
        if default.startswith("*"):
            statements.append(f"const {default.split()[-1]} = require({spec});")
        elif default:
            statements.append(f"const {default} = require({spec});")
        if named:
            names = named.rstrip().rstrip("}").replace(" as ", ": ").replace("\n", " ")
            statements.append(f"const {{{names}}} = require({spec});")
        return keep_lines(match, indent + " ".join(statements))

    def on_list(match: re.Match[str]) -> str:
        pairs = []
        for item in match.group("names").split(","):
            local, _, exported_as = item.strip().partition(" as ")
            if local:
                pairs.append(
                    f"{(exported_as or local).strip()}: __from.{local.strip()}"
                    if match.group("spec")
                    else f"{(exported_as or local).strip()}: {local.strip()}"
                )
        body = ", ".join(pairs)
        if match.group("spec"):
            spec = json.dumps(match.group("spec"))
            return keep_lines(
                match, f"{match.group(1)}addExport((function (__from) {{ return {{{body}}}; }})(require({spec})));"
            )
        return keep_lines(match, f"{match.group(1)}addExport({{{body}}});")

    def on_declaration(match: re.Match[str]) -> str:
        exported.append(match.group(2))
        return match.group(1)

    text = _IMPORT.sub(on_import, source)
    text = _EXPORT_ALL.sub(
        lambda m: f"{m.group(1)}Object.assign(__module.exports, require({json.dumps(m.group('spec'))}));", text
    )
    text = _EXPORT_LIST.sub(on_list, text)
    text = _EXPORT_DEFAULT.sub(lambda m: f"{m.group(1)}__module.exports = ", text)
    text = _EXPORT_DECLARATION.sub(on_declaration, text)
    if exported:
        text += f"\n;addExport({{{', '.join(dict.fromkeys(exported))}}});"
    return text


# --- the sandbox ------------------------------------------------------------------------------------------------------


def _sandbox(request: dict[str, Any], files: list[ModelFile], limits: SandboxLimits) -> dict[str, Any]:
    """Run the child process; its answer, or ``{"fatal": ...}`` for a child that did not answer."""
    try:
        process = subprocess.Popen(  # noqa: S603 - our own program, by absolute path, with our interpreter
            [sys.executable, "-I", str(SANDBOX)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"MALLOC_ARENA_MAX": "1"},
            cwd="/",
            start_new_session=True,
        )
    except OSError as exc:
        logger.error("cannot start the JavaScript sandbox: %s", exc)
        return _fatal("the JavaScript sandbox could not be started")
    try:
        out, err = process.communicate(json.dumps(request).encode(), timeout=limits.seconds + _GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        return _fatal(
            f"the model's JavaScript ran longer than {limits.seconds:g} s and was stopped", _running(_stop(process))
        )
    if process.returncode == 0:
        try:
            answer: dict[str, Any] = json.loads(out)
            return answer
        except ValueError:
            pass
    stderr = err.decode("utf-8", "replace").strip()
    logger.warning("JavaScript sandbox exited with %s: %s", process.returncode, stderr[-2000:])
    if process.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return _fatal(f"the model's JavaScript ran longer than {limits.seconds:g} s and was stopped", _running(err))
    if "MemoryError" in stderr or process.returncode in (-signal.SIGSEGV, -signal.SIGABRT):
        megabytes = limits.memory_bytes // (1024 * 1024)
        return _fatal(f"the model's JavaScript used more than {megabytes} MB and was stopped", _running(err))
    if "No module named 'quickjs'" in stderr:
        return _fatal("JavaScript model files need the quickjs-ng package (requirements.txt), which is not installed")
    return _fatal("the JavaScript sandbox failed; the server's log has the details")


def _stop(process: subprocess.Popen[bytes]) -> bytes:
    """Kill the child (and anything it started); what it wrote on stderr."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return process.communicate()[1]


def _running(stderr: bytes) -> int | None:
    """The file the child said it was running last (:func:`.js_sandbox.report_progress`)."""
    marks = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.startswith(PROGRESS)]
    if not marks:
        return None
    index = int(marks[-1][len(PROGRESS) :])
    return index if index >= 0 else None


def _fatal(message: str, file: int | None = None) -> dict[str, Any]:
    return {"fatal": {"file": file, "line": 0, "message": message}}


# --- the answer as documents ------------------------------------------------------------------------------------------


def _documents(
    answer: dict[str, Any], files: list[ModelFile], sources: list[str], problems: list[ModelProblem]
) -> tuple[dict[str, YamlMap], list[ModelProblem]]:
    if "fatal" in answer:
        fatal = answer["fatal"]
        display = files[fatal["file"]].display if fatal.get("file") is not None else _folder(files)
        return {}, [ModelProblem(display, fatal.get("line") or 0, "", fatal["message"])]
    if "syntax" in answer:
        return {}, [
            ModelProblem(files[p["file"]].display, p["line"], "", f"JavaScript {p['message']}")
            for p in answer["syntax"]
        ]
    for problem in answer["problems"]:
        member = problem["member"].replace(".", " ", 1) if problem["member"] else ""
        problems.append(ModelProblem(files[problem["file"]].display, problem["line"], member, problem["message"]))
    by_file: dict[int, list[dict[str, Any]]] = {}
    for definition in answer["definitions"]:
        by_file.setdefault(definition["file"], []).append(definition)
    documents: dict[str, YamlMap] = {}
    for index, definitions in by_file.items():
        lines = SourceLines(sources[index])
        documents[files[index].display] = _document(definitions, lines)
    return documents, problems


def _folder(files: list[ModelFile]) -> str:
    first = files[0].display if files else "model"
    return first.split("/", 1)[0]


def _document(definitions: list[dict[str, Any]], lines: SourceLines) -> YamlMap:
    starts = sorted(lines.call_line(d["name"], d["line"]) for d in definitions)
    sections: dict[str, YamlList] = {"cubes": _yaml_list([], 1), "views": _yaml_list([], 1)}
    for definition in definitions:
        line = lines.call_line(definition["name"], definition["line"])
        end = next((s for s in starts if s > line), lines.count + 1)
        body = {"name": definition["name"], **{k: v for k, v in definition["body"].items() if k != "name"}}
        sections[f"{definition['kind']}s"].append(_mapping(body, line, end, lines, level="definition"))
    return _yaml_map(dict(sections), 1, {"cubes": 1, "views": 1})


def _mapping(value: dict[str, Any], line: int, end: int, lines: SourceLines, *, level: str) -> YamlMap:
    key_lines: dict[str, int] = {}
    items: dict[str, Any] = {}
    for key, item in value.items():
        key_line = lines.find(key, line, end) or line
        key_lines[key] = key_line
        named = (level == "definition" and key in _NAMED_SECTIONS) or (
            level == "member" and key in _NAMED_MEMBER_SECTIONS
        )
        if named and isinstance(item, dict):
            items[key] = _named_items(item, key_line, end, lines)
        else:
            items[key] = _convert(item, key_line, end, lines)
    return _yaml_map(items, line, key_lines)


def _named_items(section: dict[str, Any], line: int, end: int, lines: SourceLines) -> YamlList:
    """``{count: {type: 'count'}}`` as ``[{name: count, type: count}]``, each item on its own line."""
    result = _yaml_list([], line)
    for name, item in section.items():
        item_line = lines.find(name, line, end) or line
        if isinstance(item, dict):
            result.append(_mapping({"name": name, **item}, item_line, end, lines, level="member"))
        else:
            result.append(_convert(item, item_line, end, lines))
    return result


def _convert(value: Any, line: int, end: int, lines: SourceLines) -> Any:
    if isinstance(value, dict):
        return _mapping(value, line, end, lines, level="value")
    if isinstance(value, list):
        return _yaml_list([_convert(item, line, end, lines) for item in value], line)
    return value


def _yaml_map(items: dict[str, Any], line: int, key_lines: dict[str, int]) -> YamlMap:
    mapping = YamlMap(items)
    mapping.line = line
    mapping.key_lines = key_lines
    return mapping


def _yaml_list(items: list[Any], line: int) -> YamlList:
    sequence = YamlList(items)
    sequence.line = line
    return sequence


class SourceLines:
    """Where object keys are written in a file: enough to name the line of a member in an error."""

    def __init__(self, source: str) -> None:
        self.by_key: dict[str, list[int]] = {}
        self.calls: dict[str, list[int]] = {}
        rows = source.split("\n")
        self.count = len(rows)
        for number, row in enumerate(rows, start=1):
            match = _KEY_LINE.match(row)
            if match:
                self.by_key.setdefault(match.group(1), []).append(number)
            call = _CALL_LINE.search(row)
            if call:
                self.calls.setdefault(call.group(1) or "", []).append(number)

    def find(self, key: str, start: int, end: int) -> int | None:
        """The first line in ``[start, end)`` that starts with ``key:``."""
        numbers = self.by_key.get(key, [])
        index = bisect.bisect_left(numbers, start)
        if index < len(numbers) and numbers[index] < end:
            return numbers[index]
        return None

    def call_line(self, name: str, hint: int) -> int:
        """The line of the ``cube('name', ...)`` call a definition comes from. ``hint`` is the line QuickJS gives
        the call (some line of its arguments, 0 when the call is in another file): the call written with that name
        nearest before it, else the nearest call before it (a name built at run time), else the hint itself."""
        named = self.calls.get(name, [])
        if named and not hint:
            return named[0]
        before = [line for line in named if line <= hint]
        if before:
            return before[-1]
        anonymous = [line for lines in self.calls.values() for line in lines if line <= hint]
        return max(anonymous) if anonymous else hint or 1

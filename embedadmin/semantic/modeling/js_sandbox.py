"""The program a compile of JavaScript model files runs in: a child process holding QuickJS and nothing else.

Started by :mod:`.js_models` as ``python -I js_sandbox.py`` (no site of the user, no environment, not the
project's packages: it imports the standard library and ``quickjs`` only). It reads one JSON request on stdin
(the files, already rewritten to plain scripts, the compile context and the limits), caps its own address space
and CPU time before it reads a line of the model, evaluates Cube's model API (``js_model_api.js``) and the files
in one QuickJS context, and writes one JSON answer on stdout.

The engine has no file system, network, timers or processes to offer; the limits are QuickJS's own (memory
counted on every allocation, an interrupt after the time limit) and, underneath, the process's: some builtins
(``Array.prototype.join`` on a huge sparse array, ``sort``) do not look at the interrupt, so the parent also stops
this process at a wall-clock deadline, and ``RLIMIT_AS``/``RLIMIT_CPU`` hold whatever QuickJS does not.

Line numbers: the API and every file are one script, so a stack frame's ``<input>:LINE`` is a line of that
script; :func:`located` maps it back to a file and its own line.
"""

from __future__ import annotations

import json
import re
import resource
import sys
import time
from bisect import bisect_right
from pathlib import Path
from typing import Any

import quickjs

API_FILE = Path(__file__).with_name("js_model_api.js")
# The address space a Python with QuickJS needs beyond the JavaScript heap (about 30 MB; generous on purpose).
PROCESS_OVERHEAD = 192 * 1024 * 1024
STACK_BYTES = 1024 * 1024
MAX_PENDING_JOBS = 1_000_000
PROGRESS = "running file "
_FRAME = re.compile(r"<input>:(\d+)(?::\d+)?")
WRAPPER_HEAD = (
    "function (cube, view, context, asyncModule, require, addExport, setExport, module, exports, __module, __scope)"
    " { with (__scope) {"
)


class Script:
    """The API and the files as one script, with the line each file starts on."""

    def __init__(self, api: str, files: list[dict[str, Any]]) -> None:
        parts = [api.rstrip("\n"), "\n"]
        self.starts: list[int] = []
        line = api.rstrip("\n").count("\n") + 2
        for index, file in enumerate(files):
            head = f"__define({index}, {json.dumps(file['path'])}, {WRAPPER_HEAD}"
            self.starts.append(line)
            parts.append(head + file["source"] + "\n}});\n")
            line += file["source"].count("\n") + 2
        self.text = "".join(parts)

    def located(self, stack: str) -> tuple[int, int] | None:
        """(file index, line) of the first stack frame inside a model file; None when none is."""
        for match in _FRAME.finditer(stack or ""):
            line = int(match.group(1))
            index = bisect_right(self.starts, line) - 1
            if index >= 0:
                return index, line - self.starts[index] + 1
        return None


def wrapped(source: str) -> str:
    """A file as the function it runs as, for the syntax check (the first line of the file stays line 1)."""
    return f"({WRAPPER_HEAD}{source}\n}}}})"


def limit_process(request: dict[str, Any]) -> None:
    memory = int(request["memoryLimit"]) + PROCESS_OVERHEAD
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    seconds = int(float(request["timeLimit"])) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def engine(request: dict[str, Any]) -> quickjs.Context:
    context = quickjs.Context()
    context.set_memory_limit(int(request["memoryLimit"]))
    context.set_time_limit(float(request["timeLimit"]))
    context.set_max_stack_size(STACK_BYTES)
    return context


def syntax_problems(context: quickjs.Context, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    problems = []
    for index, file in enumerate(files):
        try:
            context.eval(wrapped(file["source"]))
        except quickjs.JSException as exc:
            text = str(exc)
            match = _FRAME.search(text)
            message = text.strip().splitlines()[0] if text.strip() else "syntax error"
            problems.append({"file": index, "line": int(match.group(1)) if match else 0, "message": message})
    return problems


def fatal(exc: Exception, script: Script | None, request: dict[str, Any]) -> dict[str, Any]:
    """What stopped the engine itself: the time or memory limit, a stack overflow, an uncatchable error."""
    text = str(exc)
    where = script.located(text) if script else None
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    if "interrupted" in first:
        message = f"the model's JavaScript ran longer than {float(request['timeLimit']):g} s and was stopped"
    elif "out of memory" in first or isinstance(exc, MemoryError):
        megabytes = int(request["memoryLimit"]) // (1024 * 1024)
        message = f"the model's JavaScript used more than {megabytes} MB and was stopped"
    elif isinstance(exc, quickjs.StackOverflow):
        message = "the model's JavaScript recursed too deeply (stack overflow)"
    else:
        message = f"the model's JavaScript failed: {first}"
    file, line = where if where else (None, 0)
    return {"fatal": {"file": file, "line": line, "message": message}}


def report_progress(index: int) -> None:
    """Which file runs now, on stderr: the parent names it when it has to stop this process from outside."""
    sys.stderr.write(f"{PROGRESS}{int(index)}\n")
    sys.stderr.flush()


def run(request: dict[str, Any]) -> dict[str, Any]:
    files: list[dict[str, Any]] = request["files"]
    context = engine(request)
    syntax = syntax_problems(context, files)
    if syntax:
        return {"syntax": syntax}
    context = engine(request)  # a fresh context: nothing of the syntax check stays
    script = Script(API_FILE.read_text(encoding="utf-8"), files)
    deadline = time.monotonic() + float(request["timeLimit"])
    try:
        context.eval(script.text)
        megabytes = int(request["memoryLimit"]) // (1024 * 1024)
        context.eval(f"__setup({json.dumps(json.dumps(request['compileContext']))}, {megabytes})")
        for index in range(len(files)):
            report_progress(index)
            context.eval(f"__load({index})")
        for index, file in enumerate(json.loads(context.eval("__asyncModules()"))):
            report_progress(file)
            context.eval(f"__startAsync({index})")
            jobs = 0
            while context.execute_pending_job():
                jobs += 1
                if jobs > MAX_PENDING_JOBS or time.monotonic() > deadline:
                    raise quickjs.JSException("InternalError: interrupted")
            context.eval(f"__finishAsync({index})")
        definitions = []
        for index, file in enumerate(json.loads(context.eval("__definitions()"))):
            report_progress(file)
            definitions.append(json.loads(context.eval(f"__collect({index})")))
        answer = {"definitions": definitions, "problems": json.loads(context.eval("__problems()"))}
    except (quickjs.JSException, quickjs.StackOverflow, MemoryError) as exc:
        return fatal(exc, script, request)
    for definition in answer["definitions"]:
        where = script.located(definition.pop("stack"))
        definition["line"] = where[1] if where and where[0] == definition["file"] else 0
    for problem in answer["problems"]:
        where = script.located(problem.pop("stack"))
        problem["file"], problem["line"] = where if where else (problem["file"], 0)
    return answer


def main() -> None:
    request = json.loads(sys.stdin.buffer.read())
    limit_process(request)
    answer = run(request)
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()

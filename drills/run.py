"""Run the fault drills: ``make drills`` (``.venv/bin/python -m drills.run [--only NAME] [--budget SECONDS]``).

The drill contract (also in ``drills/README.md``):

- A drill is a module ``drills/drill_<name>.py``; ``<name>`` is what ``--only`` takes.
- It defines ``run(cluster) -> Drill``: ``cluster`` is :func:`drills._cluster.cluster`, a context manager factory
  (``with cluster(postgres_data=True) as c: ...``) whose deployment the drill owns and may break; it is torn down
  when the block exits. A drill that needs no deployment may define ``run() -> Drill`` instead.
- It returns a :class:`drills._cluster.Drill` with its figures and expectations (``drill.expect(text, ok)``);
  the drill fails if any expectation is false, if it raises, or if it runs past its budget.
- It may set ``BUDGET_SECONDS = <int>`` at module level (a literal: the runner reads it without importing the
  module); 180 s by default. The cluster's start (about 7 s idle) counts.
- A drill judges behaviour, not the machine's speed: it waits for what it needs to have happened (``wait_for``,
  ``Progress``), never a fixed time, and its budget is a stop-loss, at least three times what it takes on the idle
  machine; only its expectations fail it. On a busy machine the runner scales the budgets by the CPU contention it
  measures (:func:`cpu_contention`, between 1 and 4), and each wait's stop-loss ends before the drill's budget does,
  so that a wait that gives up says what it waited for.

Each drill runs in a process of its own (``--child``), with a wall-clock budget: past it the process gets
SIGTERM (the cluster tears itself down), 20 s later SIGKILL, and the runner removes whatever the cluster had
left (its processes, its PostgreSQL, its temporary directory). All drills together get ``--budget`` seconds (720 by
default: over four times the idle run, and CI's ``make test`` + ``make drills`` within 30 minutes on a loaded 2-core
machine); a drill that cannot start within what is left fails as not run. Results go to ``var/drills.json``; the
exit status is 1 if any drill failed.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

from drills._cluster import CONTENTION_ENV, ROOT, STATE_ENV, TEMPLATE_ENV, ClusterError, Drill, build_template, cluster

DRILLS_DIR = Path(__file__).resolve().parent
DEFAULT_BUDGET = 180
TOTAL_BUDGET = 720
KILL_GRACE = 20
MAX_CONTENTION = 4.0  # budgets stretch at most this much on a busy machine
DEADLINE_ENV = "DRILLS_DEADLINE"  # the drill's budget end (Unix time), for its waits' stop-losses


def cpu_contention(cpu_seconds: float = 0.2) -> float:
    """How crowded the CPUs are now: the wall time a busy loop takes to get ``cpu_seconds`` of CPU, over that
    (1.0 on an idle machine; about 1.5 for a third process beside two CPU hogs on two cores). Between 1 and
    :data:`MAX_CONTENTION`."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.process_time() - cpu < cpu_seconds:
        pass
    return min(MAX_CONTENTION, max(1.0, (time.perf_counter() - wall) / cpu_seconds))


def discover() -> list[str]:
    """The drills' names, in file-name order."""
    return sorted(path.stem.removeprefix("drill_") for path in DRILLS_DIR.glob("drill_*.py"))


def budget_of(name: str) -> int:
    """The drill's ``BUDGET_SECONDS`` literal, read from its source (without importing it)."""
    tree = ast.parse((DRILLS_DIR / f"drill_{name}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "BUDGET_SECONDS":
                value = getattr(node, "value", None)
                if isinstance(value, ast.Constant) and isinstance(value.value, int | float):
                    return int(value.value)
    return DEFAULT_BUDGET


def run_child(name: str, result_path: Path) -> int:
    """In the drill's own process: run it and write its result as JSON."""
    started = time.monotonic()
    try:
        module = importlib.import_module(f"drills.drill_{name}")
        takes_cluster = bool(inspect.signature(module.run).parameters)
        drill = module.run(cluster) if takes_cluster else module.run()
        if not isinstance(drill, Drill):
            raise TypeError(f"run() returned {type(drill).__name__}, not a Drill")
    except BaseException as exc:  # the drill's failure is reported, not raised
        traceback.print_exc()
        drill = Drill(name)
        drill.expect(f"the drill ran to its end (it raised {type(exc).__name__}: {exc})", False)
    data = drill.as_dict()
    data["seconds"] = round(time.monotonic() - started, 1)
    result_path.write_text(json.dumps(data))
    return 0


def _cleanup(state_file: Path) -> None:
    """Remove what a killed drill's cluster left: its process groups, its PostgreSQL, its directory."""
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        return
    for group in state.get("process_groups", []):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group, signal.SIGKILL)
    pg_data = Path(state.get("pg_data", ""))
    if (pg_data / "postmaster.pid").exists():
        command = [state["pg_ctl"], "-D", str(pg_data), "-m", "immediate", "-w", "stop"]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, capture_output=True, timeout=30, check=False)  # noqa: S603
    directory = state.get("directory")
    if directory and Path(directory).name.startswith("embedadmin-drill-"):
        shutil.rmtree(directory, ignore_errors=True)
    state_file.unlink(missing_ok=True)


def run_one(name: str, timeout: float, contention: float = 1.0) -> Drill:
    """Run one drill in a process of its own, within ``timeout`` seconds; ``contention`` (the CPU contention measured
    before it) is handed to the drill (:func:`drills._cluster.contention`)."""
    scratch = Path(tempfile.mkdtemp(prefix="drills-run-"))
    result_path, state_file = scratch / "result.json", scratch / "state.json"
    env = {**os.environ, STATE_ENV: str(state_file), "PYTHONUNBUFFERED": "1", DEADLINE_ENV: str(time.time() + timeout)}
    env[CONTENTION_ENV] = f"{contention:.2f}"
    command = [sys.executable, "-m", "drills.run", "--child", name, "--result", str(result_path)]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)  # noqa: S603
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        print(f"!! drill {name} ran past its budget of {timeout:.0f} s: stopping it", flush=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=KILL_GRACE)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    except BaseException:  # Ctrl-C: stop the drill, clean up, and go
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=KILL_GRACE)
        _cleanup(state_file)
        raise
    seconds = time.monotonic() - started
    _cleanup(state_file)
    try:
        drill = Drill.from_dict(json.loads(result_path.read_text()))
    except (OSError, ValueError, KeyError):
        drill = Drill(name)
        if not timed_out:
            drill.expect(f"the drill's process reported a result (it exited with status {process.returncode})", False)
    if timed_out:
        drill.expect(f"the drill finished within its budget of {timeout:.0f} s", False)
    drill.figures["drill_seconds"] = round(seconds, 1)
    shutil.rmtree(scratch, ignore_errors=True)
    return drill


def _run_drills(names: list[str], total_budget: float, started: float) -> list[Drill]:
    """Each drill in turn, within what is left of ``total_budget`` (seconds since ``started``)."""
    results: list[Drill] = []
    for name in names:
        left = total_budget - (time.monotonic() - started)
        scale = cpu_contention()
        budget = min(budget_of(name) * scale, left)
        if budget < 10:
            drill = Drill(name)
            drill.expect(f"the drill ran (not run: the total budget of {total_budget:.0f} s was spent)", False)
        else:
            print(f"-- drill {name} (budget {budget:.0f} s: {budget_of(name)} s x contention {scale:.2f})", flush=True)
            drill = run_one(name, budget, scale)
            drill.figures["cpu_contention"] = round(scale, 2)
        drill.print()
        results.append(drill)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", metavar="NAME", help="run this drill only (repeatable)")
    parser.add_argument("--budget", type=float, default=TOTAL_BUDGET, help="seconds for all the drills together")
    parser.add_argument("--list", action="store_true", help="list the drills and their budgets")
    parser.add_argument("--json", type=Path, default=ROOT / "var" / "drills.json", help="where to write the results")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        return run_child(args.child, args.result)

    names = discover()
    if args.list:
        for name in names:
            print(f"{name:<24} budget {budget_of(name)} s")
        return 0
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"no such drill: {', '.join(unknown)} (drills: {', '.join(names)})")
        names = [name for name in names if name in args.only]

    planned = sum(budget_of(name) for name in names)
    contention = cpu_contention()
    total_budget = args.budget * contention
    print(
        f"drills: {', '.join(names)} (budgets add up to {planned} s; total budget {args.budget:.0f} s, "
        f"{total_budget:.0f} s at the CPU contention measured now, {contention:.2f})",
        flush=True,
    )
    started = time.monotonic()
    template = Path(tempfile.mkdtemp(prefix="drills-template-"))
    try:
        build_template(template)
        os.environ[TEMPLATE_ENV] = str(template)
        print(f"   template (PostgreSQL migrated, demo dataset) made in {time.monotonic() - started:.1f} s", flush=True)
    except (ClusterError, subprocess.SubprocessError, OSError) as exc:  # each cluster then makes its own
        print(f"   no template ({exc}); each drill initialises and migrates its own database", flush=True)
    try:
        results = _run_drills(names, total_budget, started)
    finally:
        os.environ.pop(TEMPLATE_ENV, None)
        shutil.rmtree(template, ignore_errors=True)

    seconds = time.monotonic() - started
    failed = [drill.name for drill in results if not drill.ok]
    report = {
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "seconds": round(seconds, 1),
        "cpu_contention": round(contention, 2),
        "ok": not failed,
        "drills": [drill.as_dict() for drill in results],
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    verdict = f"FAILED: {', '.join(failed)}" if failed else "all passed"
    print(f"drills: {len(results)} in {seconds:.0f} s, {verdict}; results in {args.json}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

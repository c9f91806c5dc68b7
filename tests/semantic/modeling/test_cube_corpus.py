"""The blind corpus: real public Cube model folders load as Cube 1.7.43 itself compiles them.

Each ``tests/semantic/fixtures/cube_corpus/<owner>__<name>/`` holds a third-party repository's model folder
(``model/``), where it came from (``SOURCE.json``) and what Cube answered on ``/v1/meta`` for it (``expected.json``,
written by ``tools/cube_peer_expected.py``). Nobody tuned the compiler to these folders: this test is the measure,
and many repositories fail it until the compiler supports what they use (see ``FIRST_CONTACT.md``).

- A repository Cube compiles loads through ``load_model`` with the same cubes and views, the same measures
  (type and aggregation), dimensions (type) and segments as Cube's ``/v1/meta``.
- A repository whose Jinja needs no Python, which the peer cannot render, is compared with what Cube compiles from
  its templates rendered for the recorded security context (``expected.json``'s ``derived``).
- A repository that needs Python executed (``model/globals.py``) is refused with a model error, never an empty model.
- A repository Cube itself refuses (duplicate members, broken references) is not counted.
- A repository this server does not load as Cube does is listed in ``KNOWN_GAPS`` with what it lacks and the exact
  model error it gives: it must be refused with that error (never an empty model, never one that differs from
  Cube's in silence); once it loads, the test fails until it is taken out of the list.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from embedadmin.semantic import ModelError, QueryContext, load_model, meta

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "cube_corpus"

# The SQL dialect a repository's member SQL is parsed in: its data source's (Cube's data source type, as
# SOURCE.json records it; semantic/modeling/dialects.py). A source the repository does not name compiles with DuckDB's.
DIALECTS = {
    "postgres": "postgres",
    "duckdb": "duckdb",
    "bigquery": "bigquery",
    "mysql": "mysql",
    "mongobi": "mysql",
    "snowflake": "snowflake",
    "trino": "trino",
    "sqlite": "sqlite",
}


# Repositories Cube 1.7.43 compiles that this server refuses: repository -> (what it lacks, the model error's text).
KNOWN_GAPS = {
    "honbit__cube1": (
        "Python model helpers executed at compile time (model/globals.py: dbt_models())",
        "model/cubes/shadow.yml.jinja:2: template error: 'dbt_models' is undefined (globals.py defines Python helpers",
    ),
    "shubu998__Suave": (
        "Python model helpers executed at compile time (model/globals.py: is_accessible_by_team())",
        "model/views/customers.yml:10: template error: 'is_accessible_by_team' is undefined "
        "(globals.py defines Python helpers",
    ),
    "synccomputingcode__sync-svc-cube-v2": (
        "Python model helpers executed at compile time (model/globals.py: tenant_resolver())",
        "model/cubes/active_project_insight.yml:8: template error: 'tenant_resolver' is undefined "
        "(globals.py defines Python helpers",
    ),
}


def load(repo: str, name: str) -> dict[str, Any]:
    return json.loads((CORPUS / repo / name).read_text())


def counted(repo: str) -> bool:
    expected = load(repo, "expected.json")
    if expected["status"] == "compiles":
        return True
    if expected["status"] == "needs_python_jinja":
        return expected["needs_python_jinja"]["python"] or expected["derived"]["status"] == "compiles"
    return False


REPOS = sorted(p.name for p in CORPUS.iterdir() if (p / "expected.json").exists() and counted(p.name))


def short(name: str) -> str:
    return name.split(".", 1)[1] if "." in name else name


def members_of(body: dict[str, Any]) -> dict[str, Any]:
    """A ``/v1/meta`` body reduced as ``tools/cube_peer_expected.py`` reduces Cube's."""
    return {
        item["name"]: {
            "type": item.get("type", "cube"),
            "measures": {short(m["name"]): {"type": m["type"], "aggType": m.get("aggType")} for m in item["measures"]},
            "dimensions": {short(d["name"]): d["type"] for d in item["dimensions"]},
            "segments": sorted(short(s["name"]) for s in item.get("segments", [])),
        }
        for item in body["cubes"]
    }


def differences(got: dict[str, Any], want: dict[str, Any]) -> list[str]:
    out = [f"missing {want[name]['type']} {name}" for name in want if name not in got]
    out += [f"unexpected {got[name]['type']} {name}" for name in got if name not in want]
    for name in (n for n in want if n in got):
        mine, cube = got[name], want[name]
        if mine["type"] != cube["type"]:
            out.append(f"{name}: a {mine['type']}, Cube has a {cube['type']}")
        for kind in ("measures", "dimensions"):
            for member in cube[kind]:
                if member not in mine[kind]:
                    out.append(f"{name}: missing {kind[:-1]} {member}")
                elif mine[kind][member] != cube[kind][member]:
                    out.append(f"{name}.{member}: {mine[kind][member]}, Cube has {cube[kind][member]}")
            out += [f"{name}: unexpected {kind[:-1]} {m}" for m in mine[kind] if m not in cube[kind]]
        if mine["segments"] != cube["segments"]:
            out.append(f"{name}: segments {mine['segments']}, Cube has {cube['segments']}")
    return out


@pytest.mark.parametrize("repo", REPOS)
def test_real_model_folder_loads_as_cube_compiles_it(repo: str) -> None:
    source = load(repo, "SOURCE.json")
    expected = load(repo, "expected.json")
    dialect = DIALECTS.get(source["data_source"], "duckdb")
    version = load_model(
        CORPUS / repo / "model", dialect=dialect, check_interval=0, security_context=expected["security_context"]
    )

    needs_python = expected["status"] == "needs_python_jinja" and expected["needs_python_jinja"]["python"]
    if repo in KNOWN_GAPS:
        feature, text = KNOWN_GAPS[repo]
        if version.model is not None:
            if needs_python:
                pytest.fail(f"{repo} loads now ({feature}): remove it from KNOWN_GAPS and compare it with Cube")
            found = loaded_differences(version.require(), expected)
            pytest.fail(
                f"{repo} loads now ({feature}) "
                + (f"with {len(found)} differences from Cube: " + "; ".join(found[:15]) if found else "equal to Cube")
                + ": remove it from KNOWN_GAPS"
            )
        assert isinstance(version.error, ModelError)
        assert text in version.error.message, f"{repo} ({feature}) is refused with another error"
        return
    assert not needs_python, f"{repo} needs Python executed: it belongs in KNOWN_GAPS"

    assert version.error is None, version.error.message
    found = loaded_differences(version.require(), expected)
    assert not found, f"{len(found)} differences from Cube: " + "; ".join(found[:15])


def loaded_differences(model: Any, expected: dict[str, Any]) -> list[str]:
    want = expected["cubes"] if expected["status"] == "compiles" else expected["derived"]["cubes"]
    got = members_of(meta(model, QueryContext(security_context=expected["security_context"])))
    return differences(got, want)

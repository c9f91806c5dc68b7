"""A deployment whose data source is a warehouse: its model compiles in that warehouse's SQL dialect and ``/v1/meta``
answers; a query on a warehouse this server does not query yet (Redshift, Oracle...) is a clear 400, and one on a
warehouse it queries but cannot reach (BigQuery without credentials) a 503, never a 500."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from embedadmin.accounts.services import deployment_configure
from embedadmin.core.errors import BadRequest
from embedadmin.semantic.errors import DataSourceError
from embedadmin.semantic.sources.registry import dialect_of, get_data_source
from tests.semantic.http_support import CoreApi, fresh_semantic_state  # noqa: F401

MODEL = """
cubes:
  - name: sales
    sql: SELECT * FROM `project.dataset.sales`
    dimensions:
      - name: id
        sql: "{CUBE}.`id`"
        type: number
        primary_key: true
      - name: region
        sql: "{CUBE}.`Region`"
        type: string
    measures:
      - name: tax
        sql: "{CUBE}.`taxA`"
        type: sum
"""


@pytest.mark.parametrize(
    ("url", "dialect"),
    [
        ("bigquery://my-project/dataset", "bigquery"),
        ("mysql://user:secret@db:3306/shop", "mysql"),
        ("snowflake://user@account/db/schema", "snowflake"),
        ("databricks-jdbc://host/default", "databricks"),
        ("postgresql://user@host/db", "postgres"),
        ("duckdb:///demo.duckdb", "duckdb"),
        ("", "duckdb"),
    ],
)
def test_a_data_source_url_names_its_sql_dialect(url: str, dialect: str) -> None:
    assert dialect_of(url) == dialect


def test_a_warehouse_source_is_not_opened() -> None:
    with pytest.raises(DataSourceError, match="oracle data sources are not queried by this server yet"):
        get_data_source("oracle://scott@db/orcl")
    with pytest.raises(DataSourceError, match="Unsupported data source URL"):
        get_data_source("cobol://mainframe")


@pytest.fixture
def bigquery(api, acme, tmp_path: Path, fresh_semantic_state) -> CoreApi:
    model = tmp_path / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "sales.yml").write_text(textwrap.dedent(MODEL).lstrip("\n"))
    deployment_configure(deployment=acme.deployment, model_dir=str(model), data_source_url="bigquery://my-project/ds")
    return CoreApi(client=api, cast=acme, dataset=tmp_path)


def test_meta_of_a_bigquery_model_answers(bigquery: CoreApi) -> None:
    response = bigquery.get("meta")

    assert response.status_code == 200
    cube = response.json()["cubes"][0]
    assert [m["name"] for m in cube["measures"]] == ["sales.tax"]
    assert [d["name"] for d in cube["dimensions"]] == ["sales.region"]  # the primary key is not public


REDSHIFT_MODEL = """
cubes:
  - name: sales
    sql_table: public.sales
    measures:
      - name: tax
        sql: "{CUBE}.\\"taxA\\""
        type: sum
"""


@pytest.fixture
def redshift(api, acme, tmp_path: Path, fresh_semantic_state) -> CoreApi:
    model = tmp_path / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "sales.yml").write_text(textwrap.dedent(REDSHIFT_MODEL).lstrip("\n"))
    url = "redshift://user:secret@cluster:5439/dev"
    deployment_configure(deployment=acme.deployment, model_dir=str(model), data_source_url=url)
    return CoreApi(client=api, cast=acme, dataset=tmp_path)


@pytest.mark.parametrize("endpoint", ["load", "cubesql"])
def test_a_query_on_a_warehouse_not_queried_yet_is_a_clear_400(redshift: CoreApi, endpoint: str) -> None:
    body = {"query": {"measures": ["sales.tax"]}} if endpoint == "load" else {"query": "SELECT MEASURE(tax) FROM sales"}

    response = redshift.post(endpoint, body)

    assert response.status_code == 400
    assert response.json()["error"].startswith(
        f"Deployment {redshift.cast.deployment.pk}'s data source is redshift: its model compiles and is "
        "validated in that dialect, but this server has no driver for it"
    )


def test_a_query_on_bigquery_without_credentials_is_a_503(bigquery: CoreApi, monkeypatch) -> None:
    monkeypatch.setenv("NO_GCE_CHECK", "True")  # no probe of a cloud metadata server from the tests
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)

    response = bigquery.post("load", {"query": {"measures": ["sales.tax"], "dimensions": ["sales.region"]}})

    assert response.status_code == 503
    assert response.json()["error"] == "Data source is unavailable: its credentials cannot be used"


def test_the_sql_of_a_query_is_written_in_the_warehouse_dialect(bigquery: CoreApi) -> None:
    response = bigquery.get("sql", {"query": {"measures": ["sales.tax"], "dimensions": ["sales.region"]}})

    assert response.status_code == 200
    sql = response.json()["sql"]["sql"][0]
    assert "FROM (SELECT * FROM `project.dataset.sales`) AS `sales`" in sql
    assert "SUM(`sales`.`taxA`)" in sql


def test_an_unknown_scheme_is_refused_when_configured(acme) -> None:
    with pytest.raises(
        BadRequest,
        match="data source URL must start with duckdb:/// or postgresql:// or name another source",
    ):
        deployment_configure(deployment=acme.deployment, data_source_url="cobol://mainframe")

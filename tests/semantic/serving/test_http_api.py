"""The Core Data API over HTTP: every endpoint, its parameters, routing, CORS and every error path, on the demo
model and a generated demo dataset; answers compared with SQL run directly on the DuckDB file."""

# ruff: noqa: F811  (the fixtures imported from http_support are redefined as test arguments, as pytest wants)

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from tests.semantic.http_support import DEMO_MODEL, core, demo_duckdb, duck_rows, fresh_semantic_state  # noqa: F401
from tests.tokens import sign_token

BY_STATUS = {"measures": ["orders.count", "orders.total_amount"], "dimensions": ["orders.status"]}
STATUS_SQL = "SELECT status, count(*), sum(amount) FROM orders GROUP BY status ORDER BY 2 DESC"


def expected_by_status(core) -> list[dict[str, str]]:
    return [
        {"orders.status": status, "orders.count": str(count), "orders.total_amount": format(Decimal(total), "f")}
        for status, count, total in duck_rows(core.dataset, STATUS_SQL)
    ]


# --- /v1/load -----------------------------------------------------------------------------------------


def test_get_load_with_a_json_query_string_answers_the_regular_envelope(core):
    # when
    response = core.get("load", {"query": BY_STATUS})

    # then
    body = response.json()
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert body["data"] == expected_by_status(core)
    assert body["query"] == {
        **BY_STATUS,
        "timeDimensions": [],
        "filters": [],
        "limit": 10000,
        "rowLimit": 10000,
        "timezone": "UTC",
    }
    assert set(body) == {
        "query",
        "data",
        "lastRefreshTime",
        "annotation",
        "dataSource",
        "dbType",
        "external",
        "slowQuery",
    }
    assert body["dbType"] == "duckdb"
    assert body["annotation"]["measures"]["orders.count"]["type"] == "number"


@pytest.mark.parametrize("encode", [lambda q: q, json.dumps], ids=["object", "json-string"])
def test_post_load_with_query_type_multi_answers_the_multi_envelope(core, encode):
    # when
    body = core.load(encode(BY_STATUS), queryType="multi")

    # then
    assert body["queryType"] == "regularQuery"
    assert body["slowQuery"] is False
    assert [r["data"] for r in body["results"]] == [expected_by_status(core)]
    assert body["pivotQuery"]["queryType"] == "regularQuery"
    assert body["pivotQuery"]["measures"] == BY_STATUS["measures"]


def test_get_load_with_query_type_multi_in_the_query_string(core):
    response = core.get("load", {"query": BY_STATUS, "queryType": "multi"})

    assert response.status_code == 200
    assert response.json()["results"][0]["data"] == expected_by_status(core)


def test_subscribe_answers_as_load(core):
    response = core.get("subscribe", {"query": BY_STATUS, "queryType": "multi"})

    assert response.status_code == 200
    assert response.json()["results"][0]["data"] == expected_by_status(core)


def test_an_array_of_queries_is_a_blending_query(core):
    # given
    orders = {"measures": ["orders.count"], "timeDimensions": [_year("orders.created_at")]}
    users = {"measures": ["users.count"], "timeDimensions": [_year("users.created_at")]}

    # when
    body = core.load([orders, users], queryType="multi")

    # then
    expected_orders = duck_rows(core.dataset, "SELECT count(*) FROM orders WHERE year(created_at) = 2024")[0][0]
    expected_users = duck_rows(core.dataset, "SELECT count(*) FROM users WHERE year(created_at) = 2024")[0][0]
    assert body["queryType"] == "blendingQuery"
    assert body["results"][0]["data"] == [
        {
            "orders.created_at.year": "2024-01-01T00:00:00.000",
            "orders.created_at": "2024-01-01T00:00:00.000",
            "orders.count": str(expected_orders),
            "time.year": "2024-01-01T00:00:00.000",
        }
    ]
    assert body["results"][1]["data"][0]["users.count"] == str(expected_users)


def _year(dimension: str) -> dict:
    return {"dimension": dimension, "granularity": "year", "dateRange": ["2024-01-01", "2024-12-31"]}


def test_a_blending_query_without_query_type_multi_is_refused(core):
    response = core.post("load", {"query": [BY_STATUS, BY_STATUS]})

    assert response.status_code == 400
    assert response.json() == {"error": "Data blending query without granularity is not supported"}


def test_total_counts_every_row_before_the_limit(core):
    # when
    body = core.load({"dimensions": ["users.country"], "limit": 2, "total": True})

    # then
    countries = duck_rows(core.dataset, "SELECT count(DISTINCT country) FROM users")[0][0]
    assert len(body["data"]) == 2
    assert body["total"] == countries


def test_a_repeated_query_is_served_from_the_result_cache(core):
    # given
    first = core.load(BY_STATUS)

    # when
    second = core.load(BY_STATUS)
    renewed = core.load({**BY_STATUS, "renewQuery": True})

    # then: the same rows, read at the same moment (Cube's lastRefreshTime); renewQuery revalidates but the
    # result is still fresh (refresh_key every 1 hour), so it is the same too
    assert second["data"] == first["data"]
    assert second["lastRefreshTime"] == first["lastRefreshTime"]
    assert renewed["lastRefreshTime"] == first["lastRefreshTime"]


# --- /v1/meta, /v1/sql, /v1/dry-run ---------------------------------------------------------------------


def test_meta_lists_the_cubes_and_views_of_the_model(core):
    # when
    response = core.get("meta")

    # then
    body = response.json()
    assert response.status_code == 200
    assert [(c["name"], c["type"]) for c in body["cubes"]] == [
        ("line_items", "cube"),
        ("orders", "cube"),
        ("products", "cube"),
        ("users", "cube"),
        ("product_catalog", "view"),
        ("sales", "view"),
    ]
    assert isinstance(body["compilerId"], str)
    assert "joins" not in body["cubes"][0]


def test_meta_extended_adds_joins_and_only_views_keeps_the_views(core):
    # when
    extended = core.get("meta", {"extended": ""}).json()
    views = core.get("meta", {"onlyViews": "true"}).json()

    # then
    orders = next(c for c in extended["cubes"] if c["name"] == "orders")
    assert [(j["name"], j["relationship"]) for j in orders["joins"]] == [
        ("users", "belongsTo"),
        ("line_items", "hasMany"),
    ]
    assert [c["name"] for c in views["cubes"]] == ["product_catalog", "sales"]


def test_sql_answers_the_compiled_statement_and_its_parameters(core):
    # when
    query = {**BY_STATUS, "filters": [{"member": "orders.status", "operator": "equals", "values": ["shipped"]}]}
    response = core.post("sql", {"query": query})

    # then
    body = response.json()["sql"]
    sql, params = body["sql"]
    assert response.status_code == 200
    assert params == ["shipped"]
    assert body["order"] == {"orders.count": "desc"}
    assert duck_rows(core.dataset, sql, params) == duck_rows(
        core.dataset, "SELECT status, count(*), sum(amount) FROM orders WHERE status = 'shipped' GROUP BY status"
    )


def test_sql_in_another_format_is_refused(core):
    response = core.get("sql", {"query": BY_STATUS, "format": "sql"})

    assert response.status_code == 400
    assert response.json() == {"error": 'Unsupported format "sql": only "rest" queries are compiled here'}


def test_dry_run_answers_the_normalized_query_without_running_it(core):
    # when
    response = core.get("dry-run", {"query": BY_STATUS})

    # then
    body = response.json()
    assert response.status_code == 200
    assert body["queryType"] == "regularQuery"
    assert body["queryOrder"] == [{"orders.count": "desc"}]
    assert body["normalizedQueries"][0]["measures"] == BY_STATUS["measures"]
    assert body["transformedQueries"][0]["sortedDimensions"] == ["orders.status"]


# --- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "Query param is required"),
        ({"query": "undefined"}, 400, "Query param is required"),
        ({"query": "{not json"}, 400, "Unable to decode query param as JSON, error: "),
        ({"query": {"measures": ["orders.nope"]}}, 400, "'nope' not found for path 'orders.nope'"),
        ({"query": {"measures": ["orders.count"], "limit": 50001}}, 400, "Error: The query limit has been exceeded."),
        ({"query": {"measures": ["orders.count"], "limit": "10"}}, 400, 'Invalid query format: "limit"'),
        ({"query": BY_STATUS, "cache": "sometimes"}, 400, 'Invalid query format: "cache" must be one of'),
        ({"query": {**BY_STATUS, "cache": "sometimes"}}, 400, 'Invalid query format: "cache" must be one of'),
        ({"query": {"measures": ["orders.count"], "timezone": "Mars/Olympus"}}, 400, '"timezone" must be'),
    ],
    ids=[
        "missing",
        "undefined",
        "bad-json",
        "unknown-member",
        "over-limit",
        "string-limit",
        "bad-cache",
        "bad-cache-in-query",
        "bad-timezone",
    ],
)
def test_bad_load_requests_answer_a_json_error(core, params, status, message):
    # when
    response = core.get("load", params)

    # then
    body = response.json()
    assert response.status_code == status
    assert list(body) == ["error"]
    assert body["error"].startswith(message), body


def test_unknown_member_names_the_member(core):
    response = core.get("load", {"query": {"measures": ["orders.nope"]}})

    assert response.status_code == 400
    assert "orders.nope" in response.json()["error"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{not json", "Invalid JSON body: "),
        ("[1, 2]", "The body must be a JSON object"),
        ('"a string"', "The body must be a JSON object"),
        ({"query": BY_STATUS, "queryType": 5}, '"queryType" must be a string'),
        ({"query": {"measures": ["orders.count\u0000"]}}, "The body must not contain NUL characters"),
    ],
    ids=["unparsable", "array", "string", "query-type", "nul"],
)
def test_bad_post_bodies_are_400(core, body, message):
    response = core.post("load", body)

    assert response.status_code == 400
    assert response.json()["error"].startswith(message)


@pytest.mark.parametrize("endpoint", ["load", "sql", "dry-run", "meta"])
def test_a_wrong_method_is_405_json(core, endpoint):
    response = core.client.put(f"{core.base}/{endpoint}", HTTP_AUTHORIZATION=core.token())

    assert response.status_code == 405
    assert response.json() == {"error": "Method not allowed"}
    assert response["Access-Control-Allow-Origin"] == "*"


def test_post_meta_is_405(core):
    response = core.post("meta", {})

    assert response.status_code == 405
    assert response["Allow"] == "GET, OPTIONS"


@pytest.mark.parametrize("path", ["/cubejs-api/v1/nothing", "/cubejs-api/v2/load", "/d/1/cubejs-api/v1/nope"])
def test_unknown_paths_under_the_api_are_json_404(core, path):
    response = core.client.get(path)

    assert response.status_code == 404
    assert response.json() == {"error": "Not found"}


def test_a_data_source_failure_is_500_with_a_safe_message(core, tmp_path):
    # given: the data source file is gone
    deployment_configure(deployment=core.cast.deployment, data_source_url=duckdb_url(tmp_path / "gone.duckdb"))

    # when
    response = core.get("load", {"query": BY_STATUS})

    # then
    assert response.status_code == 500
    assert response.json() == {"error": "Data source file is not available"}


def test_a_failing_query_is_500_with_the_database_message(core, tmp_path):
    # given: a model whose table does not exist in the data
    model = tmp_path / "model"
    (model / "cubes").mkdir(parents=True)
    (model / "cubes" / "ghosts.yml").write_text(
        "cubes:\n  - name: ghosts\n    sql_table: no_such_table\n"
        "    measures:\n      - name: count\n        type: count\n"
    )
    deployment_configure(deployment=core.cast.deployment, model_dir=str(model))

    # when
    response = core.get("load", {"query": {"measures": ["ghosts.count"]}})

    # then
    assert response.status_code == 500
    assert response.json()["error"].startswith("Catalog Error: Table with name no_such_table does not exist!")


def test_a_deployment_without_a_model_is_400(core, make_account):
    # given
    bare = make_account("bare")

    # when
    response = core.client.get(
        f"/d/{bare.deployment.pk}/cubejs-api/v1/meta",
        HTTP_AUTHORIZATION=sign_token(bare.created.deployment_api_secret, groups=["admin"]),
    )

    # then
    assert response.status_code == 400
    assert response.json() == {
        "error": f"Deployment {bare.deployment.pk} has no data model: set one with configure_deployment"
    }


def test_an_unknown_deployment_is_404(core):
    response = core.client.get("/d/999999/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())

    assert response.status_code == 404
    assert response.json() == {"error": "Deployment 999999 not found"}


# --- routing without a prefix ---------------------------------------------------------------------------


def test_without_a_prefix_the_only_deployment_with_a_model_answers(core, make_account):
    # given: another account whose deployment has no model
    make_account("bare")

    # when
    response = core.client.get("/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())

    # then
    assert response.status_code == 200
    assert len(response.json()["cubes"]) == 6


def test_without_a_prefix_two_deployments_with_models_need_the_default_setting(core, make_account, settings):
    # given
    other = make_account("other")
    deployment_configure(deployment=other.deployment, model_dir=str(DEMO_MODEL))

    # when
    ambiguous = core.client.get("/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())
    settings.SEMANTIC = {**settings.SEMANTIC, "DEFAULT_DEPLOYMENT_ID": core.cast.deployment.pk}
    routed = core.client.get("/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())
    settings.SEMANTIC = {**settings.SEMANTIC, "DEFAULT_DEPLOYMENT_ID": 999999}
    missing = core.client.get("/cubejs-api/v1/meta", HTTP_AUTHORIZATION=core.token())

    # then
    assert ambiguous.status_code == 404
    assert ambiguous.json() == {
        "error": "No deployment is named by this URL: use /d/{deploymentId}/cubejs-api/v1/..., "
        "or set DEFAULT_DEPLOYMENT_ID"
    }
    assert routed.status_code == 200
    assert missing.status_code == 404
    assert missing.json() == {"error": "The default deployment 999999 (DEFAULT_DEPLOYMENT_ID) does not exist"}


# --- CORS -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["load", "sql", "dry-run", "meta"])
def test_a_preflight_allows_the_headers_cube_client_sends(core, endpoint):
    # when
    response = core.client.options(
        f"{core.base}/{endpoint}",
        HTTP_ORIGIN="https://app.example.com",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization,content-type,x-request-id",
    )

    # then
    assert response.status_code == 204
    assert response["Access-Control-Allow-Origin"] == "*"
    assert response["Access-Control-Allow-Headers"] == "authorization,content-type,x-request-id"
    methods = "GET, OPTIONS" if endpoint == "meta" else "GET, POST, OPTIONS"
    assert response["Access-Control-Allow-Methods"] == methods


def test_a_preflight_without_or_with_odd_requested_headers_allows_the_standard_ones(core):
    plain = core.client.options(f"{core.base}/load")
    odd = core.client.options(f"{core.base}/load", HTTP_ACCESS_CONTROL_REQUEST_HEADERS="x\ty")

    expected = "Authorization, Content-Type, X-Request-Id, X-Cube-Authorization, Traceparent"
    assert plain["Access-Control-Allow-Headers"] == expected
    assert odd["Access-Control-Allow-Headers"] == expected


def test_answers_and_errors_carry_the_cors_origin(core):
    ok = core.get("load", {"query": BY_STATUS}, HTTP_ORIGIN="https://app.example.com")
    refused = core.get("load", {"query": BY_STATUS}, token=None, HTTP_ORIGIN="https://app.example.com")
    bad = core.get("load", {}, HTTP_ORIGIN="https://app.example.com")

    assert [r.status_code for r in (ok, refused, bad)] == [200, 403, 400]
    assert [r["Access-Control-Allow-Origin"] for r in (ok, refused, bad)] == ["*", "*", "*"]


# --- /v1/cubesql ----------------------------------------------------------------------------------------


def _json_lines(response) -> list[dict]:
    return [json.loads(line) for line in response.content.decode().splitlines()]


def test_cubesql_answers_json_lines_with_the_rows_of_the_database(core):
    # when
    response = core.post(
        "cubesql", {"query": "SELECT status, MEASURE(count) FROM orders GROUP BY 1 ORDER BY 1", "cache": "no-cache"}
    )

    # then
    lines = _json_lines(response)
    expected = duck_rows(core.dataset, "SELECT status, count(*) FROM orders GROUP BY 1 ORDER BY 1")
    assert response.status_code == 200
    assert [c["name"] for c in lines[0]["schema"]] == ["status", "measure(orders.count)"]
    assert lines[1:] == [{"data": [[status, str(count)] for status, count in expected]}]


def test_cubesql_post_processes_a_subquery_and_answers_json_lines(core):
    # when
    response = core.post(
        "cubesql",
        {
            "query": "SELECT 100.0 * SUM(CASE WHEN s = 'completed' THEN n END) / SUM(n) AS share "
            "FROM (SELECT status AS s, MEASURE(count) AS n FROM orders GROUP BY 1)",
            "cache": "no-cache",
        },
    )

    # then
    lines = _json_lines(response)
    share = "SELECT 100.0 * count(*) FILTER (WHERE status = 'completed') / count(*) FROM orders"
    [[expected]] = duck_rows(core.dataset, share)
    assert response.status_code == 200
    assert lines[0]["schema"] == [{"name": "share", "column_type": "Double"}]
    assert round(float(lines[1]["data"][0][0]), 9) == round(float(expected), 9)


def test_a_post_processing_statement_that_fails_while_computing_is_a_json_error_before_any_line(core):
    response = core.post("cubesql", {"query": "SELECT SUM(n) / 0 FROM (SELECT MEASURE(count) AS n FROM orders)"})

    assert response.status_code == 400
    assert response.json() == {"error": "division by zero"}


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({}, 400, "Query param is required"),
        ({"query": "   "}, 400, "Query param is required"),
        ({"query": "SELECT 1", "throwContinueWait": "yes"}, 400, '"throwContinueWait" must be a boolean'),
        ({"query": "SELECT * FROM pg_catalog.pg_tables"}, 400, ""),
    ],
    ids=["missing", "blank", "throw-flag", "not-a-cube"],
)
def test_bad_cubesql_requests_are_json_errors(core, body, status, message):
    response = core.post("cubesql", body)

    assert response.status_code == status
    assert list(response.json()) == ["error"]
    assert response.json()["error"].startswith(message)


def test_cubesql_is_post_only(core):
    response = core.get("cubesql", {"query": "SELECT MEASURE(count) FROM orders"})

    assert response.status_code == 405

"""The warehouse sources (Trino, Snowflake, BigQuery, Databricks) against their official drivers.

No warehouse runs here: each test replaces only the outermost call into the network, the driver's ``connect`` (or
BigQuery's ``Client``), with a recorder whose cursor does what the service would (returns rows, blocks until
cancelled, fails with the driver's own exception classes). Everything between the URL and that call is the real
module and the real driver package: URL parsing, connect arguments, session settings issued, parameters, cancel,
timeouts and the mapping of the drivers' errors.
"""

from __future__ import annotations

import base64
import json
import threading
from decimal import Decimal
from typing import Any

# The drivers come from requirements-warehouses.txt, which `make test` installs: a missing one fails here, loudly.
import databricks.sql as databricks_sql
import google.cloud.bigquery as google_bigquery
import pytest
import snowflake.connector as snowflake_connector
import trino as trino_driver

from embedadmin.semantic.errors import DataSourceError, QueryTimeout
from embedadmin.semantic.sources import bigquery, databricks, snowflake, trino, warehouses
from embedadmin.semantic.sources.base import CancelScope, DataSourceUnavailable, QueryCancelled


class Service:
    """What a fake cursor does with a statement: ``answer`` it (columns, rows), ``fail`` with an exception, or
    ``block`` until the driver's cancel is called (then fail with ``on_cancel``)."""

    def __init__(self, *, answer: tuple[list[Any], list[tuple[Any, ...]]] = ([], []), fail: Exception | None = None):
        self.answer = answer
        self.fail = fail
        self.block = False
        self.on_cancel: Exception | None = None
        self.cancelled = threading.Event()
        self.started = threading.Event()
        self.statements: list[tuple[str, Any]] = []
        self.connects: list[dict[str, Any]] = []

    def run(self, sql: str, params: Any) -> None:
        self.statements.append((sql, params))
        if sql.startswith(("ALTER SESSION ", "SET ")):
            return  # a session setting: the statement that follows is the one answered, blocked or failed
        self.started.set()
        if self.block:
            assert self.cancelled.wait(30), "the statement was never cancelled"
            assert self.on_cancel is not None
            raise self.on_cancel
        if self.fail is not None:
            raise self.fail


class FakeCursor:
    def __init__(self, service: Service) -> None:
        self.service = service
        self.description: list[Any] | None = None
        self.closed = False

    def execute(self, sql: str, params: Any = None) -> FakeCursor:
        self.service.run(sql, params)
        self.description = self.service.answer[0]
        return self

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.service.answer[1])

    def cancel(self) -> None:
        self.service.cancelled.set()

    def close(self) -> None:
        self.closed = True


class FakeConnection:
    def __init__(self, service: Service, cursor_type: type = FakeCursor) -> None:
        self.service = service
        self.cursor_type = cursor_type
        self.closed = False

    def cursor(self) -> Any:
        return self.cursor_type(self.service)

    def close(self) -> None:
        self.closed = True


def recorder(service: Service, cursor_type: type = FakeCursor) -> Any:
    def connect(**kwargs: Any) -> FakeConnection:
        service.connects.append(kwargs)
        return FakeConnection(service, cursor_type)

    return connect


def cancelled_while_running(source: Any, service: Service, sql: str = "SELECT 1") -> Exception:
    """Run a statement that blocks, cancel its scope from another thread, and return what ``execute`` raised."""
    scope = CancelScope()
    raised: list[Exception] = []

    def run() -> None:
        try:
            source.execute(sql, [], timeout_s=60, cancel=scope)
        except Exception as exc:
            raised.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert service.started.wait(30)
    scope.cancel()
    thread.join(30)
    assert not thread.is_alive()
    return raised[0]


# -- Trino ---------------------------------------------------------------------------------------------------------


def test_trino_url_becomes_the_drivers_connect_arguments() -> None:
    args = trino.connect_arguments(
        "trino://alice:s%40cret@trino.example.com:8443/hive/sales?verify=false&roles=hive:analyst", trino_driver
    )

    auth = args.pop("auth")
    assert isinstance(auth, trino_driver.auth.BasicAuthentication)
    assert (auth._username, auth._password) == ("alice", "s@cret")
    assert args == {
        "host": "trino.example.com",
        "port": 8443,
        "user": "alice",
        "http_scheme": "https",
        "source": "embedadmin",
        "timezone": "UTC",
        "request_timeout": 30.0,
        "session_properties": {},
        "catalog": "hive",
        "schema": "sales",
        "verify": False,
        "roles": {"hive": "analyst"},
    }


def test_trino_without_credentials_speaks_http_and_a_token_is_a_bearer() -> None:
    plain = trino.connect_arguments("trino://etl@localhost/memory", trino_driver)
    token = trino.connect_arguments("trino://etl@trino.example.com/iceberg?access_token=abc.def", trino_driver)

    assert (plain["http_scheme"], plain["port"], "auth" in plain) == ("http", 8080, False)
    assert (token["http_scheme"], token["port"]) == ("https", 443)
    assert isinstance(token["auth"], trino_driver.auth.JWTAuthentication)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("trino://localhost/memory", "names no user"),
        ("trino://u@localhost/a/b/c", "path is /catalog or /catalog/schema"),
        ("trino://u@localhost/a?catalog=x", "Unsupported Trino URL option: catalog"),
        ("trino://u:p@localhost/a?access_token=t", "both a password and an access_token"),
        ("trino://u@localhost/a?http_scheme=ftp", "http_scheme must be http or https"),
    ],
)
def test_a_bad_trino_url_is_refused_without_its_secrets(url: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message) as raised:
        trino.connect_arguments(url, trino_driver)
    assert "p@" not in str(raised.value)


def test_trino_runs_a_statement_in_utc_with_its_timeout_as_a_session_property(monkeypatch) -> None:
    service = Service(
        answer=(
            [("status", "varchar(9)", None), ("n", "bigint", None), ("t", "timestamp(3) with time zone", None)],
            [("shipped", 2, None)],
        )
    )
    monkeypatch.setattr(trino_driver.dbapi, "connect", recorder(service))
    source = trino.open_source("trino://etl@localhost:8080/memory/shop")

    result = source.execute(
        "SELECT status, count(*) FROM orders WHERE amount > ? GROUP BY 1", [Decimal("5")], timeout_s=2.5
    )

    assert service.statements == [("SELECT status, count(*) FROM orders WHERE amount > ? GROUP BY 1", [Decimal("5")])]
    (connect,) = service.connects
    assert connect["session_properties"] == {"query_max_run_time": "3s"}
    assert connect["timezone"] == "UTC"
    assert result.columns == ["status", "n", "t"]
    assert result.types == ["string", "integer", "timestamptz"]
    assert result.rows == [("shipped", 2, None)]


def test_trino_cancel_calls_the_drivers_cancel(monkeypatch) -> None:
    service = Service()
    service.block = True
    service.on_cancel = trino_driver.exceptions.TrinoUserError(
        {"errorName": "USER_CANCELED", "errorType": "USER_ERROR", "message": "Query was canceled"}
    )
    monkeypatch.setattr(trino_driver.dbapi, "connect", recorder(service))
    source = trino.open_source("trino://etl@localhost/memory")

    raised = cancelled_while_running(source, service)

    assert isinstance(raised, QueryCancelled)
    assert service.cancelled.is_set()


def test_trino_timeout_cancels_the_statement(monkeypatch) -> None:
    service = Service()
    service.block = True
    service.on_cancel = trino_driver.exceptions.TrinoUserError(
        {"errorName": "USER_CANCELED", "errorType": "USER_ERROR", "message": "Query was canceled"}
    )
    monkeypatch.setattr(trino_driver.dbapi, "connect", recorder(service))
    source = trino.open_source("trino://etl@localhost/memory")

    with pytest.raises(QueryTimeout):
        source.execute("SELECT 1", [], timeout_s=0.2)
    assert service.cancelled.is_set()


@pytest.mark.parametrize(
    ("error", "expected", "message"),
    [
        (
            trino_driver.exceptions.TrinoUserError(
                {
                    "errorName": "COLUMN_NOT_FOUND",
                    "errorType": "USER_ERROR",
                    "message": "line 1:8: Column 'x' cannot be resolved",
                }
            ),
            DataSourceError,
            "line 1:8: Column 'x' cannot be resolved",
        ),
        (
            trino_driver.exceptions.TrinoUserError(
                {
                    "errorName": "EXCEEDED_TIME_LIMIT",
                    "errorType": "INSUFFICIENT_RESOURCES",
                    "message": "Query exceeded maximum time limit of 3.00s",
                }
            ),
            QueryTimeout,
            "Query timeout",
        ),
        (
            trino_driver.exceptions.TrinoExternalError(
                {"errorName": "HIVE_METASTORE_ERROR", "errorType": "EXTERNAL", "message": "metastore at 10.0.0.3 down"}
            ),
            DataSourceError,
            "Trino could not run the query (HIVE_METASTORE_ERROR)",
        ),
        (
            trino_driver.exceptions.HttpError("error 401: b'Unauthorized'"),
            DataSourceUnavailable,
            "Data source is unavailable",
        ),
        (
            trino_driver.exceptions.TrinoConnectionError("failed to connect to trino.example.com"),
            DataSourceUnavailable,
            "Data source is unavailable",
        ),
        (ConnectionRefusedError(111, "Connection refused"), DataSourceUnavailable, "Data source is unavailable"),
    ],
)
def test_trino_errors_are_mapped_to_safe_messages(monkeypatch, error: Exception, expected: type, message: str) -> None:
    monkeypatch.setattr(trino_driver.dbapi, "connect", recorder(Service(fail=error)))
    source = trino.open_source("trino://etl:pw@localhost/memory?http_scheme=https")

    with pytest.raises(expected) as raised:
        source.execute("SELECT x", [], timeout_s=5)

    assert type(raised.value) is expected
    assert str(raised.value).startswith(message)


# -- Snowflake -----------------------------------------------------------------------------------------------------


class SnowflakeCursor(FakeCursor):
    def execute_async(self, sql: str, params: Any = None) -> dict[str, str]:
        self._pending = (sql, params)
        self.service.statements.append(("submit", sql, params))  # type: ignore[arg-type]
        return {"queryId": "01b2-query"}

    def get_results_from_sfqid(self, query_id: str) -> None:
        assert query_id == "01b2-query"
        sql, params = self._pending
        self.service.run(sql, params)
        self.description = self.service.answer[0]

    def abort_query(self, query_id: str) -> bool:
        assert query_id == "01b2-query"
        self.service.cancelled.set()
        return True


def snowflake_error(errno: int, message: str) -> Exception:
    return snowflake_connector.errors.ProgrammingError(msg=message, errno=errno)


def test_snowflake_url_becomes_the_drivers_connect_arguments() -> None:
    args = snowflake.connect_arguments("snowflake://analyst:pa%2Fss@myorg-acct/SHOP/PUBLIC?warehouse=BI_WH&role=READER")

    assert args == {
        "account": "myorg-acct",
        "user": "analyst",
        "password": "pa/ss",
        "authenticator": "snowflake",
        "application": "embedadmin",
        "paramstyle": "numeric",
        "timezone": "UTC",
        "login_timeout": 30,
        "session_parameters": {
            "TIMEZONE": "UTC",
            "WEEK_START": 1,
            "TIMESTAMP_TYPE_MAPPING": "TIMESTAMP_NTZ",
            "QUERY_TAG": "embedadmin",
        },
        "database": "SHOP",
        "schema": "PUBLIC",
        "warehouse": "BI_WH",
        "role": "READER",
    }


def test_snowflake_key_pair_authentication() -> None:
    args = snowflake.connect_arguments(
        "snowflake://svc@acct/db?authenticator=snowflake_jwt&private_key_file=/keys/rsa.p8&private_key_password=k"
    )

    assert (args["authenticator"], args["private_key_file"], args["private_key_password"]) == (
        "snowflake_jwt",
        "/keys/rsa.p8",
        "k",
    )
    assert "password" not in args


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("snowflake://u@acct/db", "has no password"),
        ("snowflake://acct/db", "names no user"),
        ("snowflake://u:p@acct/db?authenticator=externalbrowser", "authenticator must be one of"),
        ("snowflake://u@acct/db?authenticator=oauth", "needs the token option"),
        ("snowflake://u:p@acct/db?schema=x", "Unsupported Snowflake URL option: schema"),
    ],
)
def test_a_bad_snowflake_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        snowflake.connect_arguments(url)


def test_snowflake_sets_the_statement_timeout_once_per_session_and_binds_numeric_parameters(monkeypatch) -> None:
    service = Service(
        answer=(
            [
                ("STATUS", 2, None, None, None, None, True),
                ("N", 0, None, None, 18, 0, True),
                ("AMOUNT", 0, None, None, 18, 2, True),
            ],
            [("shipped", 2, Decimal("7.50"))],
        )
    )
    monkeypatch.setattr(snowflake_connector, "connect", recorder(service, SnowflakeCursor))
    source = snowflake.open_source("snowflake://u:p@acct/db/sch?warehouse=wh")

    first = source.execute("SELECT status FROM orders WHERE status = :1", ["shipped"], timeout_s=30)
    source.execute("SELECT status FROM orders WHERE status = :1", ["shipped"], timeout_s=30)
    source.execute("SELECT 1", [], timeout_s=10)

    assert len(service.connects) == 1  # the session is kept between statements
    assert [s for s in service.statements if s[0] != "submit"] == [
        ("ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 30", None),
        ("SELECT status FROM orders WHERE status = :1", ["shipped"]),
        ("SELECT status FROM orders WHERE status = :1", ["shipped"]),
        ("ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 10", None),
        ("SELECT 1", []),
    ]
    assert first.types == ["string", "integer", "decimal"]
    assert first.rows == [("shipped", 2, Decimal("7.50"))]


def test_snowflake_cancel_aborts_the_query_by_its_id(monkeypatch) -> None:
    service = Service()
    service.block = True
    service.on_cancel = snowflake_error(604, "SQL execution canceled")
    monkeypatch.setattr(snowflake_connector, "connect", recorder(service, SnowflakeCursor))
    source = snowflake.open_source("snowflake://u:p@acct/db")

    raised = cancelled_while_running(source, service)

    assert isinstance(raised, QueryCancelled)
    assert service.cancelled.is_set()


@pytest.mark.parametrize(
    ("error", "expected", "message"),
    [
        (
            snowflake_error(2003, "SQL compilation error:\nObject 'ORDERS' does not exist or not authorized."),
            DataSourceError,
            "SQL compilation error:",
        ),
        (
            snowflake_error(
                630, "Statement reached its statement or warehouse timeout of 30 second(s) and was canceled."
            ),
            QueryTimeout,
            "Query timeout",
        ),
        (
            snowflake_connector.errors.OperationalError(msg="HTTP 503: b'unavailable'", errno=250003),
            DataSourceUnavailable,
            "Data source is unavailable",
        ),
    ],
)
def test_snowflake_errors_are_mapped_to_safe_messages(
    monkeypatch, error: Exception, expected: type, message: str
) -> None:
    monkeypatch.setattr(snowflake_connector, "connect", recorder(Service(fail=error), SnowflakeCursor))
    source = snowflake.open_source("snowflake://u:secret@acct/db")

    with pytest.raises(expected) as raised:
        source.execute("SELECT x", [], timeout_s=30)

    assert type(raised.value) is expected
    assert str(raised.value).startswith(message)
    assert "secret" not in str(raised.value)


def test_snowflake_login_failure_is_unavailable(monkeypatch) -> None:
    def refuse(**kwargs: Any) -> Any:
        raise snowflake_connector.errors.DatabaseError(
            msg="Incorrect username or password was specified.", errno=390100
        )

    monkeypatch.setattr(snowflake_connector, "connect", refuse)
    source = snowflake.open_source("snowflake://u:secret@acct/db")

    with pytest.raises(DataSourceUnavailable, match=r"^Data source is unavailable$"):
        source.execute("SELECT 1", [], timeout_s=30)


# -- BigQuery ------------------------------------------------------------------------------------------------------


class FakeServiceAccount:
    class Credentials:
        @staticmethod
        def from_service_account_info(info: dict[str, Any], scopes: Any) -> tuple[str, Any]:
            return ("credentials-for", info["client_email"])

        @staticmethod
        def from_service_account_file(path: str, scopes: Any) -> tuple[str, Any]:
            raise FileNotFoundError(path)


def test_bigquery_url_becomes_the_clients_settings() -> None:
    key = base64.b64encode(json.dumps({"client_email": "bi@proj.iam"}).encode()).decode()

    settings = bigquery.settings_for(
        f"bigquery://my-proj/shop?location=EU&credentials_base64={key}&maximum_bytes_billed=1000000000",
        FakeServiceAccount,
    )

    assert settings == {
        "client": {"project": "my-proj", "credentials": ("credentials-for", "bi@proj.iam"), "location": "EU"},
        "dataset": "my-proj.shop",
        "request_timeout": 30.0,
        "maximum_bytes_billed": 1000000000,
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("bigquery://my-proj/shop?credentials_file=/nope.json", "key cannot be read"),
        ("bigquery://my-proj/shop?credentials_base64=bm90IGpzb24=", "key cannot be read"),
        ("bigquery://user:pw@my-proj/shop", "carries no user or password"),
        ("bigquery://my-proj/a/b", "path is /dataset"),
    ],
)
def test_a_bad_bigquery_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        bigquery.settings_for(url, FakeServiceAccount)


def test_bigquery_binds_named_parameters_typed_from_their_values() -> None:
    source = bigquery.BigQuerySource(bigquery.settings_for("bigquery://p/shop", FakeServiceAccount), google_bigquery)

    config = source.job_config([7, Decimal("1.50"), "shipped", True, 2.5, Decimal("1e40")], timeout_s=12)

    params = [(p.name, p.type_, p.value) for p in config.query_parameters]
    assert params == [
        ("p1", "INT64", 7),
        ("p2", "NUMERIC", Decimal("1.50")),
        ("p3", "STRING", "shipped"),
        ("p4", "BOOL", True),
        ("p5", "FLOAT64", 2.5),
        ("p6", "BIGNUMERIC", Decimal("1e40")),
    ]
    assert int(config.job_timeout_ms) == 12000  # the client keeps it as the API has it, text
    assert [(c.key, c.value) for c in config.connection_properties] == [("time_zone", "UTC")]
    assert config.default_dataset.dataset_id == "shop"
    assert config.use_legacy_sql is False


class FakeJob:
    def __init__(self, service: Service, sql: str, params: Any) -> None:
        self.service, self.sql, self.params = service, sql, params

    def result(self, timeout: float) -> Any:
        self.service.run(self.sql, self.params)
        schema = [google_bigquery.SchemaField(name, kind) for name, kind in self.service.answer[0]]

        class Rows(list):
            pass

        rows = Rows(
            google_bigquery.Row(values, {f.name: i for i, f in enumerate(schema)}) for values in self.service.answer[1]
        )
        rows.schema = schema  # type: ignore[attr-defined]
        return rows

    def cancel(self) -> bool:
        self.service.cancelled.set()
        return True


class FakeClient:
    service: Service

    def __init__(self, **kwargs: Any) -> None:
        self.service.connects.append(kwargs)

    def query(self, sql: str, job_config: Any, timeout: float) -> FakeJob:
        return FakeJob(self.service, sql, [(p.name, p.value) for p in job_config.query_parameters])

    def close(self) -> None:
        return None


def bigquery_source(monkeypatch, service: Service) -> Any:
    monkeypatch.setattr(FakeClient, "service", service, raising=False)
    monkeypatch.setattr(google_bigquery, "Client", FakeClient)
    return bigquery.open_source("bigquery://my-proj/shop")


def test_bigquery_runs_a_job_and_reads_its_rows(monkeypatch) -> None:
    service = Service(answer=([("status", "STRING"), ("n", "INTEGER"), ("week", "DATETIME")], [("shipped", 2, None)]))
    source = bigquery_source(monkeypatch, service)

    result = source.execute("SELECT status FROM orders WHERE status = @p1", ["shipped"], timeout_s=5)

    assert service.statements == [("SELECT status FROM orders WHERE status = @p1", [("p1", "shipped")])]
    assert service.connects == [{"project": "my-proj", "credentials": None}]
    assert (result.columns, result.types, result.rows) == (
        ["status", "n", "week"],
        ["string", "integer", "timestamp"],
        [("shipped", 2, None)],
    )


def test_bigquery_cancel_cancels_the_job(monkeypatch) -> None:
    from google.api_core import exceptions

    service = Service()
    service.block = True
    service.on_cancel = exceptions.BadRequest(
        "Job execution was cancelled",
        errors=[{"reason": "stopped", "message": "Job execution was cancelled: User requested cancellation"}],
    )
    source = bigquery_source(monkeypatch, service)

    raised = cancelled_while_running(source, service)

    assert isinstance(raised, QueryCancelled)
    assert service.cancelled.is_set()


def test_bigquery_errors_are_mapped_to_safe_messages(monkeypatch) -> None:
    from google.api_core import exceptions

    refused = exceptions.BadRequest(
        "POST https://bigquery.googleapis.com/...: Unrecognized name: x",
        errors=[{"reason": "invalidQuery", "message": "Unrecognized name: x at [1:8]"}],
    )
    forbidden = exceptions.Forbidden(
        "Access Denied: Project my-proj", errors=[{"reason": "accessDenied", "message": "Access Denied"}]
    )
    timed_out = exceptions.BadRequest("timeout", errors=[{"reason": "timeout", "message": "Job timed out"}])

    for error, expected, message in [
        (refused, DataSourceError, "Unrecognized name: x at [1:8]"),
        (forbidden, DataSourceUnavailable, "Data source is unavailable"),
        (timed_out, QueryTimeout, "Query timeout"),
    ]:
        source = bigquery_source(monkeypatch, Service(fail=error))
        with pytest.raises(expected) as raised:
            source.execute("SELECT x", [], timeout_s=5)
        assert type(raised.value) is expected
        assert str(raised.value).startswith(message)
        assert "googleapis" not in str(raised.value)


# -- Databricks ----------------------------------------------------------------------------------------------------


def test_databricks_url_becomes_the_drivers_connect_arguments() -> None:
    args = databricks.connect_arguments(
        "databricks://token:dapi123@adb-1.2.azuredatabricks.net/main/shop?http_path=/sql/1.0/warehouses/abc"
    )

    assert args == {
        "server_hostname": "adb-1.2.azuredatabricks.net",
        "http_path": "/sql/1.0/warehouses/abc",
        "access_token": "dapi123",
        "session_configuration": {"TIMEZONE": "UTC", "ANSI_MODE": "true"},
        "user_agent_entry": "embedadmin",
        "enable_telemetry": False,
        "use_inline_params": False,
        "_socket_timeout": 30.0,
        "catalog": "main",
        "schema": "shop",
    }


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("databricks://token:t@host/main", "needs the http_path option"),
        ("databricks://host/main?http_path=/p", "has no token"),
        ("databricks://alice:t@host/main?http_path=/p", "as token:<token>@host"),
        ("databricks://token:t@host/main?http_path=/p&access_token=u", "use one"),
    ],
)
def test_a_bad_databricks_url_is_refused(url: str, message: str) -> None:
    with pytest.raises(DataSourceError, match=message):
        databricks.connect_arguments(url)


def test_databricks_sets_the_statement_timeout_and_binds_named_parameters(monkeypatch) -> None:
    service = Service(answer=([("status", "string"), ("n", "bigint"), ("t", "timestamp")], [("shipped", 2, None)]))
    monkeypatch.setattr(databricks_sql, "connect", recorder(service))
    source = databricks.open_source("databricks://token:t@host/main?http_path=/p")

    result = source.execute(
        "SELECT status FROM orders WHERE status = :p1 AND amount > :p2", ["shipped", 5], timeout_s=20
    )
    source.execute("SELECT 1", [], timeout_s=20)

    assert service.statements == [
        ("SET STATEMENT_TIMEOUT = 20", None),
        ("SELECT status FROM orders WHERE status = :p1 AND amount > :p2", {"p1": "shipped", "p2": 5}),
        ("SELECT 1", None),
    ]
    assert (result.types, result.rows) == (["string", "integer", "timestamp"], [("shipped", 2, None)])


def test_databricks_cancel_calls_the_cursors_cancel(monkeypatch) -> None:
    service = Service()
    service.block = True
    service.on_cancel = databricks_sql.exc.ServerOperationError("Query was cancelled")
    monkeypatch.setattr(databricks_sql, "connect", recorder(service))
    source = databricks.open_source("databricks://token:t@host/main?http_path=/p")

    raised = cancelled_while_running(source, service)

    assert isinstance(raised, QueryCancelled)
    assert service.cancelled.is_set()


@pytest.mark.parametrize(
    ("error", "expected", "message"),
    [
        (
            databricks_sql.exc.ServerOperationError(
                "[UNRESOLVED_COLUMN] A column `x` cannot be resolved. SQLSTATE: 42703"
            ),
            DataSourceError,
            "[UNRESOLVED_COLUMN]",
        ),
        (
            databricks_sql.exc.RequestError("Error during request to server: 403 Invalid access token"),
            DataSourceUnavailable,
            "Data source is unavailable",
        ),
    ],
)
def test_databricks_errors_are_mapped_to_safe_messages(
    monkeypatch, error: Exception, expected: type, message: str
) -> None:
    monkeypatch.setattr(databricks_sql, "connect", recorder(Service(fail=error)))
    source = databricks.open_source("databricks://token:t@host/main?http_path=/p")

    with pytest.raises(expected) as raised:
        source.execute("SELECT 1", [], timeout_s=20)

    assert type(raised.value) is expected
    assert str(raised.value).startswith(message)


# -- all of them ---------------------------------------------------------------------------------------------------


def test_a_missing_driver_names_the_package_to_install(monkeypatch) -> None:
    import importlib

    real = importlib.import_module

    def without_trino(name: str, *args: Any) -> Any:
        if name.startswith("trino"):
            raise ModuleNotFoundError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_trino)

    with pytest.raises(
        DataSourceError, match=r"Trino data sources need the trino package.*requirements-warehouses\.txt"
    ):
        trino.open_source("trino://etl@localhost/memory")
    assert warehouses.REQUIREMENTS == "requirements-warehouses.txt"

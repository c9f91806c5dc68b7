"""What the analyst asks the data besides its answer's query, through the Core Data API with the viewer's own
policies (``tools.dimension_values``, ``tools.date_always_set``), on the saas blind model's DuckDB dataset."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from embedadmin.accounts.services import deployment_configure, duckdb_url
from embedadmin.chat.tools import ToolContext, date_always_set, dimension_values
from embedadmin.semantic.context import QueryContext
from tests.chat.analyst.saas import dataset as saas
from tests.conftest import Cast
from tests.semantic.http_support import fresh_semantic_state

__all__ = ["fresh_semantic_state"]  # fixture

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def saas_duckdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("saas") / "saas.duckdb"
    saas.write_duckdb(path)
    return path


def _context(cast: Cast, path: Path, groups: list[str]) -> ToolContext:
    deployment_configure(deployment=cast.deployment, model_dir=str(saas.MODEL), data_source_url=duckdb_url(path))
    return ToolContext(
        account_id=cast.account.pk, deployment_id=cast.deployment.pk, query_context=QueryContext(groups=groups)
    )


def test_a_value_is_found_whatever_separates_its_words(acme: Cast, saas_duckdb: Path, fresh_semantic_state: None):
    context = _context(acme, saas_duckdb, ["admin"])

    found = dimension_values(context, "rev_ops", "rev_ops.plan_code", ["starter monthly", "growth-annual"])
    nothing = dimension_values(context, "rev_ops", "rev_ops.plan_code", ["starter annual"])

    assert sorted(found) == ["growth_annual", "starter_monthly"]
    assert nothing == []


def test_a_date_is_always_set_only_when_no_row_of_the_measure_lacks_it(
    acme: Cast, saas_duckdb: Path, fresh_semantic_state: None
):
    context = _context(acme, saas_duckdb, ["admin"])
    with duckdb.connect(str(saas_duckdb), read_only=True) as raw:
        [[unstarted]] = raw.execute("SELECT count(*) FROM subscriptions WHERE started_at IS NULL").fetchall()
        [[uncanceled]] = raw.execute("SELECT count(*) FROM subscriptions WHERE canceled_at IS NULL").fetchall()
    assert (unstarted, uncanceled > 0) == (0, True)  # the data the answers below are about

    started = date_always_set(context, "rev_ops", "rev_ops.sub_count", "rev_ops.started_ts", zero_is_none=True)
    canceled = date_always_set(context, "rev_ops", "rev_ops.sub_count", "rev_ops.canceled_ts", zero_is_none=True)
    mrr_started = date_always_set(context, "rev_ops", "rev_ops.mrr", "rev_ops.started_ts", zero_is_none=True)

    assert (started, canceled, mrr_started) == (True, False, True)


def test_a_viewer_who_may_not_read_the_model_learns_nothing(acme: Cast, saas_duckdb: Path, fresh_semantic_state: None):
    context = _context(acme, saas_duckdb, ["nobody"])

    assert date_always_set(context, "rev_ops", "rev_ops.sub_count", "rev_ops.started_ts", zero_is_none=True) is False
    assert dimension_values(context, "rev_ops", "rev_ops.plan_code", ["starter monthly"]) == []

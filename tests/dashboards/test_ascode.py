"""Dashboards as code: ``<model dir>/dashboards/*.yml`` applied through the same services as the Platform API;
applying twice writes nothing; two deployments share the files; a bad file changes nothing; the command; the
apply on model reload."""

from __future__ import annotations

import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from embedadmin.accounts.services import deployment_configure, deployment_create
from embedadmin.dashboards import ascode, selectors
from embedadmin.dashboards.models import Dashboard, EmbedAccess, Report, Workbook
from embedadmin.directory.services import embed_tenant_get_or_create
from embedadmin.semantic import load_model
from tests.dashboards.support import DEMO_MODEL, capture, content_rows, count_writes

SALES = """\
workbook:
  slug: Sales-Overview
  name: Sales overview
reports:
  - key: revenue
    name: Revenue by month
    query: {measures: [sales.total_amount], timeDimensions: [{dimension: sales.created_at, granularity: month}]}
    visualization:
      kind: vega
      spec:
        mark: line
        encoding:
          x: {field: sales.created_at, type: temporal}
          y: {field: sales.total_amount, type: quantitative}
  - key: orders
    publicId: OrdersKpi001
    name: Orders
    query: {measures: [sales.order_count]}
    visualization: {kind: kpi, measure: sales.order_count}
dashboard:
  title: Sales overview
  publish: true
  allowEmbed: true
  embedAccess: {tenants: [acme-corp]}
  widgets:
    - {id: revenue, type: CHART, report: revenue, position: {x: 0, y: 1, w: 8, h: 4}}
    - {id: orders, type: CHART, report: orders, position: {x: 8, y: 1, w: 4, h: 4}}
    - id: country
      type: FILTER
      position: {x: 0, y: 0, w: 3, h: 1}
      config: {member: sales.users_country, operators: [equals]}
"""


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A copy of the demo model with a dashboards folder of its own (not the demo's dashboards)."""
    root = tmp_path / "model"
    shutil.copytree(DEMO_MODEL, root, ignore=shutil.ignore_patterns("dashboards"))
    (root / "dashboards").mkdir()
    (root / "dashboards" / "sales.yml").write_text(SALES)
    return root


@pytest.fixture
def deployment(acme, model_dir, fresh_models):
    embed_tenant_get_or_create(account=acme.account, name="acme-corp")
    return deployment_configure(deployment=acme.deployment, model_dir=str(model_dir))


def test_apply_creates_workbook_reports_and_a_published_shared_dashboard(deployment):
    [outcome] = ascode.apply_for_deployment(deployment)

    assert outcome.error is None
    assert outcome.writes > 0
    workbook = Workbook.objects.get(deployment=deployment)
    assert (workbook.slug, workbook.name) == ("sales-overview", "Sales overview")
    reports = {r.name: r for r in Report.objects.filter(deployment=deployment)}
    assert reports["Orders"].public_id == "OrdersKpi001"
    assert reports["Revenue by month"].public_id == ascode.derived_public_id(deployment.pk, "sales-overview", "revenue")
    dashboard = Dashboard.objects.get(workbook=workbook)
    assert dashboard.public_id == ascode.derived_public_id(deployment.pk, "sales-overview", "dashboard")
    assert outcome.dashboard_public_id == dashboard.public_id
    assert (dashboard.status, dashboard.allow_embed, dashboard.version_number) == ("published", True, 1)
    published = selectors.published_dashboard(public_id=dashboard.public_id, deployment_id=deployment.pk)
    assert [s.kind for s in published.snapshots] == ["vega", "kpi"]
    widgets = published.version.config["widgets"]
    revenue = reports["Revenue by month"]
    assert widgets[0]["config"] == {"reportId": revenue.pk, "reportPublicId": revenue.public_id}
    assert selectors.embed_access_of(workbook=workbook).tenant_names() == ["acme-corp"]


def test_derived_public_ids_are_12_base62_characters_and_stable():
    one = ascode.derived_public_id(1, "sales", "revenue")
    assert len(one) == 12
    assert one.isalnum()
    assert one == ascode.derived_public_id(1, "sales", "revenue")
    assert one != ascode.derived_public_id(2, "sales", "revenue")


def test_applying_twice_writes_nothing(deployment):
    ascode.apply_for_deployment(deployment)
    before = content_rows()

    with capture() as queries:
        [outcome] = ascode.apply_for_deployment(deployment)

    assert count_writes(queries) == 0
    assert outcome.writes == 0
    assert outcome.error is None
    assert content_rows() == before


def test_a_changed_file_updates_and_republishes(deployment, model_dir):
    ascode.apply_for_deployment(deployment)
    path = model_dir / "dashboards" / "sales.yml"
    path.write_text(
        path.read_text().replace("title: Sales overview", "title: Sales, renamed").replace("[acme-corp]", "[]")
    )

    [outcome] = ascode.apply_for_deployment(deployment)

    assert outcome.error is None
    dashboard = Dashboard.objects.get(deployment=deployment)
    assert (dashboard.version_number, dashboard.title) == (2, "Sales, renamed")
    assert EmbedAccess.objects.count() == 0


def test_an_explicit_report_public_id_cannot_serve_two_deployments_of_one_account(deployment, model_dir, acme):
    second, _ = deployment_create(account=acme.account, name="second", slug="second")
    deployment_configure(deployment=second, model_dir=str(model_dir))
    ascode.apply_for_deployment(deployment)

    [outcome] = ascode.apply_for_deployment(second)

    # The explicit report publicId is the account's already: the file names it, so it cannot be shared.
    assert (
        outcome.error == "reports[1] (key 'orders'): publicId 'OrdersKpi001' belongs to a report of another deployment"
    )
    assert not Workbook.objects.filter(deployment=second).exists()


def test_a_second_deployment_with_derived_ids_gets_its_own_dashboard(deployment, model_dir, acme):
    path = model_dir / "dashboards" / "sales.yml"
    path.write_text(path.read_text().replace("    publicId: OrdersKpi001\n", ""))
    second, _ = deployment_create(account=acme.account, name="second", slug="second")
    deployment_configure(deployment=second, model_dir=str(model_dir))

    outcomes = ascode.apply_for_model_dir(str(model_dir.resolve()))

    assert [o.error for o in outcomes] == [None, None]
    first_dashboard = Dashboard.objects.get(deployment=deployment)
    second_dashboard = Dashboard.objects.get(deployment=second)
    assert first_dashboard.public_id != second_dashboard.public_id
    second_reports = Report.objects.filter(deployment=second)
    assert second_reports.count() == 2
    second_ids = {r.pk for r in second_reports}
    published = selectors.published_dashboard(public_id=second_dashboard.public_id)
    assert {s.report_id for s in published.snapshots} == second_ids
    # and again: nothing to write for either
    with capture() as queries:
        ascode.apply_for_model_dir(str(model_dir.resolve()))
    assert count_writes(queries) == 0


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda s: s.replace("sales.total_amount]", "sales.ghost]"), "member 'sales.ghost' does not exist"),
        (lambda s: s.replace("report: orders", "report: nope"), "report 'nope' is not a key of this file's reports"),
        (lambda s: s.replace("[acme-corp]", "[nobody-corp]"), "Embed tenant 'nobody-corp' not found"),
        (lambda s: s.replace("w: 4, h: 4", "w: 9, h: 4"), 'widgets[1] (id "orders"): position.x + position.w'),
        (lambda s: s.replace("workbook:", "workbok:"), "unknown keys: workbok"),
        (lambda s: s + "  : [\n", "invalid YAML"),
    ],
)
def test_a_bad_file_reports_the_problem_and_changes_nothing(deployment, model_dir, change, fragment):
    path = model_dir / "dashboards" / "sales.yml"
    path.write_text(change(SALES))
    before = content_rows()

    [outcome] = ascode.apply_for_deployment(deployment)

    assert outcome.file == "model/dashboards/sales.yml"
    assert fragment in outcome.error
    assert content_rows() == before


def test_a_bad_file_does_not_stop_the_others(deployment, model_dir):
    (model_dir / "dashboards" / "broken.yml").write_text("workbook: {slug: broken}\nreports: 3\n")

    outcomes = {o.file: o for o in ascode.apply_for_deployment(deployment)}

    assert outcomes["model/dashboards/broken.yml"].error == "reports: must be a list"
    assert outcomes["model/dashboards/sales.yml"].error is None
    assert not Workbook.objects.filter(slug="broken").exists()


def test_dry_run_rolls_back(deployment):
    [outcome] = ascode.apply_for_deployment(deployment, dry_run=True)
    assert outcome.error is None
    assert outcome.writes > 0
    assert content_rows() == {table: [] for table in content_rows()}


def test_the_command_applies_and_reports(deployment):
    out = StringIO()
    call_command("apply_dashboards", "--deployment", str(deployment.pk), stdout=out)
    assert f"deployment {deployment.pk} model/dashboards/sales.yml:" in out.getvalue()
    assert Dashboard.objects.count() == 1

    again = StringIO()
    call_command("apply_dashboards", stdout=again)
    assert "unchanged" in again.getvalue()


def test_the_command_fails_on_a_bad_file_and_an_unknown_deployment(deployment, model_dir):
    (model_dir / "dashboards" / "sales.yml").write_text("workbook: 1\n")
    with pytest.raises(CommandError, match="1 dashboards file"):
        call_command("apply_dashboards", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="not found"):
        call_command("apply_dashboards", "--deployment", "999999", stdout=StringIO())


def test_a_model_reload_that_sees_changed_files_applies_them(deployment, model_dir, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        load_model(deployment.model_dir, dialect="duckdb", check_interval=0)

    # the receiver enqueued the task (run eagerly in tests), which applied the file
    assert Dashboard.objects.filter(deployment=deployment).count() == 1

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        load_model(deployment.model_dir, dialect="duckdb", check_interval=0)
    assert callbacks == []  # nothing changed: nothing enqueued


def test_an_unreachable_broker_does_not_fail_the_reload_that_noticed_the_files(
    deployment, model_dir, django_capture_on_commit_callbacks, monkeypatch, caplog
):
    from kombu.exceptions import OperationalError

    from embedadmin.dashboards import tasks

    def broker_down(*args, **kwargs):
        raise OperationalError("unable to open database file")

    monkeypatch.setattr(tasks.apply_model_dir, "delay", broker_down)
    # The request (or command) that noticed the files commits normally; the failure is logged, nothing applied.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        version = load_model(deployment.model_dir, dialect="duckdb", check_interval=0)
    assert len(callbacks) == 1
    assert version.error is None
    assert "could not enqueue applying the dashboards" in caplog.text
    assert not Dashboard.objects.filter(deployment=deployment).exists()
    # The command applies them without the broker.
    call_command("apply_dashboards", stdout=StringIO())
    assert Dashboard.objects.filter(deployment=deployment).count() == 1

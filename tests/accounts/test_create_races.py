"""Two requests creating the same deployment slug or username at once: one wins, the other is a 409
(Conflict), never a database error surfacing as a 500."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db.models import QuerySet

from embedadmin.accounts import services
from embedadmin.accounts.models import Deployment
from embedadmin.core.errors import Conflict
from tests.conftest import run_concurrently


def _outcome(call):
    def run():
        try:
            call()
        except Conflict as exc:
            return f"conflict: {exc.message}"
        return "created"

    return run


@pytest.fixture
def check_misses(monkeypatch):
    """Make the services' existence checks of deployments and users see nothing, as when the rival
    commits right after the check (other models, such as the account a deployment belongs to, still
    validate for real)."""
    real_exists = QuerySet.exists
    missed = (Deployment, get_user_model())
    monkeypatch.setattr(QuerySet, "exists", lambda self: False if self.model in missed else real_exists(self))


def test_a_deployment_slug_taken_after_the_check_is_a_conflict_and_writes_nothing(acme, check_misses):
    before = Deployment.objects.filter(account=acme.account).count()
    with pytest.raises(Conflict, match="already used"):
        services.deployment_create(account=acme.account, name="Again", slug="default")
    assert Deployment.objects.filter(account=acme.account).count() == before


def test_a_username_taken_after_the_check_is_a_conflict(acme, check_misses):
    with pytest.raises(Conflict, match="already exists"):
        services.internal_user_create(account=acme.account, username=acme.created.admin_username, email="")
    assert get_user_model().objects.filter(username=acme.created.admin_username).count() == 1


@pytest.mark.django_db(transaction=True)
def test_racing_creations_on_postgres_give_one_winner_and_conflicts(on_postgres, make_account):
    cast = make_account("racer")
    deployments = run_concurrently(
        [_outcome(lambda: services.deployment_create(account=cast.account, name="Twin", slug="twin"))] * 4
    )
    users = run_concurrently(
        [_outcome(lambda: services.internal_user_create(account=cast.account, username="twin", email=""))] * 4
    )
    for outcomes in (deployments, users):
        assert outcomes.count("created") == 1
        assert all(o.startswith("conflict: ") for o in outcomes if o != "created")
    assert Deployment.objects.filter(account=cast.account, slug="twin").count() == 1
    assert get_user_model().objects.filter(username="twin").count() == 1

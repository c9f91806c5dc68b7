"""PreparedQuery returns exactly what iterating the same queryset returns, at a fraction of the cost."""

import pytest
from django.db.models import Exists, OuterRef

from embedadmin.accounts.models import ApiKey
from embedadmin.core.prepared import InList, PreparedQuery
from embedadmin.directory.models import Group

KEYS = PreparedQuery(
    ApiKey,
    lambda account_id: (
        ApiKey.objects.select_related("account", "account__tenant_settings")
        .annotate(is_scoped=Exists(ApiKey.deployments.through.objects.filter(apikey_id=OuterRef("pk"))))
        .filter(account_id=account_id)
        .order_by("id")
    ),
    sentinels=(-1,),
)
GROUPS = PreparedQuery(
    Group,
    lambda account_id, names: Group.objects.filter(account_id=account_id, name__in=names).order_by("name"),
    sentinels=(-1, InList("\x00g")),
)


@pytest.mark.django_db
def test_rows_related_objects_and_annotations_match_the_orm(acme, globex, django_assert_num_queries):
    # given: two accounts with keys, one of them scoped
    from embedadmin.accounts.services import api_key_create

    api_key_create(account=acme.account, name="scoped", deployment_ids=[acme.deployment.pk])
    expected = list(
        ApiKey.objects.select_related("account", "account__tenant_settings")
        .annotate(is_scoped=Exists(ApiKey.deployments.through.objects.filter(apikey_id=OuterRef("pk"))))
        .filter(account_id=acme.account.pk)
        .order_by("id")
    )

    # when: the prepared query runs with acme's id
    with django_assert_num_queries(1):
        got = KEYS.fetch(acme.account.pk)
        # then: related objects come from the same query (no extra queries here)
        settings_rows = [k.account.tenant_settings.max_external_users for k in got]

    assert [(k.pk, k.prefix, k.kind, k.created_at, k.is_scoped) for k in got] == [
        (k.pk, k.prefix, k.kind, k.created_at, k.is_scoped) for k in expected
    ]
    assert [k.account.name for k in got] == ["acme", "acme"]
    assert settings_rows == [10_000, 10_000]
    assert [k.is_scoped for k in got] == [False, True]
    assert KEYS.fetch(globex.account.pk)[0].account.name == "globex"


@pytest.mark.django_db
def test_in_lists_of_any_length_are_bound_per_call(acme):
    from embedadmin.directory.services import group_create

    for name in ["a", "b", "c", "it's"]:
        group_create(account=acme.account, embed_tenant=None, name=name)

    assert [g.name for g in GROUPS.fetch(acme.account.pk, ["c", "a"])] == ["a", "c"]
    assert [g.name for g in GROUPS.fetch(acme.account.pk, ["b"])] == ["b"]
    assert [g.name for g in GROUPS.fetch(acme.account.pk, ["it's", "x", "b"])] == ["b", "it's"]
    assert GROUPS.fetch(acme.account.pk, ["' OR 1=1 --"]) == []


@pytest.mark.django_db
def test_an_empty_in_list_matches_nothing_without_a_query(acme, django_assert_num_queries):
    # given: a group that a non-empty list would find
    from embedadmin.directory.services import group_create

    group_create(account=acme.account, embed_tenant=None, name="a")
    names = PreparedQuery(
        Group,
        lambda account_id, names: Group.objects.filter(account_id=account_id, name__in=names).values_list("name"),
        sentinels=(-1, InList("\x00g")),
    )

    # when / then: an empty list returns nothing and runs no query (the ORM cannot compile ``__in=[]``)
    with django_assert_num_queries(0):
        assert GROUPS.fetch(acme.account.pk, []) == []
        assert GROUPS.first(acme.account.pk, []) is None
        assert names.rows(acme.account.pk, []) == []
    assert [g.name for g in GROUPS.fetch(acme.account.pk, ["a"])] == ["a"]


@pytest.mark.django_db
def test_an_argument_the_orm_transforms_is_refused():
    contains = PreparedQuery(Group, lambda name: Group.objects.filter(name__contains=name), sentinels=("\x00n",))
    with pytest.raises(ValueError, match="plain bound parameter"):
        contains.fetch("x")


@pytest.mark.django_db
def test_a_nullable_argument_selects_is_null_or_binds_the_value(acme):
    from embedadmin.core.prepared import Nullable
    from embedadmin.directory.services import embed_tenant_get_or_create, group_create

    tenant = embed_tenant_get_or_create(account=acme.account, name="tenant-one")
    group_create(account=acme.account, embed_tenant=None, name="wide")
    group_create(account=acme.account, embed_tenant=tenant, name="scoped")
    in_scope = PreparedQuery(
        Group,
        lambda account_id, tenant_id: Group.objects.filter(account_id=account_id, embed_tenant_id=tenant_id),
        sentinels=(-1, Nullable(-2)),
    )

    assert [g.name for g in in_scope.fetch(acme.account.pk, None)] == ["wide"]
    assert [g.name for g in in_scope.fetch(acme.account.pk, tenant.pk)] == ["scoped"]
    assert [g.name for g in in_scope.fetch(acme.account.pk, None)] == ["wide"]


@pytest.mark.django_db
def test_values_list_rows_go_through_the_fields_converters(acme, on_postgres):
    # given: a thread with logged JSON frames (seq is a PositiveIntegerField, which PostgreSQL's
    # backend binds as a sized integer)
    import datetime as dt

    from embedadmin.chat.models import Agent, ChatUser, Run, Thread, ThreadEvent

    agent = Agent.objects.create(account=acme.account, deployment=acme.deployment, name="a", public_id="a1")
    owner = ChatUser.objects.create(account=acme.account, external_id="u", is_ephemeral=False)
    thread = Thread.objects.create(chat_id="c1", agent=agent, owner=owner)
    now = dt.datetime.now(dt.UTC)
    run = Run.objects.create(
        thread=thread, message_id="1-message", input="q", first_seq=1, heartbeat_at=now, started_at=now
    )
    for seq in (1, 2, 3):
        ThreadEvent.objects.create(thread=thread, run=run, seq=seq, message={"id": f"m{seq}", "n": seq})
    after = PreparedQuery(
        ThreadEvent,
        lambda thread_id, after_seq: (
            ThreadEvent.objects.filter(thread_id=thread_id, seq__gt=after_seq)
            .order_by("seq")
            .values_list("seq", "message")
        ),
        sentinels=(-1, 2_000_000_001),
    )

    # when / then: rows are tuples with decoded JSON, for each bound value
    assert after.rows(thread.pk, 1) == [(2, {"id": "m2", "n": 2}), (3, {"id": "m3", "n": 3})]
    assert after.rows(thread.pk, 3) == []
    assert after.rows(thread.pk + 1, 0) == []
    with pytest.raises(TypeError, match="rows"):
        after.fetch(thread.pk, 0)

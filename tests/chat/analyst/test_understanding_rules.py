"""The analyst's rules against guessing (issue 23), on a small model of its own: a view over orders (ordered and
shipped dates), their lines (revenue) and customers (signup date). Each rule turns what used to be a confident guess
into the one reading the words and the model support, or a decline that says what to name."""

from __future__ import annotations

import asyncio
from datetime import UTC, date, datetime
from typing import Any
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.dates import DateRange, find_dates
from embedadmin.chat.providers.analyst.intent import Decline, Intent
from embedadmin.chat.providers.analyst.model_phrases import cubes_of
from embedadmin.chat.providers.analyst.question_words import tokenize
from embedadmin.chat.providers.analyst.understand import understand

NOW = datetime(2025, 8, 20, 9, 0, tzinfo=UTC)
UTC_ZONE = ZoneInfo("UTC")


def _member(view: str, name: str, title: str, *, kind: str, alias: str, agg: str = "", **more: Any) -> dict:
    member = {"name": f"{view}.{name}", "title": title, "type": kind, "aliasMember": alias, **more}
    if agg:
        member["aggType"] = agg
    return member


def _view(name: str, title: str, members: list) -> list:
    """The model of one view, as ``serviceMeta`` shows it."""
    return cubes_of({"cubes": [{"name": name, "title": title, "type": "view", "members": members}]})


def _model(*, plain_date_on: str = "") -> list:
    """The view ``shop``; ``plain_date_on`` names the time dimension whose synonyms say plainly "date"."""

    def dated(name: str) -> dict:
        return {"meta": {"synonyms": ["date"]}} if name == plain_date_on else {}

    members = [
        _member("shop", "revenue", "Revenue", kind="number", alias="lines.revenue", agg="sum", format="currency"),
        _member("shop", "order_count", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("shop", "customer_count", "Customers", kind="number", alias="customers.count", agg="count"),
        _member("shop", "ordered_at", "Ordered at", kind="time", alias="orders.ordered_at", **dated("ordered_at")),
        _member("shop", "shipped_at", "Shipped at", kind="time", alias="orders.shipped_at", **dated("shipped_at")),
        _member("shop", "signed_up_at", "Signed up at", kind="time", alias="customers.signed_up_at"),
        _member("shop", "status", "Status", kind="string", alias="orders.status"),
    ]
    return _view("shop", "Shop", members)


async def _no_values(cube: str, dimension: str, candidates: Any) -> list[str]:
    return []


def _ask(question: str, cubes: list, previous: Intent | None = None, lookup: Any = _no_values) -> Intent | Decline:
    return asyncio.run(understand(question, cubes, lookup, zone=UTC_ZONE, now=NOW, previous=previous))


def _measure_names(answer: Intent | Decline) -> list[str]:
    """The measures an understood question asks for (the question must be understood)."""
    assert isinstance(answer, Intent)
    return [m.name for m in answer.measures]


def _assert_asked_between(answer: Intent | Decline, *choices: str) -> None:
    """The analyst asked back which of ``choices`` the words mean, never picking one."""
    assert isinstance(answer, Decline)
    assert answer.ambiguous
    assert set(answer.choices) == set(choices)


def _period(question: str) -> tuple[date, date, bool]:
    [found] = find_dates(tokenize(question), zone=UTC_ZONE, now=NOW, taken=set())
    assert found.date_range is not None
    return found.date_range.start, found.date_range.end, found.yearless


def test_a_period_named_without_its_year_is_the_latest_one_begun():
    assert _period("revenue in Q4") == (date(2024, 10, 1), date(2025, 1, 1), True)  # Q4 2025 has not begun
    assert _period("revenue in Q3") == (date(2025, 7, 1), date(2025, 10, 1), True)
    assert _period("revenue in the second half") == (date(2025, 7, 1), date(2026, 1, 1), True)  # begun in July
    assert _period("revenue in October") == (date(2024, 10, 1), date(2024, 11, 1), True)
    assert _period("revenue in Q4 2025") == (date(2025, 10, 1), date(2026, 1, 1), False)


def test_a_follow_up_period_without_its_year_takes_the_threads_year():
    cubes = _model(plain_date_on="ordered_at")
    first = _ask("Revenue in Q3 2023", cubes)
    assert isinstance(first, Intent)

    follow_up = _ask("And in Q4?", cubes, previous=first)

    assert isinstance(follow_up, Intent)
    assert follow_up.date_range is not None
    assert (follow_up.date_range.start, follow_up.date_range.end) == (date(2023, 10, 1), date(2024, 1, 1))


def test_the_date_of_a_period_is_never_guessed():
    """Revenue comes from the lines, which have no date in the view; the orders have two: which one, the question
    must say, unless the model calls one of them plainly "date"."""
    declined = _ask("Revenue in 2024", _model())

    assert isinstance(declined, Decline)
    assert "ordered at, shipped at or signed up at" in declined.reason
    plain = _ask("Revenue in 2024", _model(plain_date_on="shipped_at"))
    assert isinstance(plain, Intent)
    assert plain.time is not None
    assert plain.time.name == "shop.shipped_at"


def test_the_date_of_the_measures_own_cube_is_the_periods():
    counted = _ask("How many customers in 2024?", _model())

    assert isinstance(counted, Intent)
    assert counted.time is not None
    assert counted.time.name == "shop.signed_up_at"


def test_a_count_never_answers_how_much():
    answer = _ask("How much did we order in 2024?", _model(plain_date_on="ordered_at"))
    amount = _ask("How much were orders in 2024?", _model(plain_date_on="ordered_at"))

    assert isinstance(answer, Decline)  # "order" is a verb here, not the count of orders
    assert isinstance(amount, Decline)
    assert "asks for an amount" in amount.reason


def test_a_ranking_of_nothing_is_declined_not_answered_with_a_total():
    answer = _ask("What was the smallest order in 2024?", _model(plain_date_on="ordered_at"))

    assert isinstance(answer, Decline)


def test_those_outside_a_follow_up_is_declined():
    answer = _ask("What's the revenue of those?", _model(plain_date_on="ordered_at"))

    assert isinstance(answer, Decline)
    assert "'those'" in answer.reason


def _orders_model() -> list:
    """A view of orders with a count, a customer name and one date: no distinct count of customers."""
    members = [
        _member("sales", "order_count", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("sales", "revenue", "Revenue", kind="number", alias="orders.revenue", agg="sum", format="currency"),
        _member("sales", "customer", "Customer", kind="string", alias="orders.customer"),
        _member("sales", "ordered_at", "Ordered at", kind="time", alias="orders.ordered_at"),
    ]
    return _view("sales", "Sales", members)


def test_distinct_things_without_a_distinct_count_are_declined_never_grouped():
    answer = _ask("How many different customers placed orders in 2024?", _orders_model())

    assert isinstance(answer, Decline)
    assert "no distinct count of customer" in answer.reason


def test_a_noun_after_on_qualifies_the_measure_and_adds_none():
    assert _measure_names(_ask("What was the revenue on orders placed in 2024?", _orders_model())) == ["sales.revenue"]


async def _statuses(cube: str, dimension: str, candidates: Any) -> list[str]:
    """The data holds the statuses ``shipped`` and ``returned`` (of the view and of the orders cube behind it)."""
    held = {"shipped", "returned"}
    return [c for c in candidates if dimension.endswith(".status") and c.lower() in held]


def _with_orders_cube(cubes: list) -> list:
    """The model with the ``orders`` cube the view shows, as serviceMeta lists it beside the view: one date of its
    own, and a synonym ("purchases") the view's member does not carry."""
    orders = [
        {
            "name": "orders.count",
            "title": "Orders",
            "type": "number",
            "aggType": "count",
            "meta": {"synonyms": ["purchases"]},
        },
        {"name": "orders.ordered_at", "title": "Ordered at", "type": "time"},
        {"name": "orders.status", "title": "Status", "type": "string"},
    ]
    return [*cubes, *cubes_of({"cubes": [{"name": "orders", "title": "Orders", "members": orders}]})]


def test_values_joined_by_and_are_each_answered_unless_asked_together():
    cubes = _model(plain_date_on="ordered_at")

    split = _ask("Orders shipped and returned", cubes, lookup=_statuses)
    either = _ask("Orders shipped or returned", cubes, lookup=_statuses)
    combined = _ask("Orders shipped and returned combined", cubes, lookup=_statuses)

    assert isinstance(split, Intent)
    assert isinstance(either, Intent)
    assert isinstance(combined, Intent)
    assert [g.name for g in split.groups] == ["shop.status"]
    assert either.groups == ()
    assert combined.groups == ()
    for intent in (split, either, combined):
        assert [(c.member.name, c.operator, set(c.values)) for c in intent.conditions] == [
            ("shop.status", "equals", {"shipped", "returned"})
        ]


def test_a_cube_a_view_shows_answers_through_the_view_and_never_past_its_ambiguity():
    cubes = _with_orders_cube(_model())

    # "purchases" only the cube places: its answer is written against the view, which shows what it uses
    through = _ask("Purchases by status", cubes, lookup=_statuses)
    # the view has three dates, no plain one and none the words name: "Orders" names its own ("Ordered at"), so the
    # count of orders is placed by it; revenue comes from lines, which none is of, so it declines as ambiguous
    titled = _ask("Count by status in 2024", cubes, lookup=_statuses)
    ambiguous = _ask("Revenue by status in 2024", cubes, lookup=_statuses)

    assert isinstance(through, Intent)
    assert (through.cube.name, [m.name for m in through.measures]) == ("shop", ["shop.order_count"])
    assert [g.name for g in through.groups] == ["shop.status"]
    assert isinstance(titled, Intent)
    assert titled.time is not None
    assert titled.time.name == "shop.ordered_at"
    assert isinstance(ambiguous, Decline)
    assert ambiguous.ambiguous


def test_a_verb_the_model_names_something_by_is_never_dropped():
    members = [
        _member("shop", "order_count", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("shop", "returned_count", "Returned orders", kind="number", alias="orders.returned", agg="count"),
        _member("shop", "ordered_at", "Ordered at", kind="time", alias="orders.ordered_at"),
    ]
    cubes = _view("shop", "Shop", members)

    placed = _ask("How many orders were placed in 2024?", cubes)
    returned = _ask("How many orders were returned in 2024?", cubes)
    in_stock = _ask("How many orders do we have in stock?", cubes)

    assert isinstance(placed, Intent)
    assert [m.name for m in placed.measures] == ["shop.order_count"]
    assert isinstance(returned, Intent)  # the model names what "returned" means: never the count of all orders
    assert [m.name for m in returned.measures] == ["shop.returned_count"]
    assert isinstance(in_stock, Decline)  # "in stock" is not an event of orders: nothing of the model places it
    assert "stock" in in_stock.reason


def _saas_model() -> list:
    """A view of accounts (signup date) and their subscriptions (start and cancellation dates, status)."""
    members = [
        _member("ops", "acct_count", "Accounts", kind="number", alias="accounts.count", agg="count"),
        _member("ops", "sub_count", "Subscriptions", kind="number", alias="subscriptions.count", agg="count"),
        _member("ops", "mrr", "MRR", kind="number", alias="subscriptions.mrr", agg="sum", format="currency"),
        _member("ops", "industry", "Industry", kind="string", alias="accounts.industry"),
        _member("ops", "signup_ts", "Signup date", kind="time", alias="accounts.signup_ts"),
        _member("ops", "started_ts", "Start date", kind="time", alias="subscriptions.started_ts"),
        _member(
            "ops",
            "canceled_ts",
            "Cancellation date",
            kind="time",
            alias="subscriptions.canceled_ts",
            meta={"synonyms": ["churn date"]},
        ),
        _member("ops", "status", "Status", kind="string", alias="subscriptions.status"),
    ]
    return _view("ops", "Operations", members)


async def _saas_values(cube: str, dimension: str, candidates: Any) -> list[str]:
    held = {"ops.status": {"active", "canceled"}, "ops.industry": {"fintech", "retail"}}.get(dimension, set())
    return [c for c in candidates if c.lower() in held]


def _range(intent: Intent | Decline) -> tuple[date | None, date | None]:
    assert isinstance(intent, Intent), intent
    assert intent.date_range is not None
    return intent.date_range.start, intent.date_range.end


def test_a_verb_naming_a_date_of_the_model_is_the_periods_date():
    cubes = _saas_model()

    signed = _ask("How many new accounts signed up last year?", cubes, lookup=_saas_values)
    churned = _ask("How many subscriptions churned each month in 2025?", cubes, lookup=_saas_values)
    started = _ask("How many subscriptions started in the second half of 2024?", cubes, lookup=_saas_values)
    # "canceled" is a value of status and names the cancellation date: both hold
    canceled = _ask("How many subscriptions were canceled in 2024?", cubes, lookup=_saas_values)
    signups = _ask("Show new signups per quarter in 2024", cubes, lookup=_saas_values)

    for intent, date_name in (
        (signed, "ops.signup_ts"),
        (churned, "ops.canceled_ts"),
        (started, "ops.started_ts"),
        (canceled, "ops.canceled_ts"),
        (signups, "ops.signup_ts"),
    ):
        assert isinstance(intent, Intent), intent
        assert intent.time is not None
        assert intent.time.name == date_name
    assert isinstance(signed, Intent)
    assert [m.name for m in signed.measures] == ["ops.acct_count"]
    assert isinstance(churned, Intent)
    assert [m.name for m in churned.measures] == ["ops.sub_count"]
    assert churned.grain == "month"
    assert isinstance(canceled, Intent)
    assert [(c.member.name, c.values) for c in canceled.conditions] == [("ops.status", ("canceled",))]
    assert isinstance(signups, Intent)
    assert signups.grain == "quarter"


def test_a_verb_naming_a_date_with_no_period_counts_the_rows_that_have_it():
    churned = _ask("How many subscriptions churned?", _saas_model(), lookup=_saas_values)

    assert isinstance(churned, Intent)
    assert [(c.member.name, c.operator) for c in churned.conditions] == [("ops.canceled_ts", "set")]
    assert "canceled_ts IS NOT NULL" in churned.sql()


def test_a_word_naming_none_of_several_dates_is_still_never_guessed():
    declined = _ask("Subscriptions in 2024", _saas_model(), lookup=_saas_values)

    assert isinstance(declined, Decline)
    assert declined.ambiguous


def test_days_day_ranges_and_open_ranges():
    cubes = _saas_model()
    assert _range(_ask("Accounts that signed up between March 1 and March 15, 2025", cubes)) == (
        date(2025, 3, 1),
        date(2025, 3, 16),
    )
    assert _range(_ask("Accounts that signed up from June 1 to 7, 2025", cubes)) == (date(2025, 6, 1), date(2025, 6, 8))
    assert _range(_ask("Accounts that signed up on 5 March 2025", cubes)) == (date(2025, 3, 5), date(2025, 3, 6))
    assert _range(_ask("How many accounts signed up since April 1, 2025?", cubes)) == (date(2025, 4, 1), None)
    assert _range(_ask("How many accounts signed up before 2024?", cubes)) == (None, date(2024, 1, 1))
    assert _range(_ask("How many accounts signed up after 2023?", cubes)) == (date(2024, 1, 1), None)
    assert _range(_ask("How many accounts signed up until March 2025?", cubes)) == (None, date(2025, 4, 1))
    before = _ask("How many accounts signed up before 2024?", cubes)
    assert isinstance(before, Intent)
    assert "signup_ts < DATE '2024-01-01'" in before.sql()
    assert ">=" not in before.sql()
    assert "up to 2023-12-31" in before.computed()


def test_a_day_that_does_not_exist_is_no_day():
    assert find_dates(tokenize("orders on February 30"), zone=UTC_ZONE, now=NOW, taken=set())[0].date_range != (
        find_dates(tokenize("orders on February 3"), zone=UTC_ZONE, now=NOW, taken=set())[0].date_range
    )
    assert _period("orders on February 29") == (date(2024, 2, 29), date(2024, 3, 1), True)  # the latest one


def test_rankings_with_numbers_as_words():
    cubes = _saas_model()

    top = _ask("What are the top three industries by MRR?", cubes, lookup=_saas_values)
    bottom = _ask("Which three industries have the lowest MRR?", cubes, lookup=_saas_values)

    assert isinstance(top, Intent)
    assert (top.descending, top.limit, [g.name for g in top.groups]) == (True, 3, ["ops.industry"])
    assert isinstance(bottom, Intent)
    assert (bottom.descending, bottom.limit) == (False, 3)


def test_a_question_pointing_into_the_thread_narrows_its_last_question():
    cubes = _saas_model()
    first = _ask("How many subscriptions started in 2024?", cubes, lookup=_saas_values)
    assert isinstance(first, Intent)

    narrowed = _ask("How many of those were canceled?", cubes, previous=first, lookup=_saas_values)
    by_industry = _ask("Break that down by industry as well.", cubes, previous=first, lookup=_saas_values)
    share = _ask("What percentage of them were canceled?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(narrowed, Intent)
    assert narrowed.date_range == first.date_range
    assert narrowed.time == first.time
    assert [(c.member.name, c.values) for c in narrowed.conditions] == [("ops.status", ("canceled",))]
    assert isinstance(by_industry, Intent)
    assert [g.name for g in by_industry.groups] == ["ops.industry"]
    assert by_industry.date_range == first.date_range
    assert isinstance(share, Decline)  # a share of the thread's rows is not its count narrowed


def test_which_one_of_a_plural_group_asked_in_the_singular_is_one():
    cubes = _saas_model()
    first = _ask("MRR by industry", cubes, lookup=_saas_values)
    assert isinstance(first, Intent)

    smallest = _ask("Which of those industries was the smallest?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(smallest, Intent)
    assert (smallest.descending, smallest.limit) == (False, 1)


def test_which_month_had_the_most_is_one_month():
    cubes = _saas_model()

    one = _ask("Which month in 2024 had the most signups?", cubes, lookup=_saas_values)
    all_months = _ask("Which months in 2024 had the most signups?", cubes, lookup=_saas_values)

    assert isinstance(one, Intent)
    assert (one.grain, one.descending, one.limit) == ("month", True, 1)
    assert one.time is not None
    assert one.time.name == "ops.signup_ts"
    assert isinstance(all_months, Intent)
    assert (all_months.grain, all_months.limit) == ("month", None)


def _cube(name: str, title: str, *members: tuple[str, str, str, str], synonyms: tuple[str, ...] = ()) -> dict:
    """A cube as ``serviceMeta`` shows it; each member (local name, title, type, aggregation or "")."""
    shown = [
        {"name": f"{name}.{local}", "title": member_title, "type": kind, **({"aggType": agg} if agg else {})}
        for local, member_title, kind, agg in members
    ]
    return {
        "name": name,
        "title": title,
        "members": shown,
        **({"meta": {"synonyms": list(synonyms)}} if synonyms else {}),
    }


def _accounts_model() -> list:
    """A cube of accounts (synonym "customers") with the account's name, and their invoices."""
    accounts = _cube(
        "accounts",
        "Accounts",
        ("count", "Accounts", "number", "count"),
        ("acct_name", "Account", "string", ""),
        ("tier", "Tier", "string", ""),
        synonyms=("customers",),
    )
    invoices = _cube(
        "invoices",
        "Invoices",
        ("count", "Invoices", "number", "count"),
        ("collected", "Collected", "number", "sum"),
    )
    members = [
        _member("billing", "acct_name", "Account", kind="string", alias="accounts.acct_name"),
        _member("billing", "tier", "Tier", kind="string", alias="accounts.tier"),
        _member("billing", "collected", "Collected", kind="number", alias="invoices.collected", agg="sum"),
        _member("billing", "ship_mode", "Payment method", kind="string", alias="invoices.method"),
    ]
    view = {"name": "billing", "title": "Billing", "type": "view", "members": members}
    return cubes_of({"cubes": [view, accounts, invoices]})


def test_things_named_where_a_group_is_are_grouped_by_the_dimension_naming_each():
    top = _ask("Who are our top ten customers by collected?", _accounts_model())
    which = _ask("Which customer has the most collected?", _accounts_model())

    assert isinstance(top, Intent)
    assert ([g.name for g in top.groups], top.limit, top.descending) == (["billing.acct_name"], 10, True)
    assert isinstance(which, Intent)
    assert ([g.name for g in which.groups], which.limit) == (["billing.acct_name"], 1)


async def _methods(cube: str, dimension: str, candidates: Any) -> list[str]:
    return [c for c in candidates if dimension.endswith(".ship_mode") and c.lower() in {"air", "rail"}]


def test_a_comparison_of_values_is_a_split_and_any_other_is_declined():
    cubes = _accounts_model()

    compared = _ask("Compare collected between air and rail", cubes, lookup=_methods)
    versus = _ask("Collected air vs rail", cubes, lookup=_methods)
    total = _ask("Compare the total collected between air and rail", cubes, lookup=_methods)
    two_years = _ask("Compare collected in 2023 and 2024", cubes, lookup=_methods)

    for intent in (compared, versus, total):
        assert isinstance(intent, Intent), intent
        assert [g.name for g in intent.groups] == ["billing.ship_mode"]
        assert [(c.member.name, set(c.values)) for c in intent.conditions] == [("billing.ship_mode", {"air", "rail"})]
    assert isinstance(two_years, Decline)


def _renewals_model() -> list:
    members = [
        _member("subs", "sub_count", "Subscriptions", kind="number", alias="subscriptions.count", agg="count"),
        _member("subs", "auto_renew", "Auto renew", kind="boolean", alias="subscriptions.auto_renew"),
        _member("subs", "status", "Status", kind="string", alias="subscriptions.status"),
        _member("subs", "started_ts", "Start date", kind="time", alias="subscriptions.started_ts"),
    ]
    return _view("subs", "Subscriptions", members)


async def _sub_statuses(cube: str, dimension: str, candidates: Any) -> list[str]:
    return [c for c in candidates if dimension.endswith(".status") and c.lower() in {"active", "canceled"}]


def test_a_negation_is_placed_on_what_it_negates_or_the_question_is_declined():
    cubes = _renewals_model()

    without = _ask("How many subscriptions don't have auto renew?", cubes, lookup=_sub_statuses)
    not_active = _ask("How many subscriptions are not active?", cubes, lookup=_sub_statuses)
    not_in_year = _ask("How many subscriptions did not start in 2024?", cubes, lookup=_sub_statuses)

    assert isinstance(without, Intent)
    assert [(c.member.name, c.values) for c in without.conditions] == [("subs.auto_renew", ("FALSE",))]
    assert isinstance(not_active, Intent)
    assert [(c.operator, c.values) for c in not_active.conditions] == [("notEquals", ("active",))]
    assert isinstance(not_in_year, Decline)  # never the subscriptions started in 2024


def test_contractions_are_read_as_their_words():
    assert [t.lower for t in tokenize("We've sold what we don't stock; Brand#23's lines")] == [
        "we",
        "sold",
        "what",
        "we",
        "do",
        "not",
        "stock",
        "brand",
        "23",
        "lines",
    ]


def test_a_decline_offers_questions_it_answers_built_from_the_model():
    dates = _ask("Revenue in 2024", _model())
    misspelt = _ask("Show revenu by status", _model(plain_date_on="ordered_at"))
    nothing_near = _ask("What is our net promoter score?", _model(plain_date_on="ordered_at"))

    assert isinstance(dates, Decline)
    assert dates.suggestions == (
        "Revenue in 2024 (ordered at)",
        "Revenue in 2024 (shipped at)",
        "Revenue in 2024 (signed up at)",
    )
    assert isinstance(misspelt, Decline)
    assert misspelt.suggestions == ("Show revenue by status",)
    assert isinstance(nothing_near, Decline)
    assert nothing_near.suggestions == ()
    for offered in (*dates.suggestions, *misspelt.suggestions):  # each one is answered
        assert isinstance(
            _ask(offered, _model(plain_date_on="ordered_at") if "revenue by" in offered else _model()), Intent
        )


def test_a_suggestion_that_would_still_be_declined_is_never_offered():
    # the misspelt word is near "subscriptions", but the question spelt right still names no date of the two
    declined = _ask("How many subscriptons in 2024 by industry?", _saas_model(), lookup=_saas_values)

    assert isinstance(declined, Decline)
    assert declined.suggestions == ()


def _traffic_model() -> list:
    """A cube of web sessions ("visits"): sessions, distinct users, a bounce rate, landing page, device, a bounce."""
    sessions = {
        "name": "sessions",
        "title": "Web sessions",
        "meta": {"synonyms": ["visits"]},
        "members": [
            {"name": "sessions.count", "title": "Sessions", "type": "number", "aggType": "count"},
            {"name": "sessions.users", "title": "Users", "type": "number", "aggType": "countDistinct"},
            {
                "name": "sessions.bounce_rate",
                "title": "Bounce rate",
                "type": "number",
                "aggType": "number",
                "format": "percent",
            },
            {"name": "sessions.landing_page", "title": "Landing page", "type": "string"},
            {"name": "sessions.device", "title": "Device", "type": "string"},
            {"name": "sessions.bounced", "title": "Bounced", "type": "boolean"},
            {"name": "sessions.started_at", "title": "Session start", "type": "time"},
        ],
    }
    return cubes_of({"cubes": [sessions]})


async def _devices(cube: str, dimension: str, candidates: Any) -> list[str]:
    return [c for c in candidates if dimension.endswith(".device") and c.lower() in {"tablet", "mobile"}]


def test_a_share_asked_of_things_is_the_models_percentage_for_it_never_their_count():
    rate = _ask("What percentage of visits bounced in July 2025?", _traffic_model(), lookup=_devices)

    assert isinstance(rate, Intent)
    assert [m.name for m in rate.measures] == ["sessions.bounce_rate"]
    assert (rate.conditions, rate.share) == ((), ())


def test_a_share_of_a_part_is_computed_from_the_count_of_the_whole():
    share = _ask("What percentage of visits in July 2025 came from tablets?", _traffic_model(), lookup=_devices)

    assert isinstance(share, Intent)
    assert [m.name for m in share.measures] == ["sessions.count"]
    assert [(c.member.name, c.values) for c in share.share] == [("sessions.device", ("tablet",))]
    assert share.conditions == ()
    assert share.sql().startswith(
        "SELECT 100.0 * COALESCE(SUM(CASE WHEN part_1 = 'tablet' THEN value END), 0) / NULLIF(SUM(value), 0) AS share "
        "FROM (SELECT device AS part_1, MEASURE(count) AS value FROM sessions WHERE started_at >= DATE '2025-07-01'"
    )


def test_the_whole_of_a_share_is_what_the_words_before_its_part_name():
    cubes = _traffic_model()
    clause = _ask("Of the visits that bounced, what share came from mobile?", cubes, lookup=_devices)
    named = _ask("What share of bounced visits came from mobile?", cubes, lookup=_devices)
    possessive = _ask("What was the mobile share of bounced visits?", cubes, lookup=_devices)

    for share in (clause, named, possessive):
        assert isinstance(share, Intent)
        assert [(c.member.name, c.values) for c in share.conditions] == [("sessions.bounced", ("TRUE",))]
        assert [(c.member.name, c.values) for c in share.share] == [("sessions.device", ("mobile",))]


def test_a_share_of_what_does_not_add_up_over_its_parts_is_declined():
    distinct = _ask("What share of users came from tablets?", _traffic_model(), lookup=_devices)
    no_part = _ask("What share of visits happened in 2024?", _traffic_model(), lookup=_devices)

    assert isinstance(distinct, Decline)
    assert "no share or percentage of users" in distinct.reason
    assert isinstance(no_part, Decline)


def test_more_than_between_two_periods_is_their_difference():
    cubes = _traffic_model()
    more = _ask("How many more visits did we get in Q2 2025 than in Q1 2025?", cubes, lookup=_devices)
    fewer = _ask("How many fewer visits came from tablets in 2024 than in 2025?", cubes, lookup=_devices)

    assert isinstance(more, Intent)
    assert more.difference == 1
    assert (more.date_range.start, more.compared.start) == (date(2025, 4, 1), date(2025, 1, 1))  # type: ignore[union-attr]
    assert "AS difference FROM (SELECT DATE_TRUNC('quarter', started_at) AS period" in more.sql()
    assert isinstance(fewer, Intent)
    assert fewer.difference == -1
    assert "COALESCE(SUM(CASE WHEN period >= TIMESTAMP '2025-01-01'" in fewer.sql().split(" - ")[0]


def test_a_difference_of_what_does_not_add_up_is_only_between_whole_periods():
    cubes = _traffic_model()
    halves = _ask("How many more users did we have in H1 2025 than in H1 2024?", cubes, lookup=_devices)
    years = _ask("How many more users did we have in 2025 than in 2024?", cubes, lookup=_devices)

    assert isinstance(halves, Decline)
    assert "does not add up over the days" in halves.reason
    assert isinstance(years, Intent)
    assert "DATE_TRUNC('year', started_at)" in years.sql()


def test_things_counted_are_those_named_after_how_many_not_those_who_did_them():
    counted = _ask("How many visits did tablet users make this year?", _traffic_model(), lookup=_devices)

    assert isinstance(counted, Intent)
    assert [m.name for m in counted.measures] == ["sessions.count"]
    assert [(c.member.name, c.values) for c in counted.conditions] == [("sessions.device", ("tablet",))]


def test_a_new_measure_on_those_of_a_ranking_is_declined_never_ranked_again():
    cubes = _traffic_model()
    first = _ask("Which three landing pages had the most visits last year?", cubes, lookup=_devices)
    assert isinstance(first, Intent)
    assert [m.name for m in first.measures] == ["sessions.count"]

    rate = _ask("What was the bounce rate on those?", cubes, previous=first, lookup=_devices)

    assert isinstance(rate, Decline)  # ranked by the bounce rate, the three would be other pages


def test_a_follow_up_ranking_the_other_way_keeps_the_rest():
    cubes = _saas_model()
    first = _ask("What are the top three industries by MRR?", cubes, lookup=_saas_values)
    assert isinstance(first, Intent)

    bottom = _ask("And the bottom three?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(bottom, Intent)
    assert (bottom.descending, bottom.limit, bottom.groups, bottom.measures) == (
        False,
        3,
        first.groups,
        first.measures,
    )


def test_that_pointing_into_the_thread_is_a_follow_up_or_declined():
    cubes = _saas_model()
    first = _ask("What was the MRR of subscriptions started in 2024?", cubes, lookup=_saas_values)

    alone = _ask("And how much of that was active?", cubes, lookup=_saas_values)
    narrowed = _ask("And how much of that was active?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(alone, Decline)  # never all the MRR, every year
    assert isinstance(narrowed, Intent)
    assert isinstance(first, Intent)
    assert narrowed.date_range == first.date_range


def test_a_follow_up_counting_things_for_a_period_keeps_the_threads_measure():
    cubes = _saas_model()
    first = _ask("MRR by industry", cubes, lookup=_saas_values)
    assert isinstance(first, Intent)

    narrowed = _ask("What about just for subscriptions started in 2024?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(narrowed, Intent)
    assert narrowed.measures == first.measures
    assert narrowed.time is not None
    assert narrowed.time.name == "ops.started_ts"


def test_the_count_said_of_the_first_through_have_been_is_the_second():
    members = [
        _member("wholesale", "line_count", "Line items", kind="number", alias="lines.count", agg="count"),
        _member("wholesale", "returned", "Returned lines", kind="number", alias="lines.returned", agg="count"),
    ]
    members[0]["meta"] = {"synonyms": ["order lines"]}
    cubes = _view("wholesale", "Wholesale", members)

    answer = _ask("How many order lines have been returned in total?", cubes)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["wholesale.returned"]


def test_name_at_the_start_asks_for_a_list_it_names_no_dimension():
    members = [
        _member("people", "count", "Customers", kind="number", alias="customers.count", agg="count"),
        _member("people", "name", "Name", kind="string", alias="customers.name"),
        _member("people", "nation", "Nation", kind="string", alias="customers.nation"),
    ]
    cubes = _view("people", "People", members)

    answer = _ask("Name the top three nations by number of customers.", cubes)

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["people.nation"]


def test_a_verb_spelt_like_a_count_is_not_that_count():
    members = [
        _member("billing", "invoices", "Invoices", kind="number", alias="invoices.count", agg="count"),
        _member("billing", "billed", "Invoiced amount", kind="number", alias="invoices.amount", agg="sum"),
        _member("billing", "issued_at", "Invoice date", kind="time", alias="invoices.issued_at"),
    ]
    cubes = _view("billing", "Billing", members)

    verb = _ask("In which quarter did we invoice the most?", cubes)
    noun = _ask("In which quarter did we have the most invoices?", cubes)

    assert isinstance(verb, Decline)  # never the count of invoices for "invoice the most"
    assert isinstance(noun, Intent)
    assert [m.name for m in noun.measures] == ["billing.invoices"]


def test_a_count_whose_things_did_something_is_not_asked_for_beside_the_amount():
    answer = _ask(
        "How much revenue have orders placed since April 1, 2025 brought in?", _model(plain_date_on="ordered_at")
    )

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["shop.revenue"]


def test_things_named_in_the_plural_are_not_a_grouping():
    members = [
        _member("wholesale", "orders", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("wholesale", "customer", "Customer", kind="string", alias="customers.name"),
        _member("wholesale", "nation", "Nation", kind="string", alias="customers.nation"),
        _member("wholesale", "order_date", "Order date", kind="time", alias="orders.order_date"),
    ]
    customers = {"name": "customers", "title": "Customers", "members": [{"name": "customers.name", "type": "string"}]}
    view = {"name": "wholesale", "title": "Wholesale", "type": "view", "members": members}

    async def nations(cube: str, dimension: str, candidates: Any) -> list[str]:
        held = {"germany": "GERMANY", "france": "FRANCE"}
        return [held[c.lower()] for c in candidates if dimension.endswith(".nation") and c.lower() in held]

    answer = _ask(
        "Germany vs France, how many orders did customers place in 2024?",
        cubes_of({"cubes": [view, customers]}),
        lookup=nations,
    )

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["wholesale.nation"]


def test_a_verb_naming_one_date_and_a_noun_another_is_ambiguous():
    members = [
        _member("wholesale", "orders", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("wholesale", "order_date", "Order date", kind="time", alias="orders.order_date"),
        _member(
            "wholesale",
            "receipt_date",
            "Receipt date",
            kind="time",
            alias="lines.receipt_date",
            meta={"synonyms": ["received date"]},
        ),
    ]
    cubes = _view("wholesale", "Wholesale", members)

    answer = _ask("How many orders have we received this year?", cubes)

    _assert_asked_between(answer, "Order date", "Receipt date")


def test_a_date_the_model_names_by_a_verb_and_another_a_noun_evokes_is_ambiguous():
    members = [
        _member("wholesale", "orders", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("wholesale", "order_date", "Order date", kind="time", alias="orders.order_date"),
        _member(
            "wholesale",
            "receipt_date",
            "Receipt date",
            kind="time",
            alias="lines.receipt_date",
            meta={"synonyms": ["received on"]},  # the model itself calls it "received"
        ),
    ]
    cubes = _view("wholesale", "Wholesale", members)

    answer = _ask("How many orders have we received this year?", cubes)

    assert isinstance(answer, Decline)
    assert answer.ambiguous
    assert "Orders this year" not in answer.suggestions


def test_a_count_said_the_other_way_round_is_that_count():
    members = [
        _member("ops", "sub_count", "Subscriptions", kind="number", alias="subscriptions.count", agg="count"),
        _member("ops", "churned", "Canceled subscriptions", kind="number", alias="subscriptions.churned", agg="count"),
        _member("ops", "started_ts", "Start date", kind="time", alias="subscriptions.started_ts"),
        _member("ops", "canceled_ts", "Cancellation date", kind="time", alias="subscriptions.canceled_ts"),
    ]
    cubes = _view("ops", "Operations", members)

    answer = _ask("How many subscriptions were canceled in 2024?", cubes)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["ops.churned"]
    assert answer.time is not None
    assert answer.time.name == "ops.canceled_ts"


def test_the_things_counted_are_counted_by_their_cubes_own_count_not_a_filtered_one():
    sessions = {
        "name": "sessions",
        "title": "Web sessions",
        "meta": {"synonyms": ["visits"]},
        "members": [
            {"name": "sessions.count", "title": "Sessions", "type": "number", "aggType": "count"},
            {"name": "sessions.bounces", "title": "Bounced sessions", "type": "number", "aggType": "count"},
            {"name": "sessions.users", "title": "Users", "type": "number", "aggType": "countDistinct"},
            {"name": "sessions.device", "title": "Device", "type": "string"},
        ],
    }
    view_members = [
        _member("traffic", "sess_cnt", "Sessions", kind="number", alias="sessions.count", agg="count"),
        _member("traffic", "bnc_cnt", "Bounced sessions", kind="number", alias="sessions.bounces", agg="count"),
        _member("traffic", "uniq_vis", "Users", kind="number", alias="sessions.users", agg="countDistinct"),
        _member("traffic", "dvc", "Device", kind="string", alias="sessions.device"),
    ]
    view = {"name": "traffic", "title": "Traffic", "type": "view", "members": view_members}

    answer = _ask("How many visits did tablet users make?", cubes_of({"cubes": [view, sessions]}), lookup=_devices)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["traffic.sess_cnt"]


def test_the_edges_of_a_period_open_a_range_at_its_edge():
    cubes = _saas_model()
    assert _range(_ask("How many accounts signed up until the end of June 2023?", cubes)) == (None, date(2023, 7, 1))
    assert _range(_ask("How many accounts signed up up until the end of June 2023?", cubes)) == (
        None,
        date(2023, 7, 1),
    )
    assert _range(_ask("How many accounts signed up before the end of 2024?", cubes)) == (None, date(2025, 1, 1))
    assert _range(_ask("How many accounts signed up since the start of 2025?", cubes)) == (date(2025, 1, 1), None)
    assert _range(_ask("How many accounts signed up until the start of 2025?", cubes)) == (None, date(2025, 1, 1))


def test_the_head_noun_of_a_two_word_title_names_its_measure_when_nothing_else_says_it():
    def model(*titles: str) -> list:
        members = [
            _member("shop", f"m{i}", title, kind="number", alias=f"sales.m{i}", agg="sum")
            for i, title in enumerate(titles)
        ]
        members.append(_member("shop", "day", "Day", kind="time", alias="sales.day"))
        return _view("shop", "Shop", members)

    one = _ask("What was our revenue last year?", model("Gross revenue", "Units"))
    two = _ask("What was our revenue last year?", model("Gross revenue", "Net revenue"))

    assert isinstance(one, Intent)
    assert [m.title for m in one.measures] == ["Gross revenue"]
    assert isinstance(two, Decline)  # gross or net: never guessed
    assert set(two.suggestions) <= {"What was our gross revenue last year", "What was our net revenue last year"}


def test_a_past_participle_finds_the_value_it_says():
    async def statuses(cube: str, dimension: str, candidates: Any) -> list[str]:
        return [c for c in candidates if dimension.endswith(".status") and c.lower() in {"void", "paid"}]

    members = [
        _member("billing", "invoices", "Invoices", kind="number", alias="invoices.count", agg="count"),
        _member("billing", "status", "Status", kind="string", alias="invoices.status"),
    ]
    cubes = _view("billing", "Billing", members)

    answer = _ask("How many invoices were voided?", cubes, lookup=statuses)

    assert isinstance(answer, Intent)
    assert [(c.member.name, c.values) for c in answer.conditions] == [("billing.status", ("void",))]


def test_a_period_that_has_not_begun_is_declined():
    answer = _ask("What will revenue be in Q4 2025?", _model(plain_date_on="ordered_at"))  # the clock: August 2025

    assert isinstance(answer, Decline)
    assert "not begun" in answer.reason


def test_values_joined_by_and_with_a_preposition_or_article_between_are_each_answered():
    answer = _ask("How many accounts signed up in 2024 in fintech and in retail?", _saas_model(), lookup=_saas_values)

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["ops.industry"]


def test_a_verb_saying_how_a_value_came_about_or_a_noun_adds_no_date_condition():
    members = [
        _member("wholesale", "avg_discount", "Average discount", kind="number", alias="lines.discount", agg="avg"),
        _member("wholesale", "ship_mode", "Ship mode", kind="string", alias="lines.ship_mode"),
        _member("wholesale", "ship_date", "Ship date", kind="time", alias="lines.ship_date"),
        _member("wholesale", "pay_method", "Payment method", kind="string", alias="lines.method"),
        _member("wholesale", "paid_at", "Payment date", kind="time", alias="lines.paid_at"),
    ]
    cubes = _view("wholesale", "Wholesale", members)

    async def modes(cube: str, dimension: str, candidates: Any) -> list[str]:
        return [c.upper() for c in candidates if dimension.endswith(".ship_mode") and c.lower() == "truck"]

    shipped = _ask("What is the average discount shipped by truck?", cubes, lookup=modes)

    assert isinstance(shipped, Intent)
    assert [(c.member.name, c.operator) for c in shipped.conditions] == [("wholesale.ship_mode", "equals")]


def test_a_verb_another_cube_of_the_model_names_is_never_dropped_by_a_cube_without_it():
    accounts = _cube(
        "accounts",
        "Accounts",
        ("count", "Accounts", "number", "count"),
        ("country", "Country", "string", ""),
        ("signed_up", "Signup date", "time", ""),
        synonyms=("customers",),
    )
    invoices = _cube(
        "invoices",
        "Invoices",
        ("count", "Invoices", "number", "count"),
        ("amount", "Invoiced amount", "number", "sum"),
        ("issued", "Invoice date", "time", ""),
    )

    async def countries(cube: str, dimension: str, candidates: Any) -> list[str]:
        return [c for c in candidates if dimension.endswith(".country") and c.lower() == "germany"]

    answer = _ask(
        "What was invoiced to customers based in Germany in 2024?",
        cubes_of({"cubes": [accounts, invoices]}),
        lookup=countries,
    )

    assert isinstance(answer, Decline)  # never the count of German accounts signed up in 2024


def test_a_thing_named_before_another_field_qualifies_it():
    members = [
        _member("wholesale", "revenue", "Revenue", kind="number", alias="lines.revenue", agg="sum"),
        _member("wholesale", "customer", "Customer", kind="string", alias="customers.name"),
        _member("wholesale", "nation", "Country", kind="string", alias="nations.name"),
    ]
    customers = {"name": "customers", "title": "Customers", "members": [{"name": "customers.name", "type": "string"}]}
    view = {"name": "wholesale", "title": "Wholesale", "type": "view", "members": members}

    answer = _ask("Which five customer countries generated the most revenue?", cubes_of({"cubes": [view, customers]}))

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["wholesale.nation"]
    assert (answer.limit, answer.descending) == (5, True)


def test_things_that_did_something_are_no_modifier():
    members = [
        _member("wholesale", "orders", "Orders", kind="number", alias="orders.count", agg="count"),
        _member("wholesale", "customer", "Customer", kind="string", alias="customers.name"),
        _member(
            "wholesale",
            "order_date",
            "Order date",
            kind="time",
            alias="orders.order_date",
            meta={"synonyms": ["placed on"]},
        ),
    ]
    customers = {"name": "customers", "title": "Customers", "members": [{"name": "customers.name", "type": "string"}]}
    view = {"name": "wholesale", "title": "Wholesale", "type": "view", "members": members}

    answer = _ask("How many different customers placed orders in 2024?", cubes_of({"cubes": [view, customers]}))

    assert isinstance(answer, Decline)  # no distinct count of customers here: never the count of orders


def test_customers_name_the_one_cube_its_description_says_holds_them():
    users = _cube(
        "users",
        "Users",
        ("count", "Users", "number", "count"),
        ("city", "City", "string", ""),
        ("signed_up_at", "Signed up at", "time", ""),
    )
    users["description"] = "People with an account in the shop; one row per customer."
    products = _cube("products", "Products", ("count", "Products", "number", "count"))
    products["description"] = "What the shop sells to its customers."  # a second cube saying it: no evidence

    one = _ask("How many customers signed up in 2024?", cubes_of({"cubes": [users]}))
    two = _ask("How many customers signed up in 2024?", cubes_of({"cubes": [users, products]}))

    assert isinstance(one, Intent)
    assert [m.name for m in one.measures] == ["users.count"]
    assert isinstance(two, Decline)


def _billing_model() -> list:
    """A view of invoices (two dates, an amount, a collection rate) and sessions' dimensions titled with notes."""
    members = [
        _member("ops", "invoiced", "Invoiced amount", kind="number", alias="invoices.amount", agg="sum"),
        _member("ops", "invoice_count", "Invoices", kind="number", alias="invoices.count", agg="count"),
        _member("ops", "paid_share", "Share paid", kind="number", alias="invoices.paid_share", agg="number"),
        _member("ops", "issued_at", "Invoice date", kind="time", alias="invoices.issued_at"),
        _member("ops", "paid_at", "Payment date", kind="time", alias="invoices.paid_at"),
        _member("ops", "device", "Device category", kind="string", alias="invoices.device"),
        _member("ops", "geo_ctry", "Country (geo-IP)", kind="string", alias="invoices.country"),
        _member("ops", "dflt_grp", "Default channel group", kind="string", alias="invoices.channel"),
        _member("ops", "channel_source", "Channel source", kind="string", alias="invoices.channel_source"),
    ]
    return _view("ops", "Ops", members)


def test_a_measure_titled_after_one_date_is_placed_by_that_date_and_a_ratio_never():
    cubes = _billing_model()

    amount = _ask("Total invoiced amount per month in 2025", cubes)
    ratio = _ask("Share paid per month in 2025", cubes)

    assert isinstance(amount, Intent)
    assert amount.time is not None
    assert amount.time.name == "ops.issued_at"
    assert isinstance(ratio, Decline)  # "Share paid" says paid, but a ratio of invoices is not dated by payment
    assert ratio.ambiguous


def test_a_dimension_is_named_by_its_title_without_a_note_or_classifying_words_when_nothing_else_says_them():
    cubes = _billing_model()

    device = _ask("Invoices by device type", cubes)
    country = _ask("Invoices per country", cubes)
    channel = _ask("Invoices by channel", cubes)

    assert isinstance(device, Intent)
    assert [g.name for g in device.groups] == ["ops.device"]
    assert isinstance(country, Intent)
    assert [g.name for g in country.groups] == ["ops.geo_ctry"]
    assert isinstance(channel, Decline)  # "channel" is in two titles: "Default channel group", "Channel source"


def test_a_share_or_an_average_of_a_count_is_never_answered_with_the_count():
    cubes = _model(plain_date_on="ordered_at")

    percent = _ask("what % of orders were shipped?", cubes, lookup=_statuses)
    average = _ask("avg order count by status", cubes, lookup=_statuses)

    assert isinstance(percent, Intent)  # the share of the orders that were, computed on the count of all of them
    assert [(c.member.name, c.values) for c in percent.share] == [("shop.status", ("shipped",))]
    assert percent.sql().startswith("SELECT 100.0 * COALESCE(SUM(CASE WHEN part_1 = 'shipped' THEN value END), 0)")
    assert isinstance(average, Decline)
    assert "average" in average.reason


def test_a_count_of_nothing_named_in_a_view_of_several_things_is_asked_back_and_its_cubes_never_guess():
    cubes = _with_orders_cube(_model(plain_date_on="ordered_at"))  # the view counts orders and customers

    unnamed = _ask("How many in 2024?", cubes)
    named = _ask("How many orders in 2024?", cubes)

    assert isinstance(unnamed, Decline)
    assert unnamed.ambiguous
    assert {"Orders", "Customers"} <= set(unnamed.choices)
    assert isinstance(named, Intent)
    assert [m.name for m in named.measures] == ["shop.order_count"]


def test_a_grain_adverb_before_a_participle_says_how_not_per_what():
    cubes = _model(plain_date_on="ordered_at")

    billed = _ask("Revenue from annually billed orders", cubes, lookup=_statuses)
    monthly = _ask("Monthly revenue in 2024", cubes, lookup=_statuses)
    named = _ask("Monthly invoiced amount in 2025", _billing_model())  # "invoiced amount" is the model's name

    assert isinstance(billed, Decline)  # never revenue per year
    assert "annually" in billed.reason
    assert isinstance(monthly, Intent)
    assert monthly.grain == "month"
    assert isinstance(named, Intent)
    assert named.grain == "month"


def test_two_whole_periods_of_one_grain_are_a_row_each_and_others_are_declined():
    cubes = _saas_model()

    years = _ask("How did signups in 2024 compare with 2023?", cubes, lookup=_saas_values)
    quarters = _ask("Compare new signups in Q1 2024 vs Q1 2025", cubes, lookup=_saas_values)
    uneven = _ask("signups in June 2024 vs Q1 2025", cubes, lookup=_saas_values)

    assert isinstance(years, Intent)  # adjacent: one range of the two, a row per year
    assert years.grain == "year"
    assert (years.date_range, years.compared) == (DateRange(date(2023, 1, 1), date(2025, 1, 1)), None)
    assert isinstance(quarters, Intent)  # apart: the two ranges, a row for each
    assert quarters.grain == "quarter"
    assert (quarters.date_range, quarters.compared) == (
        DateRange(date(2024, 1, 1), date(2024, 4, 1)),
        DateRange(date(2025, 1, 1), date(2025, 4, 1)),
    )
    assert "signup_ts < DATE '2024-04-01' OR signup_ts >= DATE '2025-01-01'" in quarters.sql()
    assert isinstance(uneven, Decline)  # a month against a quarter: no one grain gives a row for each


def test_a_follow_ups_period_is_on_the_threads_date_and_never_moves_a_period_named_on_another():
    cubes = _saas_model()
    first = _ask("How many subscriptions started in 2024?", cubes, lookup=_saas_values)
    assert isinstance(first, Intent)

    again = _ask("And in 2023?", cubes, previous=first, lookup=_saas_values)
    compared = _ask("and 2023 vs 2022?", cubes, previous=first, lookup=_saas_values)
    other_date = _ask("how many of those were canceled in 2025?", cubes, previous=first, lookup=_saas_values)

    assert isinstance(again, Intent)
    assert again.time == first.time
    assert again.date_range == DateRange(date(2023, 1, 1), date(2024, 1, 1))
    assert isinstance(compared, Intent)
    assert (compared.time, compared.grain) == (first.time, "year")
    assert (compared.date_range, compared.compared) == (DateRange(date(2022, 1, 1), date(2024, 1, 1)), None)
    assert isinstance(other_date, Decline)  # never the start date in 2025


def test_a_change_with_no_question_before_it_is_never_answered_as_a_question_of_its_own():
    cubes = _saas_model()

    fragment = _ask("just for fintech customers", cubes, lookup=_saas_values)
    whole = _ask("And how many subscriptions started in 2024?", cubes, lookup=_saas_values)

    assert isinstance(fragment, Decline)  # never the count of fintech accounts
    assert "earlier question" in fragment.reason
    assert isinstance(whole, Intent)


def test_a_word_of_a_dimensions_name_is_no_event_of_a_date():
    members = [
        _member("wh", "revenue", "Revenue", kind="number", alias="lines.revenue", agg="sum", format="currency"),
        _member("wh", "line_count", "Line items", kind="number", alias="lines.count", agg="count"),
        _member("wh", "ship_date", "Ship date", kind="time", alias="lines.ship_date"),
        _member("wh", "receipt_date", "Receipt date", kind="time", alias="lines.receipt_date"),
        _member("wh", "ship_mode", "Shipping method", kind="string", alias="lines.ship_mode"),
    ]
    cubes = _view("wh", "Wholesale", members)

    grouped = _ask("Revenue by shipping method in 2024", cubes)
    shipped = _ask("How many lines shipped in 2024 by shipping method?", cubes)

    assert isinstance(grouped, Decline)  # "shipping" names the method: which date is the revenue's is asked
    assert grouped.ambiguous
    assert isinstance(shipped, Intent)  # "shipped" is the event
    assert shipped.time is not None
    assert shipped.time.name == "wh.ship_date"


def _parts_model(*, with_average: bool = False) -> list:
    """A cube of parts: a count, a retail price and a size (numeric fields), a manufacturer; and, with
    ``with_average``, the model's own "Average retail price" measure."""
    members = [
        {"name": "parts.count", "title": "Parts", "type": "number", "aggType": "count"},
        {"name": "parts.retail_price", "title": "Retail price", "type": "number", "format": "currency"},
        {"name": "parts.size", "title": "Size", "type": "number"},
        {"name": "parts.mfgr", "title": "Manufacturer", "type": "string"},
    ]
    if with_average:
        members.append({"name": "parts.avg_price", "title": "Average retail price", "type": "number", "aggType": "avg"})
    return cubes_of({"cubes": [{"name": "parts", "title": "Parts", "members": members}]})


async def _manufacturers(cube: str, dimension: str, candidates: Any) -> list[str]:
    return ["Acme" for c in candidates if dimension.endswith(".mfgr") and c.lower() == "acme"]


def test_an_aggregation_word_on_a_numeric_field_aggregates_it_over_the_rows():
    average = _ask("What is the average retail price of Acme parts?", _parts_model(), lookup=_manufacturers)
    total = _ask("total size of all parts", _parts_model(), lookup=_manufacturers)

    assert isinstance(average, Intent)
    assert average.aggregate == "avg"
    assert average.sql() == (
        "SELECT AVG(value) AS avg FROM (SELECT retail_price AS value FROM parts WHERE mfgr = 'Acme') AS rows_"
    )
    assert isinstance(total, Intent)
    assert total.sql() == "SELECT SUM(value) AS sum FROM (SELECT size AS value FROM parts) AS rows_"


def test_a_numeric_field_the_model_has_a_measure_of_is_that_measure():
    average = _ask("average retail price of Acme parts", _parts_model(with_average=True), lookup=_manufacturers)

    assert isinstance(average, Intent)
    assert (average.aggregate, [m.name for m in average.measures]) == ("", ["parts.avg_price"])


def test_a_numeric_field_is_not_aggregated_per_group_nor_through_a_view_of_other_rows():
    grouped = _ask("average size by manufacturer", _parts_model(), lookup=_manufacturers)
    members = [
        _member("sales", "line_count", "Lines", kind="number", alias="lines.count", agg="count"),
        _member("sales", "size", "Size", kind="number", alias="parts.size"),
    ]
    through_view = _ask("average size", _view("sales", "Sales", members))

    assert isinstance(grouped, Decline)
    assert "without a grouping" in grouped.reason
    assert isinstance(through_view, Decline)  # a view's rows are its lines: a part's size would repeat per line
    assert "over the rows of parts" in through_view.reason


def test_which_has_more_of_values_compared_is_a_row_for_each():
    cubes = _model(plain_date_on="ordered_at")

    versus = _ask("shipped vs returned: which has more orders?", cubes, lookup=_statuses)
    either = _ask("Which has more orders, shipped or returned?", cubes, lookup=_statuses)
    one = _ask("shipped versus returned, which one has more revenue?", cubes, lookup=_statuses)

    for split in (versus, either, one):
        assert isinstance(split, Intent)
        assert [g.name for g in split.groups] == ["shop.status"]
        assert split.limit is None
        assert split.descending is None
        assert [set(c.values) for c in split.conditions] == [{"shipped", "returned"}]


def test_periods_compared_as_one_range_of_two_whole_units_are_a_row_for_each():
    compared = _ask("compare the number of orders in 2023 and 2024", _model(plain_date_on="ordered_at"))

    assert isinstance(compared, Intent)
    assert compared.grain == "year"
    assert compared.date_range == DateRange(date(2023, 1, 1), date(2025, 1, 1))


def test_a_period_without_its_year_joined_to_one_with_a_year_shares_it():
    quarters = _ask("compare orders in Q1 and Q2 2024", _model(plain_date_on="ordered_at"))
    months = _ask("orders in June vs July 2025", _model(plain_date_on="ordered_at"))

    assert isinstance(quarters, Intent)
    assert (quarters.grain, quarters.date_range) == ("quarter", DateRange(date(2024, 1, 1), date(2024, 7, 1)))
    assert isinstance(months, Intent)
    assert (months.grain, months.date_range) == ("month", DateRange(date(2025, 6, 1), date(2025, 8, 1)))


def test_a_value_naming_another_dates_event_asks_which_date():
    asked = _ask("How many shipped orders in 2024?", _model(plain_date_on="ordered_at"), lookup=_statuses)

    _assert_asked_between(asked, "Ordered at", "Shipped at")


def test_a_word_before_a_measures_title_that_makes_another_measures_title_is_that_one_measure():
    members = [
        _member("billing", "billed", "Invoiced amount", kind="number", alias="invoices.billed", agg="sum"),
        _member("billing", "net", "Net invoiced amount", kind="number", alias="invoices.net", agg="sum"),
        _member("billing", "issued_at", "Invoice date", kind="time", alias="invoices.issued_at"),
    ]
    members[0]["meta"] = {"synonyms": ["billings"]}

    net = _ask("net billings for March 2025", _view("billing", "Billing", members))

    assert isinstance(net, Intent)
    assert [m.name for m in net.measures] == ["billing.net"]


def test_chat_box_spellings_and_ordinal_days_are_read_as_meant():
    cubes = _model(plain_date_on="ordered_at")

    days = _ask("whats the no. of orders from June 1st to June 15th 2025", cubes)
    no_from = _ask("orders June 1st to June 15th, 2025 pls", cubes)

    for asked in (days, no_from):
        assert isinstance(asked, Intent)
        assert [m.name for m in asked.measures] == ["shop.order_count"]
        assert asked.date_range == DateRange(date(2025, 6, 1), date(2025, 6, 16))
        assert asked.grain is None


def test_a_field_is_named_by_the_label_its_description_opens_with():
    members = [
        _member("accounts", "count", "Accounts", kind="number", alias="accounts.count", agg="count"),
        _member(
            "accounts", "geo", "Geo", kind="string", alias="accounts.geo", description="Sales territory: EMEA or APAC."
        ),
        _member("accounts", "tier", "Tier", kind="string", alias="accounts.tier", description="Note: set by sales."),
    ]
    cubes = _view("accounts", "Accounts", members)

    by_label = _ask("accounts by sales territory", cubes)
    by_note = _ask("accounts by note", cubes)

    assert isinstance(by_label, Intent)
    assert [g.name for g in by_label.groups] == ["accounts.geo"]
    assert isinstance(by_note, Decline)  # "Note:" opens a remark, not a name


def test_new_things_of_a_period_are_those_the_period_counts_and_without_one_new_says_nothing_placed():
    dated = _ask("new customers in 2024", _model())
    undated = _ask("new customers", _model())

    assert isinstance(dated, Intent)
    assert [m.name for m in dated.measures] == ["shop.customer_count"]
    assert dated.time is not None
    assert dated.time.name == "shop.signed_up_at"
    assert isinstance(undated, Decline)
    assert "'new'" in undated.reason


def _billing_view() -> list:
    """Subscriptions (their count and status) with the invoices billed for them (pay method, invoice date): a
    subscription has many invoices, so grouped by an invoice's field it counts once per invoice."""
    return _view(
        "billing",
        "Billing",
        [
            _member("billing", "subs", "Subscriptions", kind="number", alias="subscriptions.count", agg="count"),
            _member("billing", "sub_status", "Status", kind="string", alias="subscriptions.status"),
            _member("billing", "pay_method", "Pay method", kind="string", alias="invoices.pay_method"),
            _member("billing", "started_at", "Start date", kind="time", alias="subscriptions.started_at"),
            _member("billing", "issued_at", "Invoice date", kind="time", alias="invoices.issued_at"),
        ],
    )


async def _billing_values(cube: str, dimension: str, candidates: Any) -> list[str]:
    held = {"card": ".pay_method", "wire": ".pay_method", "active": ".sub_status"}
    return [c for c in candidates if dimension.endswith(held.get(c.lower(), "-"))]


def test_a_share_or_difference_over_another_cubes_rows_is_declined_never_counted_twice():
    cubes = _billing_view()

    by_invoice = _ask("what share of subscriptions were paid by card?", cubes, lookup=_billing_values)
    own = _ask("what share of subscriptions are active?", cubes, lookup=_billing_values)
    days = _ask(
        "how many more subscriptions by invoice date in H1 2024 than in H1 2023?", cubes, lookup=_billing_values
    )

    assert isinstance(by_invoice, Decline)
    assert "pay method" in by_invoice.reason
    assert isinstance(own, Intent)
    assert [c.member.name for c in own.share] == ["billing.sub_status"]
    assert isinstance(days, Decline)


def test_a_follow_up_of_a_number_computed_from_a_query_is_declined():
    cubes = _billing_view()
    share = _ask("what share of subscriptions are active?", cubes, lookup=_billing_values)
    assert isinstance(share, Intent)

    follow_up = _ask("and for 2024?", cubes, previous=share, lookup=_billing_values)

    assert isinstance(follow_up, Decline)
    assert "ask the whole question" in follow_up.reason


def test_a_place_is_matched_by_its_other_spellings_only_in_a_field_of_places():
    members = [
        _member("stores", "count", "Stores", kind="number", alias="stores.count", agg="count"),
        _member("stores", "state", "State", kind="string", alias="stores.state"),
        _member("stores", "country", "Country", kind="string", alias="stores.country"),
    ]
    cubes = _view("stores", "Stores", members)

    async def codes(cube: str, dimension: str, candidates: Any) -> list[str]:
        held = {"state": {"CA"}, "country": {"DE"}}[dimension.rsplit(".", 1)[1]] if "." in dimension else set()
        return [c.upper() for c in candidates if c.upper() in held]

    german = _ask("how many German stores?", cubes, lookup=codes)
    canadian = _ask("how many Canadian stores?", cubes, lookup=codes)

    assert isinstance(german, Intent)
    assert [(c.member.name, c.values) for c in german.conditions] == [("stores.country", ("DE",))]
    assert isinstance(canadian, Decline)  # CA is a state here, not Canada


def test_a_share_a_view_refuses_is_not_answered_another_way_by_the_cubes_behind_it():
    view = {
        "name": "revops",
        "title": "Revenue operations",
        "type": "view",
        "members": [
            _member("revops", "subs", "Subscriptions", kind="number", alias="subscriptions.count", agg="count"),
            _member("revops", "tier", "Tier", kind="string", alias="accounts.tier"),
            _member("revops", "plan", "Plan", kind="string", alias="subscriptions.plan"),
        ],
    }
    behind = {
        "name": "subscriptions",
        "title": "Subscriptions",
        "members": [
            {"name": "subscriptions.count", "title": "Subscriptions", "type": "number", "aggType": "count"},
            {"name": "subscriptions.plan", "title": "Plan", "type": "string"},
        ],
    }

    async def enterprise(cube: str, dimension: str, candidates: Any) -> list[str]:
        on_view = dimension == "revops.tier"  # the view holds it as a tier; the cube behind, as a plan
        return [c for c in candidates if c.lower() == "enterprise" and (on_view or dimension.endswith(".plan"))]

    cubes = cubes_of({"cubes": [view, behind]})
    answer = _ask("what share of subscriptions are enterprise?", cubes, lookup=enterprise)

    assert isinstance(answer, Decline)
    assert "not over tier" in answer.reason


def test_a_range_of_days_without_its_year_is_one_range_and_one_it_cannot_read_is_declined():
    cubes = _model(plain_date_on="ordered_at")

    yearless = _ask("orders from June 1 to June 15", cubes)
    reversed_days = _ask("orders from June 15 to June 1, 2025", cubes)
    over_new_year = _ask("orders from December 1 to January 15", cubes)

    assert isinstance(yearless, Intent)  # June 2025 has begun on the clock (August 2025)
    assert yearless.date_range == DateRange(date(2025, 6, 1), date(2025, 6, 16))
    assert yearless.grain is None
    for declined in (reversed_days, over_new_year):  # never its two ends as two days
        assert isinstance(declined, Decline)
        assert "range of days" in declined.reason


def _dates_set_on(*always: str) -> Any:
    """What the data says of each date: every row of every measure has the dates named ``always``, and only those."""

    async def dates_set(cube: str, measure: str, dimension: str, zero_is_none: bool) -> bool:
        return dimension in always

    return dates_set


def _ask_with(question: str, cubes: list, *, dates_set: Any = None, lookup: Any = _no_values) -> Intent | Decline:
    return asyncio.run(understand(question, cubes, lookup, zone=UTC_ZONE, now=NOW, dates_set=dates_set))


def test_the_one_date_every_row_has_is_the_periods_when_no_word_names_a_date():
    """Orders always have their order date; the ship date is empty until they ship. "Revenue in 2024" is by the order
    date, and says so; a word naming the ship date still names it; two dates always set, or nothing known, is asked."""
    cubes = _model()

    by_data = _ask_with("Revenue in 2024", cubes, dates_set=_dates_set_on("shop.ordered_at"))
    shipped = _ask_with("Revenue shipped in 2024", cubes, dates_set=_dates_set_on("shop.ordered_at"))
    both = _ask_with("Revenue in 2024", cubes, dates_set=_dates_set_on("shop.ordered_at", "shop.signed_up_at"))
    unknown = _ask_with("Revenue in 2024", cubes)

    assert isinstance(by_data, Intent)
    assert by_data.time is not None
    assert by_data.time.name == "shop.ordered_at"
    assert "ordered at from 2024-01-01 to 2024-12-31" in by_data.computed().lower()
    assert isinstance(shipped, Intent)
    assert shipped.time is not None
    assert shipped.time.name == "shop.shipped_at"
    _assert_asked_between(both, "Ordered at", "Shipped at", "Signed up at")
    _assert_asked_between(unknown, "Ordered at", "Shipped at", "Signed up at")


def _saas_view(*, described_regions: bool = True) -> list:
    region = "Sales territory: North America, EMEA, APAC or LATAM." if described_regions else "Where it sits."
    members = [
        _member(
            "subs", "mrr", "MRR", kind="number", alias="s.mrr", agg="sum", meta={"synonyms": ["recurring revenue"]}
        ),
        _member("subs", "arr", "ARR", kind="number", alias="s.arr", agg="number"),
        _member("subs", "sub_count", "Subscriptions", kind="number", alias="s.count", agg="count"),
        _member("subs", "plan_code", "Plan", kind="string", alias="s.plan_code"),
        _member("subs", "geo", "Geo", kind="string", alias="a.geo", description=region),
        _member("subs", "supplier_nation", "Supplier nation", kind="string", alias="a.sn"),
        _member("subs", "days_to_pay", "Days to pay", kind="number", alias="i.days_to_pay"),
        _member("subs", "started_at", "Started at", kind="time", alias="s.started_at"),
    ]
    return _view("subs", "Subscriptions", members)


def test_a_measure_titled_with_an_acronym_is_named_by_the_words_it_stands_for():
    answer = _ask("What is our annual recurring revenue?", _saas_view())
    monthly = _ask("What is our recurring revenue?", _saas_view())

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["subs.arr"]
    assert answer.grain is None
    assert isinstance(monthly, Intent)
    assert [m.name for m in monthly.measures] == ["subs.mrr"]


def test_a_grain_word_before_a_fields_name_says_which_values_never_a_grain():
    async def plans(cube: str, dimension: str, candidates: Any) -> list[str]:
        return ["starter_monthly"] if dimension == "subs.plan_code" else []

    answer = _ask("How many subscriptions are on the starter monthly plan?", _saas_view(), lookup=plans)
    unplaced = _ask("How many subscriptions are on the monthly plan?", _saas_view())
    grained = _ask("Monthly MRR in 2024", _saas_view())

    assert isinstance(answer, Intent)
    assert answer.grain is None
    assert [(c.member.name, c.values) for c in answer.conditions] == [("subs.plan_code", ("starter_monthly",))]
    assert isinstance(unplaced, Decline)
    assert isinstance(grained, Intent)
    assert grained.grain == "month"


def test_an_amount_a_month_is_a_rate_never_a_grain():
    answer = _ask("How many subscriptions pay us more than $5,000 a month?", _saas_view())

    assert isinstance(answer, Decline)  # "pay" is no grouping by days to pay, and "a month" no grain


def test_top_without_a_number_before_a_singular_is_the_one():
    one = _ask("top plan by MRR", _saas_view())
    ten = _ask("top plans by MRR", _saas_view())

    assert isinstance(one, Intent)
    assert isinstance(ten, Intent)
    assert (one.limit, one.descending) == (1, True)
    assert (ten.limit, ten.descending) == (10, True)


def test_region_names_the_one_field_its_description_fills_with_the_worlds_regions():
    described = _ask("MRR by region", _saas_view())
    undescribed = _ask("MRR by region", _saas_view(described_regions=False))

    assert isinstance(described, Intent)
    assert [g.name for g in described.groups] == ["subs.geo"]
    assert isinstance(undescribed, Decline)


def test_country_and_nation_name_the_same_field():
    answer = _ask("MRR by supplier country", _saas_view())

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["subs.supplier_nation"]


def test_a_follow_ups_too_joins_its_grouping_to_the_threads_never_replaces_it():
    first = _ask("MRR by plan", _saas_view())
    assert isinstance(first, Intent)

    joined = _ask("break that down by region too", _saas_view(), previous=first)
    instead = _ask("break that down by region instead", _saas_view(), previous=first)

    assert isinstance(joined, Intent)
    assert [g.name for g in joined.groups] == ["subs.plan_code", "subs.geo"]
    assert isinstance(instead, Intent)
    assert [g.name for g in instead.groups] == ["subs.geo"]


def test_how_much_after_a_count_is_declined_never_answered_with_the_count():
    first = _ask("How many subscriptions per plan?", _saas_view())
    assert isinstance(first, Intent)

    answer = _ask("how much was billed to each of those?", _saas_view(), previous=first)
    counted = _ask("how many of those started in 2024?", _saas_view(), previous=first)

    assert isinstance(answer, Decline)
    assert "amount" in answer.reason
    assert isinstance(counted, Intent)


def test_things_after_on_across_values_and_fields_qualify_the_measure_and_add_none():
    async def enterprise(cube: str, dimension: str, candidates: Any) -> list[str]:
        return ["enterprise"] if dimension == "subs.plan_code" and "enterprise" in candidates else []

    answer = _ask("what's the ARR on our enterprise plan subscriptions?", _saas_view(), lookup=enterprise)
    both = _ask("ARR and subscriptions on the enterprise plan", _saas_view(), lookup=enterprise)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["subs.arr"]
    assert isinstance(both, Intent)
    assert [m.name for m in both.measures] == ["subs.arr", "subs.sub_count"]


def _orders_view() -> list:
    members = [
        _member("sales", "order_value", "Order value", kind="number", alias="o.value", agg="sum", format="currency"),
        _member("sales", "largest_order", "Largest order", kind="number", alias="o.max", agg="max", format="currency"),
        _member("sales", "avg_order", "Average order", kind="number", alias="o.avg", agg="avg", format="currency"),
        _member("sales", "order_count", "Orders", kind="number", alias="o.count", agg="count"),
        _member("sales", "buyers", "Customers who ordered", kind="number", alias="o.buyers", agg="countDistinct"),
        _member("sales", "cvr", "Session conversion rate (%)", kind="number", alias="o.cvr", agg="number"),
        _member("sales", "customer", "Customer", kind="string", alias="c.name"),
        _member("sales", "ordered_at", "Order date", kind="time", alias="o.ordered_at"),
    ]
    return _view("sales", "Sales", members)


def test_the_biggest_single_thing_is_the_models_largest_one_not_a_ranking():
    single = _ask("what was the biggest single order we ever had?", _orders_view())
    ranked = _ask("which customer had the most orders?", _orders_view())

    assert isinstance(single, Intent)
    assert [m.name for m in single.measures] == ["sales.largest_order"]
    assert single.descending is None
    assert isinstance(ranked, Intent)
    assert [m.name for m in ranked.measures] == ["sales.order_count"]
    assert ranked.descending is True


def test_a_measure_is_named_by_the_last_words_of_its_title():
    assert _measure_names(_ask("conversion rate in 2024", _orders_view())) == ["sales.cvr"]


def test_amount_after_a_money_measure_says_nothing_more():
    assert _measure_names(_ask("average order amount in 2024", _orders_view())) == ["sales.avg_order"]


def test_different_things_are_counted_by_the_distinct_count_named_like_them():
    answer = _ask("how many different customers placed an order in 2024?", _orders_view())

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["sales.buyers"]
    assert answer.groups == ()


def test_things_of_a_cube_the_view_does_not_hold_are_never_dropped():
    suppliers = {
        "name": "suppliers",
        "title": "Suppliers",
        "meta": {"synonyms": ["vendors"]},
        "members": [{"name": "suppliers.count", "title": "Suppliers", "type": "number", "aggType": "count"}],
    }
    cubes = [*_orders_view(), *cubes_of({"cubes": [suppliers]})]

    answer = _ask("number of vendors per customer", cubes)

    assert isinstance(answer, Decline)


def test_a_grain_word_after_on_says_which_values_never_a_grain():
    members = [
        _member("subs", "sub_count", "Subscriptions", kind="number", alias="s.count", agg="count"),
        _member("subs", "billed", "Billed", kind="number", alias="i.billed", agg="sum", format="currency"),
        _member(
            "subs",
            "billing_cycle",
            "Billing cycle",
            kind="string",
            alias="s.billing_cycle",
            meta={"synonyms": ["billing"]},
        ),
        _member("subs", "started_at", "Started at", kind="time", alias="s.started_at"),
    ]
    cubes = _view("subs", "Subscriptions", members)

    async def cycles(cube: str, dimension: str, candidates: Any) -> list[str]:
        return ["month"] if dimension == "subs.billing_cycle" and "month" in candidates else []

    answer = _ask("How many subscriptions are on monthly billing?", cubes, lookup=cycles)
    grained = _ask("monthly subscriptions in 2024", cubes, lookup=cycles)

    assert isinstance(answer, Intent)
    assert answer.grain is None
    assert [(c.member.name, c.values) for c in answer.conditions] == [("subs.billing_cycle", ("month",))]
    assert isinstance(grained, Intent)
    assert grained.grain == "month"


def test_best_or_worst_of_a_rate_is_asked_never_guessed():
    worst = _ask("which customer has the worst conversion rate?", _orders_view())
    best = _ask("best customers by order value", _orders_view())

    assert isinstance(worst, Decline)
    assert "highest or lowest" in worst.reason
    assert isinstance(best, Intent)
    assert best.descending is True


def test_that_before_a_fields_name_is_a_value_the_question_does_not_say():
    first = _ask("which plan brings in the most MRR?", _saas_view())
    assert isinstance(first, Intent)

    answer = _ask("and the top geo in that plan?", _saas_view(), previous=first)
    fresh = _ask("MRR in that plan", _saas_view())

    assert isinstance(answer, Decline)
    assert isinstance(fresh, Decline)


def test_a_field_named_beside_the_biggest_keeps_the_ranking():
    ranked = _ask("the customer with the highest order value", _orders_view())

    assert isinstance(ranked, Intent)
    assert [g.name for g in ranked.groups] == ["sales.customer"]
    assert (ranked.descending, ranked.limit) == (True, 1)


def test_a_date_of_the_measures_own_cube_is_never_chosen_by_the_data():
    """MRR in 2024: by the subscriptions' start date, or their cancellation date? Both are theirs: asked, even when
    the data says every subscription has a start date."""
    members = [
        _member("subs", "mrr", "MRR", kind="number", alias="subscriptions.mrr", agg="sum", format="currency"),
        _member("subs", "started_at", "Started at", kind="time", alias="subscriptions.started_at"),
        _member("subs", "canceled_at", "Canceled at", kind="time", alias="subscriptions.canceled_at"),
    ]
    cubes = _view("subs", "Subscriptions", members)

    answer = _ask_with("MRR in 2024", cubes, dates_set=_dates_set_on("subs.started_at"))

    _assert_asked_between(answer, "Started at", "Canceled at")


def test_a_grain_word_that_with_the_word_before_it_is_a_value_is_that_value():
    async def plans(cube: str, dimension: str, candidates: Any) -> list[str]:
        wanted = {c.lower() for c in candidates}
        held = ["starter_monthly"] if dimension == "subs.plan_code" else []
        return [v for v in held if v.replace("_", " ") in wanted]

    answer = _ask("starter monthly MRR", _saas_view(), lookup=plans)
    grained = _ask("monthly MRR", _saas_view(), lookup=plans)

    assert isinstance(answer, Intent)
    assert answer.grain is None
    assert [(c.member.name, c.values) for c in answer.conditions] == [("subs.plan_code", ("starter_monthly",))]
    assert isinstance(grained, Intent)
    assert grained.grain == "month"


def test_a_stray_contraction_is_declined_never_a_crash():
    answer = _ask("MRR by plan n't", _saas_view())

    assert isinstance(answer, Decline)


def _web_model() -> list:
    """Web traffic as teams name it in a hurry: members named by shortenings ("brwsr", "max_ord_rev"), some with no
    title of their own (the title is the name's), over a sessions cube people call "visits"."""

    def m(name: str, title: str, kind: str, alias: str, agg: str = "", **more: Any) -> dict:
        return _member("traffic", name, title, kind=kind, alias=alias, agg=agg, **more)

    money = {"format": "currency"}
    view = {
        "name": "traffic",
        "title": "Site traffic",
        "type": "view",
        "members": [
            m("sess_cnt", "Sessions", "number", "sessions.count", "count"),
            m("bounced_sessions", "Bounced sessions", "number", "sessions.bounced", "count"),
            m("avg_sess_dur_s", "Avg. session duration (s)", "number", "sessions.avg_dur", "avg"),
            m("txn_cnt", "Transactions", "number", "events.txn_cnt", "count"),
            m("signup_cnt", "Sign-ups", "number", "events.signup_cnt", "count"),
            m("aov", "AOV", "number", "events.aov", "avg", **money),
            m("max_ord_rev", "Max Ord Rev", "number", "events.max_ord_rev", "max", **money),
            m("min_ord_rev", "Min Ord Rev", "number", "events.min_ord_rev", "min", **money),
            m("brwsr", "Brwsr", "string", "sessions.brwsr"),
            m("part_no", "Part number", "string", "sessions.part_no"),
            m("dvc_cat", "Device category", "string", "sessions.dvc_cat"),
            m("geo_ctry", "Country", "string", "sessions.geo_ctry"),
            m("stat", "Stat", "string", "sessions.stat"),
            m("utm_cmp", "Utm Cmp", "string", "sessions.utm_cmp"),
            m("utm_src", "Utm Src", "string", "sessions.utm_src"),
            m("utm_med", "Utm Med", "string", "sessions.utm_med"),
            m("gross_rev", "Gross revenue", "number", "events.gross_rev", "sum", **money),
            m("unit", "Unit", "string", "sessions.unit"),
            m("sess_start_ts", "Session start", "time", "sessions.sess_start_ts"),
        ],
    }
    sessions = {
        "name": "sessions",
        "title": "Web sessions",
        "meta": {"synonyms": ["visits"]},
        "members": [{"name": "sessions.count", "title": "Sessions", "type": "number", "aggType": "count"}],
    }
    return cubes_of({"cubes": [view, sessions]})


def test_a_word_the_model_shortens_in_its_names_is_that_name():
    """ "brwsr" is the model's browser; a word a title of the model says in full ("part") shortens nothing."""
    by_browser = _ask("sessions by browser", _web_model())
    partner = _ask("sessions by partner", _web_model())

    assert isinstance(by_browser, Intent)
    assert [g.name for g in by_browser.groups] == ["traffic.brwsr"]
    assert [m.name for m in by_browser.measures] == ["traffic.sess_cnt"]
    assert isinstance(partner, Decline)


def test_an_english_word_is_never_read_as_a_shorter_name_it_starts_with():
    """The model's "stat" and "unit" do not shorten "states" and "united": a country is looked up whole."""

    async def countries(cube: str, dimension: str, candidates: Any) -> list[str]:
        wanted = {c.lower() for c in candidates}
        return ["United States"] if dimension == "traffic.geo_ctry" and "united states" in wanted else []

    for question in ("sessions from the United States", "sessions from the united states"):
        answer = _ask(question, _web_model(), lookup=countries)

        assert isinstance(answer, Intent), question
        assert answer.groups == ()
        assert [(c.member.name, c.values) for c in answer.conditions] == [("traffic.geo_ctry", ("United States",))]


def test_orders_and_purchases_are_the_models_one_count_of_transactions():
    orders = _ask("how many orders did we get in 2024?", _web_model())
    purchases = _ask("purchases by country", _web_model())

    assert isinstance(orders, Intent)
    assert [m.name for m in orders.measures] == ["traffic.txn_cnt"]
    assert isinstance(purchases, Intent)
    assert [m.name for m in purchases.measures] == ["traffic.txn_cnt"]


def test_the_biggest_or_cheapest_order_is_the_models_max_or_min_named_by_its_shortened_words():
    biggest = _ask("biggest single order we've ever had?", _web_model())
    cheapest = _ask("cheapest order last year", _web_model())

    assert isinstance(biggest, Intent)
    assert [m.name for m in biggest.measures] == ["traffic.max_ord_rev"]
    assert biggest.descending is None
    assert isinstance(cheapest, Intent)
    assert [m.name for m in cheapest.measures] == ["traffic.min_ord_rev"]


def test_average_order_value_is_the_acronym_never_an_average_of_something_else():
    """ "avg" starts the title "Avg. session duration (s)", but names no measure alone: "avg order value" is AOV."""
    plain = _ask("average order value", _web_model())
    ranked = _ask("rank devices by avg order value for 2024", _web_model())

    assert isinstance(plain, Intent)
    assert [m.name for m in plain.measures] == ["traffic.aov"]
    assert isinstance(ranked, Intent)
    assert [m.name for m in ranked.measures] == ["traffic.aov"]
    assert [g.name for g in ranked.groups] == ["traffic.dvc_cat"]
    assert ranked.descending is True
    assert ranked.limit is None


def test_a_hyphenated_title_is_named_by_its_words_joined():
    assert _measure_names(_ask("signups by country", _web_model())) == ["traffic.signup_cnt"]


def test_more_than_n_of_the_things_a_cube_names_is_a_condition_on_their_count():
    answer = _ask("which countries had more than 100 visits in 2024?", _web_model())

    assert isinstance(answer, Intent)
    assert [g.name for g in answer.groups] == ["traffic.geo_ctry"]
    assert [(c.member.name, c.operator, c.values) for c in answer.having] == [("traffic.sess_cnt", "gt", ("100",))]


def test_days_of_one_month_and_the_end_of_a_period_are_read_as_ranges():
    assert _period("daily visits for aug 1-7") == (date(2025, 8, 1), date(2025, 8, 8), True)
    assert _period("visits march 3-16 2025") == (date(2025, 3, 3), date(2025, 3, 17), False)
    assert _period("visits in dec 1-31") == (date(2024, 12, 1), date(2025, 1, 1), True)  # December 2025 not begun
    until = _ask("sessions up to the end of march 2024", _web_model())
    by_end = _ask("sessions by the end of 2023", _web_model())

    assert _range(until) == (None, date(2024, 4, 1))
    assert _range(by_end) == (None, date(2024, 1, 1))


def test_a_follow_up_naming_another_measure_asks_for_it():
    first = _ask("how many orders in june 2025?", _web_model())
    assert isinstance(first, Intent)

    answer = _ask("same for sign ups", _web_model(), previous=first)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["traffic.signup_cnt"]
    assert answer.date_range == first.date_range


def test_a_total_beside_a_count_must_say_of_what():
    both = _ask("sessions in march 2025, how many and total $?", _web_model())
    in_total = _ask("how many sessions in total in 2024", _web_model())

    assert isinstance(both, Decline)
    assert "'total'" in both.reason
    assert isinstance(in_total, Intent)
    assert [m.name for m in in_total.measures] == ["traffic.sess_cnt"]


def test_a_count_said_the_other_way_round_across_had_been():
    assert _measure_names(_ask("how many sessions had been bounced in 2024?", _web_model())) == [
        "traffic.bounced_sessions"
    ]


def _invoices_view(*, receivables: bool = True) -> list:
    members = [
        _member("inv", "inv_count", "Invoices", kind="number", alias="invoices.count", agg="count"),
        _member(
            "inv",
            "largest_invoice",
            "Largest invoice",
            kind="number",
            alias="invoices.largest",
            agg="max",
            format="currency",
        ),
        _member(
            "inv",
            "issued_at",
            "Invoice date",
            kind="time",
            alias="invoices.issued_at",
            meta={"synonyms": ["issue date"]},
        ),
        _member("inv", "paid_at", "Payment date", kind="time", alias="invoices.paid_at"),
        _member(
            "inv",
            "collected",
            "Collected",
            kind="number",
            alias="invoices.collected",
            agg="sum",
            format="currency",
            meta={"synonyms": ["cash collected", "payments received"]},
        ),
        _member("inv", "open_ar", "Open receivables", kind="number", alias="invoices.open_ar", agg="sum"),
        _member("inv", "status", "Status", kind="string", alias="invoices.status"),
    ]
    if not receivables:
        members = [m for m in members if m["name"] != "inv.open_ar"]
    return _view("inv", "Invoices", members)


def test_an_event_every_row_has_happened_adds_no_condition():
    """ "the largest invoice we ever issued": every invoice has its invoice date, so all of them; with that not known,
    those with the date set, as before."""
    known = _ask_with(
        "What's the largest invoice we've ever issued?", _invoices_view(), dates_set=_dates_set_on("inv.issued_at")
    )
    unknown = _ask_with("What's the largest invoice we've ever issued?", _invoices_view())

    assert isinstance(known, Intent)
    assert [m.name for m in known.measures] == ["inv.largest_invoice"]
    assert known.conditions == ()
    assert isinstance(unknown, Intent)
    assert [(c.member.name, c.operator) for c in unknown.conditions] == [("inv.issued_at", "set")]


async def _invoice_statuses(cube: str, dimension: str, candidates: Any) -> list[str]:
    wanted = {c.lower() for c in candidates}
    return [v for v in ("open", "paid", "void") if v in wanted] if dimension == "inv.status" else []


def test_an_amount_named_by_a_synonym_is_of_the_date_the_synonym_names():
    """ "Collected" is also "payments received": by the payment date; and "cash" alone names it."""
    answer = _ask("daily cash collected last week", _invoices_view())

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["inv.collected"]
    assert answer.time is not None
    assert answer.time.name == "inv.paid_at"
    assert answer.grain == "day"


def test_invoices_sent_or_that_went_out_are_the_invoices():
    for question in ("how many invoices did we send in 2024?", "how many invoices went out in 2024?"):
        answer = _ask(question, _invoices_view())

        assert isinstance(answer, Intent), question
        assert [m.name for m in answer.measures] == ["inv.inv_count"]
        assert answer.time is not None
        assert answer.time.name == "inv.issued_at"
        assert answer.conditions == ()


def test_still_says_nothing_of_its_own():
    answer = _ask("how many invoices are still open?", _invoices_view(receivables=False), lookup=_invoice_statuses)

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["inv.inv_count"]
    assert [(c.member.name, c.values) for c in answer.conditions] == [("inv.status", ("open",))]


def test_a_measure_named_beside_a_count_is_never_left_out():
    """ "open" names Open receivables (its title's first word) as well as a status: counting invoices and leaving the
    amount out would answer another question."""
    answer = _ask("how many open receivables invoices", _invoices_view())

    assert isinstance(answer, Decline)
    assert "open receivables" in answer.reason


def test_two_measures_compared_by_vs_are_both_asked_the_first_maybe_by_its_first_word():
    members = [
        _member("sales", "gross", "Gross sales", kind="number", alias="lines.gross", agg="sum", format="currency"),
        _member(
            "sales", "net", "Revenue", kind="number", alias="lines.net", agg="number", meta={"synonyms": ["net sales"]}
        ),
        _member("sales", "ordered_at", "Order date", kind="time", alias="orders.ordered_at"),
    ]
    cubes = _view("sales", "Sales", members)

    for question in ("gross vs net sales for Q4 2024", "gross sales vs net sales for Q4 2024"):
        answer = _ask(question, cubes)

        assert isinstance(answer, Intent), question
        assert [m.name for m in answer.measures] == ["sales.gross", "sales.net"]
        assert _range(answer) == (date(2024, 10, 1), date(2025, 1, 1))


def test_two_periods_one_after_the_other_by_a_named_grain_are_one_range():
    cubes = _model(plain_date_on="ordered_at")

    joined = _ask("orders per quarter, 2023 vs 2024", cubes)
    apart = _ask("orders per quarter, 2022 vs 2024", cubes)

    assert isinstance(joined, Intent)
    assert joined.grain == "quarter"
    assert _range(joined) == (date(2023, 1, 1), date(2025, 1, 1))
    assert isinstance(apart, Decline)


async def _mediums(cube: str, dimension: str, candidates: Any) -> list[str]:
    wanted = {c.lower() for c in candidates}
    return ["email"] if dimension == "traffic.utm_med" and wanted & {"email", "emails"} else []


def test_what_the_shortened_names_and_twins_must_never_answer():
    """Attacks on the readings above, each a confident wrong answer before it was a decline: an order's value is no
    count of orders; "cmp" shortens no "company" or "completed", "src" no "search", "arr" no "arrears"; "sent" of a
    value counts nothing; "the cheapest order" ranks no count."""
    for question in (
        "order value by country",
        "which country has the highest order value?",
        "sessions by company",
        "how many sessions completed a purchase?",
        "sessions from search",
        "which country had the cheapest order?",
    ):
        assert isinstance(_ask(question, _web_model()), Decline), question
    assert isinstance(_ask("how many emails were sent in 2024?", _web_model(), lookup=_mediums), Decline)
    assert isinstance(_ask("how much is in arrears?", _saas_view()), Decline)


def test_a_follow_up_naming_a_count_after_an_amount_is_asked_never_swapped_in():
    first = _ask("revenue by country", _web_model())
    assert isinstance(first, Intent)

    answer = _ask("what about for purchases?", _web_model(), previous=first)

    assert isinstance(answer, Decline)


def test_the_first_word_of_a_synonym_names_nothing_when_the_second_is_a_thing_of_the_model():
    view = {
        "name": "wholesale",
        "title": "Wholesale",
        "type": "view",
        "members": [
            {
                "name": "wholesale.buyers",
                "title": "Customers who ordered",
                "type": "number",
                "aggType": "countDistinct",
                "aliasMember": "orders.buyers",
                "meta": {"synonyms": ["active customers"]},
            },
            {"name": "wholesale.suppliers", "title": "Suppliers", "type": "number", "aggType": "count"},
            {"name": "wholesale.nation", "title": "Nation", "type": "string"},
        ],
    }
    customers = {"name": "customers", "title": "Customers", "members": []}
    cubes = cubes_of({"cubes": [view, customers]})

    assert isinstance(_ask("active suppliers by nation", cubes), Decline)
    named = _ask("active customers by nation", cubes)
    assert isinstance(named, Intent)
    assert [m.name for m in named.measures] == ["wholesale.buyers"]


def test_rank_from_lowest_to_highest_ranks_lowest_first():
    answer = _ask("rank countries from lowest to highest revenue", _web_model())

    assert isinstance(answer, Intent)
    assert answer.descending is False
    assert [m.name for m in answer.measures] == ["traffic.gross_rev"]


def test_a_follow_up_period_never_moves_to_a_year_where_it_has_not_begun():
    """ "Revenue in Q1" on 2025-08-20 is Q1 2025; "and in Q4?" is the latest Q4 begun, 2024's, not Q4 2025."""
    cubes = _model(plain_date_on="ordered_at")
    first = _ask("Revenue in Q1", cubes)
    assert isinstance(first, Intent)

    answer = _ask("and in Q4?", cubes, previous=first)

    assert _range(answer) == (date(2024, 10, 1), date(2025, 1, 1))


def test_break_that_down_splits_the_threads_rows_further():
    first = _ask("sessions by country", _web_model())
    assert isinstance(first, Intent)

    further = _ask("break that down by device", _web_model(), previous=first)
    instead = _ask("break that down by device instead", _web_model(), previous=first)

    assert isinstance(further, Intent)
    assert [g.name for g in further.groups] == ["traffic.geo_ctry", "traffic.dvc_cat"]
    assert isinstance(instead, Intent)
    assert [g.name for g in instead.groups] == ["traffic.dvc_cat"]


def test_a_place_found_on_one_things_field_never_qualifies_another_thing():
    """China is found as the customers' nation: "chinese vendors" is not "chinese customers"."""
    view = {
        "name": "wholesale",
        "title": "Wholesale",
        "type": "view",
        "members": [
            {
                "name": "wholesale.revenue",
                "title": "Revenue",
                "type": "number",
                "aggType": "sum",
                "aliasMember": "l.rev",
            },
            {
                "name": "wholesale.customer_nation",
                "title": "Customer nation",
                "type": "string",
                "aliasMember": "customers.nation",
            },
            {"name": "wholesale.supplier_name", "title": "Supplier", "type": "string", "aliasMember": "suppliers.name"},
        ],
    }
    customers = {"name": "customers", "title": "Customers", "members": []}
    suppliers = {"name": "suppliers", "title": "Suppliers", "meta": {"synonyms": ["vendors"]}, "members": []}
    cubes = cubes_of({"cubes": [view, customers, suppliers]})

    async def nations(cube: str, dimension: str, candidates: Any) -> list[str]:
        wanted = {c.lower() for c in candidates}
        return ["CHINA"] if dimension == "wholesale.customer_nation" and "china" in wanted else []

    vendors = _ask("revenue from chinese vendors", cubes, lookup=nations)
    customers_of = _ask("revenue from chinese customers", cubes, lookup=nations)

    assert isinstance(vendors, Decline)
    assert isinstance(customers_of, Intent)
    assert [(c.member.name, c.values) for c in customers_of.conditions] == [("wholesale.customer_nation", ("CHINA",))]


def _orders_by_customer() -> list:
    members = [
        _member("shop", "orders", "Orders", kind="number", alias="orders.count", agg="count"),
        _member(
            "shop", "largest", "Largest order", kind="number", alias="orders.largest", agg="max", format="currency"
        ),
        _member("shop", "revenue", "Revenue", kind="number", alias="orders.revenue", agg="sum", format="currency"),
        _member("shop", "customer", "Customer", kind="string", alias="customers.name"),
        _member("shop", "region", "Region", kind="string", alias="customers.region"),
        _member("shop", "ordered_at", "Order date", kind="time", alias="orders.ordered_at"),
    ]
    return _view("shop", "Shop", members)


def test_a_ranking_words_of_a_measures_name_stay_the_measures():
    answer = _ask("rank the customers by largest order", _orders_by_customer())

    assert isinstance(answer, Intent)
    assert [m.name for m in answer.measures] == ["shop.largest"]
    assert answer.descending is True


def test_all_but_a_value_is_never_that_value():
    async def regions(cube: str, dimension: str, candidates: Any) -> list[str]:
        return ["EUROPE"] if dimension == "shop.region" and "europe" in {c.lower() for c in candidates} else []

    answer = _ask("revenue in 2024 from all regions but EUROPE", _orders_by_customer(), lookup=regions)

    assert isinstance(answer, Decline)


def test_break_that_down_after_a_top_n_is_asked_back():
    first = _ask("top 5 customers by revenue in 2024", _orders_by_customer())
    assert isinstance(first, Intent)

    answer = _ask("break that down by month", _orders_by_customer(), previous=first)

    assert isinstance(answer, Decline)


def test_two_periods_by_a_coarser_grain_are_never_one_row():
    answer = _ask("revenue by year, January vs February 2024", _orders_by_customer())

    assert isinstance(answer, Decline)


def test_a_follow_up_period_not_begun_in_the_year_the_thread_named_is_asked():
    cubes = _model(plain_date_on="ordered_at")
    first = _ask("Revenue in Q1 2025", cubes)
    assert isinstance(first, Intent)

    assert isinstance(_ask("and in Q4?", cubes, previous=first), Decline)


def test_a_place_or_segment_of_the_customers_never_qualifies_the_suppliers_field():
    view = {
        "name": "wholesale",
        "title": "Wholesale",
        "type": "view",
        "members": [
            {
                "name": "wholesale.revenue",
                "title": "Revenue",
                "type": "number",
                "aggType": "sum",
                "aliasMember": "l.rev",
            },
            {"name": "wholesale.nation", "title": "Customer nation", "type": "string", "aliasMember": "customers.n"},
            {"name": "wholesale.segment", "title": "Market segment", "type": "string", "aliasMember": "customers.seg"},
            {"name": "wholesale.supplier", "title": "Supplier", "type": "string", "aliasMember": "suppliers.name"},
        ],
    }
    customers = {"name": "customers", "title": "Customers", "members": []}
    suppliers = {"name": "suppliers", "title": "Suppliers", "members": []}
    cubes = cubes_of({"cubes": [view, customers, suppliers]})

    async def values(cube: str, dimension: str, candidates: Any) -> list[str]:
        wanted = {c.lower() for c in candidates}
        if dimension == "wholesale.nation" and "china" in wanted:
            return ["CHINA"]
        return ["AUTOMOBILE"] if dimension == "wholesale.segment" and "automobile" in wanted else []

    assert isinstance(_ask("revenue from chinese suppliers in 2024", cubes, lookup=values), Decline)
    assert isinstance(_ask("revenue from AUTOMOBILE suppliers", cubes, lookup=values), Decline)
    customers_of = _ask("revenue from AUTOMOBILE customers", cubes, lookup=values)
    assert isinstance(customers_of, Intent)
    assert [(c.member.name, c.values) for c in customers_of.conditions] == [("wholesale.segment", ("AUTOMOBILE",))]

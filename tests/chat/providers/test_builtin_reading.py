"""How the built-in analyst reads a question against a model's words (no database: a serviceMeta result in,
a plan out)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from embedadmin.chat.providers.builtin import choose_plan, cubes_of, read_question, sql_for

NOW = datetime(2026, 11, 21, tzinfo=UTC)
META = {
    "cubes": [
        {
            "name": "tickets",
            "title": "Tickets",
            "type": "cube",
            "members": [
                {"name": "tickets.count", "title": "Tickets Count", "type": "number", "aggType": "count"},
                {
                    "name": "tickets.mttr",
                    "title": "Tickets MTTR",
                    "type": "number",
                    "aggType": "avg",
                    "description": "Mean time to resolve a support ticket, in hours.",
                },
                {"name": "tickets.priority", "title": "Tickets Priority", "type": "string"},
            ],
        }
    ]
}


def plan(question: str):
    return choose_plan(cubes_of(META), read_question(question, now=NOW), question)


def test_a_measure_named_only_by_its_description_is_found():
    found = plan("What is the mean time to resolve by priority?")

    assert [m.name for m in found.measures] == ["tickets.mttr"]
    assert [g.name for g in found.groups] == ["tickets.priority"]
    assert "MEASURE(mttr)" in sql_for(found)


@pytest.mark.parametrize("question", ["What is the mean by priority?", "Tell me about resolve rates"])
def test_one_shared_description_word_is_not_enough(question):
    assert plan(question) is None


def test_a_name_title_or_synonym_still_wins_over_a_description():
    found = plan("How many tickets by priority?")

    assert [m.name for m in found.measures] == ["tickets.count"]


TWO_CUBES = {
    "cubes": [
        {
            "name": "orders",
            "title": "Orders",
            "type": "cube",
            "members": [
                {"name": "orders.count", "title": "Orders Count", "type": "number", "aggType": "count"},
                {"name": "orders.revenue", "title": "Orders Revenue", "type": "number", "aggType": "sum"},
            ],
        },
        {
            "name": "refunds",
            "title": "Refunds",
            "type": "cube",
            "members": [
                {
                    "name": "refunds.amount",
                    "title": "Refunds Amount",
                    "type": "number",
                    "aggType": "sum",
                    "description": "Total revenue returned to customers, all refund reasons.",
                },
            ],
        },
    ]
}


@pytest.mark.parametrize(
    ("question", "measure"),
    [
        ("What is the total revenue?", "orders.revenue"),  # named beats described, even with fewer words
        ("How much revenue was returned to customers?", "orders.revenue"),
    ],
)
def test_a_measure_the_question_names_wins_over_one_found_by_its_description(question, measure):
    found = choose_plan(cubes_of(TWO_CUBES), read_question(question, now=NOW), question)

    assert [m.name for m in found.measures] == [measure]


def test_generic_words_alone_do_not_find_a_measure_by_its_description():
    meta = {"cubes": [TWO_CUBES["cubes"][1]]}

    def measure_for(question: str) -> str | None:
        found = choose_plan(cubes_of(meta), read_question(question, now=NOW), question)
        return found.measures[0].name if found else None

    assert measure_for("What is the total for all refund reasons?") == "refunds.amount"  # "refund", "reason"
    assert measure_for("What is the total for all?") is None  # "total" and "all" describe any measure

"""The columns of a compiled statement: select items, result columns and their SQL aliases."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from embedadmin.semantic.query.normalized import FilterCondition, FilterGroup, FilterNode

Role = Literal["measure", "dimension", "timeDimension"]
_ALIAS_UNSAFE = re.compile(r"[^a-z0-9_]")


@dataclass(frozen=True, slots=True)
class ResultColumn:
    """One column of the statement's result: its SQL alias and the row key(s) it fills."""

    alias: str
    key: str  # "orders.count", "orders.status", "orders.created_at.month"
    member: str  # the member name ("orders.created_at" for a time dimension)
    role: Role
    type: str  # number | string | time | boolean | geo
    granularity: str | None = None


@dataclass
class SelectItem:
    """A dimension (or time dimension) of the statement: its alias, row key, and how to build its SQL."""

    alias: str
    key: str  # the row key: member name, or "Cube.td.granularity"
    build: Callable[[], exp.Expr]


def column_alias(name: str, taken: set[str]) -> str:
    """A SQL alias for a member (``orders.created_at.month`` -> ``orders__created_at_month``), unique."""
    base = _ALIAS_UNSAFE.sub("_", name.lower().replace(".", "__", 1).replace(".", "_"))
    alias, index = base, 1
    while alias in taken:
        index += 1
        alias = f"{base}_{index}"
    taken.add(alias)
    return alias


def query_leaves(filters: Iterable[FilterNode]) -> list[FilterCondition]:
    """The leaves of a query's own filters, depth-first: the order ``filters.Origin.leaf`` counts in."""
    return [leaf for node in filters for leaf in filter_leaves(node)]


def filter_leaves(node: FilterNode) -> Iterable[FilterCondition]:
    if isinstance(node, FilterCondition):
        yield node
    elif isinstance(node, FilterGroup):
        for item in node.items:
            yield from filter_leaves(item)

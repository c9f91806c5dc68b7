"""One compiled statement for every query of the same *shape*: the same query but for its filter values.

A dashboard filter sends the same query again and again with another value, and compiling it (a sqlglot
tree, then its text) costs far more than binding new values. Every filter value is a bound parameter
(:mod:`.filters`), so the statement's text depends on a filter's values only through how many there are and
which are null. The builder records, for each parameter, the filter value it was bound from and how
(``CompiledQuery.origins``).
A query of a known shape is then :func:`rebind` of the statement compiled for another query of that shape:
the same text, with each recorded parameter bound again from the new query's values by the same function
(``filters.bound_value``).

``planning.compile_cached`` trusts a shape only after the rebinding has reproduced a full compile of a second
query of that shape with other values exactly (text, parameters and their types, columns); a shape that
ever differs is never rebound. The cache is keyed by shape alone (with the model version, the caller where
policies apply, and the year), so queries differing only in their values share one entry; it is bounded in
bytes (``LIMITS["COMPILED_QUERY_CACHE_BYTES"]``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from embedadmin.semantic.query.dates import resolve_timezone
from embedadmin.semantic.query.normalized import FilterCondition, FilterGroup, FilterNode, NormalizedQuery
from embedadmin.semantic.sql.builder import CompiledQuery
from embedadmin.semantic.sql.columns import query_leaves
from embedadmin.semantic.sql.filters import bound_value


def shape_of(query: NormalizedQuery) -> NormalizedQuery:
    """``query`` with each filter value masked: ``""`` for a value, None for a null."""
    return replace(query, filters=tuple(_masked(node) for node in query.filters))


def _masked(node: FilterNode) -> FilterNode:
    if isinstance(node, FilterCondition):
        if node.values is None:
            return node
        return FilterCondition(node.member, node.operator, tuple(None if v is None else "" for v in node.values))
    if isinstance(node, FilterGroup):
        return FilterGroup(node.kind, tuple(_masked(item) for item in node.items))
    return node


def covers(compiled: CompiledQuery) -> bool:
    """Whether every non-null filter value of the query was bound from (so a rebinding changes them all)."""
    used = {(origin.leaf, origin.index) for origin in compiled.origins if origin is not None}
    return all(
        (position, index) in used
        for position, leaf in enumerate(query_leaves(compiled.query.filters))
        for index, value in enumerate(leaf.values or ())
        if value is not None
    )


def rebind(template: CompiledQuery, query: NormalizedQuery) -> CompiledQuery:
    """``template``'s statement for ``query``, a query of the same shape."""
    leaves = query_leaves(query.filters)
    zone = resolve_timezone(query.timezone)
    params = list(template.params)
    for position, origin in enumerate(template.origins):
        if origin is not None:
            value = (leaves[origin.leaf].values or ())[origin.index]
            params[position] = bound_value(origin.how, origin.arg, value, zone)
    return replace(template, query=query, params=tuple(params))


def same_statement(a: CompiledQuery, b: CompiledQuery) -> bool:
    """Whether two compiled queries run the same statement with the same parameters (types included)."""

    def typed(params: tuple[Any, ...]) -> list[tuple[type, Any]]:
        return [(type(value), value) for value in params]

    return (
        a.sql == b.sql
        and a.total_sql == b.total_sql
        and a.columns == b.columns
        and a.hints == b.hints
        and a.origins == b.origins
        and typed(a.params) == typed(b.params)
    )

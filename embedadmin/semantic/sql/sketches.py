"""Mergeable distinct-count sketches: how a rollup kept in a data source stores a ``count_distinct_approx`` measure
where the source's dialect has one, so that a query grouping coarser than the rollup merges the sketches of its rows
and estimates the count (Cube's ``hllInit`` / ``hllMerge``, stored and merged in the source itself).

Each dialect's pair is written as SQL of that dialect with ``x`` standing for the argument, parsed once by sqlglot and
filled in as a syntax tree: ``state`` aggregates rows into a sketch (the rollup's build), ``estimate`` aggregates
sketches into the count (the query on the rollup). PostgreSQL and MySQL have no sketch without extensions, and the
DuckDB store none that can be kept in a table: a rollup there holds the count itself, matched exactly only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sqlglot
from sqlglot import exp

_ARGUMENT = "x"


@dataclass(frozen=True)
class Sketch:
    """A dialect's sketch functions, as SQL of that dialect over ``x``."""

    dialect: str
    state_sql: str
    estimate_sql: str

    def state(self, argument: exp.Expr) -> exp.Expr:
        """The aggregate that makes a sketch of ``argument``'s values (the rollup's column)."""
        return _filled(self.dialect, self.state_sql, argument)

    def estimate(self, sketches: exp.Expr) -> exp.Expr:
        """The aggregate that merges the sketches in ``sketches`` and estimates their distinct count."""
        return _filled(self.dialect, self.estimate_sql, sketches)


SKETCHES = {
    sketch.dialect: sketch
    for sketch in (
        # uniq: what the ClickHouse source answers for count_distinct_approx (Cube's countDistinctApprox there)
        Sketch("clickhouse", "uniqState(x)", "uniqMerge(x)"),
        # a HyperLogLog is kept as varbinary: Trino's connectors store no HyperLogLog column
        Sketch("trino", "CAST(approx_set(x) AS VARBINARY)", "cardinality(merge(CAST(x AS HyperLogLog)))"),
        Sketch("snowflake", "HLL_ACCUMULATE(x)", "HLL_ESTIMATE(HLL_COMBINE(x))"),
        Sketch("bigquery", "HLL_COUNT.INIT(x)", "HLL_COUNT.MERGE(x)"),
        Sketch("databricks", "hll_sketch_agg(x)", "hll_sketch_estimate(hll_union_agg(x))"),
    )
}


def sketch_of(dialect: str) -> Sketch | None:
    """The sketch a rollup kept in a ``dialect`` source stores ``count_distinct_approx`` measures as; None where
    there is none."""
    return SKETCHES.get(dialect)


@cache
def _template(dialect: str, sql: str) -> exp.Expr:
    return sqlglot.parse_one(sql, read=dialect)


def _filled(dialect: str, sql: str, argument: exp.Expr) -> exp.Expr:
    tree = _template(dialect, sql).copy()
    (slot,) = [c for c in tree.find_all(exp.Column) if c.name == _ARGUMENT and not c.table]
    slot.replace(argument.copy())
    return tree


__all__ = ["SKETCHES", "Sketch", "sketch_of"]

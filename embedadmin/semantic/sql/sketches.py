"""Mergeable distinct-count sketches: how a rollup kept in a data source stores a ``count_distinct_approx`` measure
where the source's dialect has one, so that a query grouping coarser than the rollup merges the sketches of its rows
and estimates the count (Cube's ``hllInit`` / ``hllMerge``, stored and merged in the source itself).

Each dialect's pair is written as SQL of that dialect with ``x`` standing for the argument, parsed once by sqlglot and
filled in as a syntax tree: ``state`` aggregates rows into a sketch (the rollup's build), ``estimate`` aggregates
sketches into the count (the query on the rollup). Trino's, BigQuery's and Databricks' states take a few types only
(no date, timestamp or decimal): a value of another type, or of a type not known (SQL other than a reference to a
dimension), is cast to text first, which keeps distinct values distinct. PostgreSQL and MySQL have no sketch without
extensions, and the DuckDB store none that can be kept in a table: a rollup there holds the count itself, matched
exactly only.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import sqlglot
from sqlglot import exp

_ARGUMENT = "x"


@dataclass(frozen=True)
class Sketch:
    """A dialect's sketch functions, as SQL of that dialect over ``x``; ``takes``: the value types (a dimension's) the
    state takes as they are, others cast to text (None: it takes any)."""

    dialect: str
    state_sql: str
    estimate_sql: str
    takes: frozenset[str] | None = None

    def state(self, argument: exp.Expr, value_type: str | None = None) -> exp.Expr:
        """The aggregate that makes a sketch of ``argument``'s values (the rollup's column); ``value_type``: their
        type where known (the type of the dimension ``argument`` is)."""
        if self.takes is not None and value_type not in self.takes:
            argument = exp.Cast(this=argument.copy(), to=exp.DataType.build("text"))
        return _filled(self.dialect, self.state_sql, argument)

    def estimate(self, sketches: exp.Expr) -> exp.Expr:
        """The aggregate that merges the sketches in ``sketches`` and estimates their distinct count."""
        return _filled(self.dialect, self.estimate_sql, sketches)


SKETCHES = {
    sketch.dialect: sketch
    for sketch in (
        # uniq: what the ClickHouse source answers for count_distinct_approx (Cube's countDistinctApprox there)
        Sketch("clickhouse", "uniqState(x)", "uniqMerge(x)"),
        # a HyperLogLog is kept as varbinary: Trino's connectors store no HyperLogLog column. approx_set takes
        # bigint, double and varchar (a number of another type is coerced to one of them)
        Sketch(
            "trino",
            "CAST(approx_set(x) AS VARBINARY)",
            "cardinality(merge(CAST(x AS HyperLogLog)))",
            frozenset({"string", "number"}),
        ),
        Sketch("snowflake", "HLL_ACCUMULATE(x)", "HLL_ESTIMATE(HLL_COMBINE(x))"),
        # INT64, NUMERIC, BIGNUMERIC, STRING, BYTES: not FLOAT64, which a number may be
        Sketch("bigquery", "HLL_COUNT.INIT(x)", "HLL_COUNT.MERGE(x)", frozenset({"string"})),
        # INT, BIGINT, STRING, BINARY: not DECIMAL or DOUBLE, which a number may be
        Sketch("databricks", "hll_sketch_agg(x)", "hll_sketch_estimate(hll_union_agg(x))", frozenset({"string"})),
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

"""Rolling-window measures (``rolling_window``): values over a window that moves with each time bucket.

As in Cube, the query's time dimension (with a granularity and a date range) gives a series of buckets
``(date_from, date_to)``; each bucket aggregates the rows whose time falls in its window:

- ``trailing: 7 day`` (offset ``end``, the default): ``t > date_to - 7 days AND t <= date_to``;
  ``trailing: unbounded``: everything up to ``date_to`` (a running total); ``leading`` extends forwards;
- ``offset: start``: ``t >= date_from - trailing AND t < date_from + leading``;
- ``type: year_to_date`` / ``quarter_to_date`` / ``month_to_date`` / ``to_date`` (with ``granularity``):
  from the start of ``date_to``'s year/quarter/month/... up to ``date_to``.

The series is generated from the query's date range (bucket bounds are constants computed here); rows are
read once, with the query's other filters, in a ``base`` subquery joined to the series by the windows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dateutil.relativedelta import relativedelta
from sqlglot import exp

from embedadmin.semantic.errors import QueryError
from embedadmin.semantic.modeling.intervals import parse_interval
from embedadmin.semantic.modeling.model import Granularity, Measure, RollingWindow
from embedadmin.semantic.query.dates import format_local, parse_local, start_of, unit_delta
from embedadmin.semantic.sql.expressions import TIMESTAMP, Renderer, all_of

MAX_BUCKETS = 50_000
_TO_DATE = {"year_to_date": "year", "quarter_to_date": "quarter", "month_to_date": "month"}


def buckets(
    renderer: Renderer, dimension_granularities: dict[str, Granularity], granularity: str, date_range: tuple[str, str]
) -> list[tuple[datetime, datetime]]:
    """``(date_from, date_to)`` of every bucket that overlaps the local ``date_range``."""
    first, last = parse_local(date_range[0]), parse_local(date_range[1])
    custom = dimension_granularities.get(granularity)
    if custom is None:
        current = start_of(first, granularity)
        step = unit_delta(granularity, 1)
    else:
        origin = renderer.granularity_origin(custom)
        interval = custom.interval
        if interval.months:
            months = (first.year - origin.year) * 12 + first.month - origin.month
            if origin + relativedelta(months=months) > first:
                months -= 1
            current = origin + relativedelta(months=months // interval.months * interval.months)
            step = relativedelta(months=interval.months)
        else:
            elapsed = (first - origin).total_seconds()
            current = origin + timedelta(seconds=elapsed // interval.seconds * interval.seconds)
            step = relativedelta(seconds=interval.seconds)
    result = []
    while current <= last:
        following = current + step
        result.append((current, following - timedelta(milliseconds=1)))
        if len(result) > MAX_BUCKETS:
            raise QueryError(f"The date range has more than {MAX_BUCKETS} {granularity} buckets")
        current = following
    return result


def series_source(series: list[tuple[datetime, datetime]]) -> exp.Expr:
    """``(VALUES (...), ...) AS series(date_from, date_to)``."""
    rows = [exp.Tuple(expressions=[_timestamp(start), _timestamp(end)]) for start, end in series]
    return exp.Values(
        expressions=rows,
        alias=exp.TableAlias(
            this=exp.to_identifier("series"), columns=[exp.to_identifier("date_from"), exp.to_identifier("date_to")]
        ),
    )


def _timestamp(moment: datetime) -> exp.Expr:
    return exp.Cast(this=exp.Literal.string(format_local(moment)), to=TIMESTAMP.copy())


def _shift(value: exp.Expr, interval_text: str, sign: int) -> exp.Expr:
    interval = parse_interval(interval_text)
    shifted = value
    for unit, amount in interval.parts:
        literal = exp.Interval(this=exp.Literal.string(str(amount)), unit=exp.var(unit.upper()))
        shifted = exp.Add(this=shifted, expression=literal) if sign > 0 else exp.Sub(this=shifted, expression=literal)
    return shifted


def window_condition(window: RollingWindow, time: exp.Expr) -> exp.Expr:
    """The rows of one bucket (columns ``series.date_from``/``series.date_to``) for ``window``."""
    date_from = exp.column("date_from", table="series")
    date_to = exp.column("date_to", table="series")
    to_date = _TO_DATE.get(window.type or "") or (window.granularity if window.type == "to_date" else None)
    if to_date is not None:
        start = exp.TimestampTrunc(this=date_to.copy(), unit=exp.var(to_date.upper()))
        return all_of(exp.GTE(this=time.copy(), expression=start), exp.LTE(this=time.copy(), expression=date_to))
    anchor_end = window.offset == "end"
    anchor = date_to if anchor_end else date_from
    conditions: list[exp.Expr] = []
    if window.trailing != "unbounded":
        lower = _shift(anchor.copy(), window.trailing, -1) if window.trailing else anchor.copy()
        comparison: type[exp.Binary] = exp.GT if anchor_end else exp.GTE
        conditions.append(comparison(this=time.copy(), expression=lower))
    if window.leading != "unbounded":
        upper = _shift(anchor.copy(), window.leading, +1) if window.leading else anchor.copy()
        comparison = exp.LTE if anchor_end else exp.LT
        conditions.append(comparison(this=time.copy(), expression=upper))
    return all_of(*conditions) if conditions else exp.true()


def read_bounds(windows: list[RollingWindow], date_range: tuple[str, str]) -> tuple[str | None, str | None]:
    """Local bounds of the rows any window of the series can use (None: unbounded on that side)."""
    first, last = parse_local(date_range[0]), parse_local(date_range[1])
    lowest: datetime | None = first
    highest: datetime | None = last
    for window in windows:
        if window.type is not None:
            unit = _TO_DATE.get(window.type) or window.granularity or "year"
            lowest = min(lowest, start_of(first, unit)) if lowest else None
        elif window.trailing == "unbounded":
            lowest = None
        elif lowest is not None:
            lowest = min(lowest, _subtract(first, window.trailing))
        if window.leading == "unbounded":
            highest = None
        elif window.leading and highest is not None:
            highest = max(highest, _subtract(last, window.leading, sign=+1))
    return (format_local(lowest) if lowest else None, format_local(highest) if highest else None)


def _subtract(moment: datetime, interval_text: str | None, sign: int = -1) -> datetime:
    if not interval_text:
        return moment
    interval = parse_interval(interval_text)
    return moment + relativedelta(months=sign * interval.months, seconds=sign * interval.seconds)


def row_value(renderer: Renderer, measure: Measure) -> exp.Expr:
    """What each row contributes to a rolling measure (aggregated per bucket by :func:`bucket_aggregate`)."""
    if measure.type in ("number", "string", "time", "boolean"):
        raise QueryError(f"rolling_window measure '{measure.full_name}' must aggregate (count, sum, avg, min, max...)")
    condition = renderer.filter_condition(measure)
    if measure.sql is None:
        keys = renderer.model.entities[measure.entity].primary_keys
        value = renderer.primary_key(measure.entity) if len(keys) == 1 else exp.Literal.number(1)
    else:
        value = renderer.snippet(measure.sql)
    return value if condition is None else exp.Case().when(condition, value)


def bucket_aggregate(measure: Measure, value: exp.Expr) -> exp.Expr:
    if measure.type in ("count_distinct", "count_distinct_approx"):
        return exp.Count(this=exp.Distinct(expressions=[value]))
    function = {"count": exp.Count, "sum": exp.Sum, "avg": exp.Avg, "min": exp.Min, "max": exp.Max}[measure.type]
    return function(this=value)


__all__ = ["bucket_aggregate", "buckets", "read_bounds", "row_value", "series_source", "window_condition"]

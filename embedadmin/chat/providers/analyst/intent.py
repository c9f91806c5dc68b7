"""What the analyst understood a question to ask (an :class:`Intent`), the semantic SQL that computes it, and the
plain words that say what was computed; or why it declined (a :class:`Decline`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import timedelta

from embedadmin.chat.providers.analyst.dates import DateRange, period_grain
from embedadmin.chat.providers.analyst.model_phrases import Cube, Member
from embedadmin.semantic.cubesql.written import sql_string

OPERATOR_SQL = {"equals": "=", "notEquals": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
OPERATOR_WORDS = {
    "equals": "is",
    "notEquals": "is not",
    "gt": "over",
    "gte": "at least",
    "lt": "under",
    "lte": "at most",
}


@dataclass(frozen=True)
class Condition:
    """A filter: ``member operator values`` (values as the data holds them, or a number's text)."""

    member: Member
    operator: str
    values: tuple[str, ...]
    numeric: bool = False
    at: int = field(default=-1, compare=False)  # the question's first word it was read from (-1: none)

    def sql(self) -> str:
        return self.sql_on(f"MEASURE({self.member.column})" if self.member.is_measure else self.member.column)

    def sql_on(self, column: str) -> str:
        """The test on ``column`` (the member's own, or a subquery's column holding its values)."""
        if self.operator == "set":
            return f"{column} IS NOT NULL"
        if self.numeric:
            return f"{column} {OPERATOR_SQL[self.operator]} {self.values[0]}"
        if self.member.type == "boolean":
            return f"{column} = {self.values[0]}"
        if len(self.values) == 1:
            return f"{column} {OPERATOR_SQL[self.operator]} {sql_string(self.values[0])}"
        listed = ", ".join(sql_string(v) for v in self.values)
        return f"{column} {'NOT IN' if self.operator == 'notEquals' else 'IN'} ({listed})"

    def words(self) -> str:
        if self.operator == "set":
            return f"{self.member.title.lower()} is set"
        if self.member.type == "boolean":
            return f"{self.member.title.lower()} is {self.values[0].lower()}"
        shown = " or ".join(self.values)
        return f"{self.member.title.lower()} {OPERATOR_WORDS[self.operator]} {shown}"


@dataclass(frozen=True)
class DashboardCondition:
    """A filter of the dashboard the question is asked from, placed on a member of the answer's cube or view: its
    semantic SQL (a ``WHERE`` test, or a ``HAVING`` one on a measure) and its plain words."""

    member: Member
    test: str
    words: str

    @property
    def on_measure(self) -> bool:
        return self.member.is_measure


AGGREGATE_FUNCTIONS = {"avg": "AVG", "sum": "SUM", "min": "MIN", "max": "MAX"}
AGGREGATE_WORDS = {"avg": "average", "sum": "total", "min": "lowest", "max": "highest"}
# Measures whose value over a set of rows is the sum of their values over its parts.
ADDITIVE = frozenset({"sum", "count"})


@dataclass(frozen=True)
class Intent:
    """One Cube query: measures by groups (and a time grain), under conditions and a date range, ranked; or a
    number computed on one such query's rows (semantic SQL post-processing): the ``share`` (%) of the measure that
    meets some conditions, or the ``difference`` of the measure between two periods."""

    cube: Cube
    measures: tuple[Member, ...]
    groups: tuple[Member, ...] = ()
    conditions: tuple[Condition, ...] = ()
    having: tuple[Condition, ...] = ()
    time: Member | None = None
    grain: str | None = None
    date_range: DateRange | None = None
    compared: DateRange | None = None  # a second period of the grain, after date_range: a row for each
    descending: bool | None = None  # ranked by the first measure; None: in the natural order
    limit: int | None = None
    timezone: str = "UTC"
    grain_title: str = ""  # a custom granularity's title
    # The dashboard's filters, ANDed with what the question asks (``context.py``), and the words of those left out.
    dashboard_filters: tuple[DashboardCondition, ...] = ()
    left_out: tuple[str, ...] = ()
    # The part whose share of the measure is asked ("what % of paid invoices were paid by card": by card).
    share: tuple[Condition, ...] = ()
    # 1: the measure in date_range minus in compared ("how much more in 2024 than in 2023"); -1: the other way.
    difference: int = 0
    # "avg", "sum": the one member of ``measures`` is a numeric dimension, aggregated over the cube's rows.
    aggregate: str = ""
    # the date range is a month, quarter or half named without its year (the latest one begun)
    yearless: bool = False

    @property
    def computes(self) -> bool:
        """Whether the answer is one number computed on the query's rows (a share, a difference, an aggregate)."""
        return bool(self.share or self.difference or self.aggregate)

    def replaced(self, **changes: object) -> Intent:
        return replace(self, **changes)  # type: ignore[arg-type]

    @property
    def keys(self) -> int:
        """Columns before the measures: the time bucket, then the groups."""
        return (1 if self.grain else 0) + len(self.groups)

    def sql(self) -> str:
        """The semantic SQL statement (run by the Core Data API, never on a database as it is)."""
        if self.share:
            return self._share_sql()
        if self.aggregate:
            return self._aggregate_sql()
        if self.difference:
            return self._difference_sql()
        return self._query_sql()

    def _share_sql(self) -> str:
        """``100 * (the measure where the part's conditions hold) / (the measure)``, on rows grouped by the part's
        members (the measure adds up over them: ADDITIVE)."""
        members = list(dict.fromkeys(c.member for c in self.share))
        names = {m: f"part_{i}" for i, m in enumerate(members, 1)}
        inner = self.replaced(measures=self.measures[:1], groups=tuple(members), share=(), descending=None, limit=None)
        test = " AND ".join(c.sql_on(names[c.member]) for c in self.share)
        part = f"COALESCE(SUM(CASE WHEN {test} THEN value END), 0)"
        return (
            f"SELECT 100.0 * {part} / NULLIF(SUM(value), 0) AS share "  # noqa: S608 (semantic SQL over model names)
            f"FROM ({inner._query_sql(aliases=[*names.values(), 'value'])}) AS parts"
        )

    def _difference_sql(self) -> str:
        """The measure in one period minus in the other, on rows grouped by the grain both periods are whole units
        of (any measure), else by day (ADDITIVE measures, summed over each period's days)."""
        assert self.date_range is not None
        assert self.compared is not None
        whole = period_grain(self.date_range, self.compared)
        inner = self.replaced(grain=whole[0] if whole else "day", difference=0, descending=None, limit=None)
        additive = self.measures[0].agg_type in ADDITIVE

        def within(period: DateRange) -> str:
            total = f"SUM(CASE WHEN {_period_sql('period', period, literal='TIMESTAMP')} THEN value END)"
            return f"COALESCE({total}, 0)" if additive else total

        first, second = within(self.date_range), within(self.compared)
        computed = f"{first} - {second}" if self.difference > 0 else f"{second} - {first}"
        return (
            f"SELECT {computed} AS difference "  # noqa: S608 (semantic SQL over model names)
            f"FROM ({inner._query_sql(aliases=['period', 'value'])}) AS periods"
        )

    def _aggregate_sql(self) -> str:
        """``AVG`` (``SUM``, ``MIN``, ``MAX``) of a numeric field over the cube's rows, one row each (ungrouped)."""
        function = AGGREGATE_FUNCTIONS[self.aggregate]
        rows = f"SELECT {self.measures[0].column} AS value FROM {self.cube.name}"  # noqa: S608 (semantic SQL)
        where = self._where()
        if where:
            rows += " WHERE " + " AND ".join(where)
        return f"SELECT {function}(value) AS {function.lower()} FROM ({rows}) AS rows_"  # noqa: S608 (semantic SQL)

    def _where(self) -> list[str]:
        where = [c.sql() for c in self.conditions]
        if self.date_range is not None and self.time is not None:
            tests = [_period_sql(self.time.column, p) for p in (self.date_range, self.compared) if p is not None]
            where.append(f"({tests[0]} OR {tests[1]})" if len(tests) == 2 else tests[0])
        return where + [d.test for d in self.dashboard_filters if not d.on_measure]

    def _query_sql(self, aliases: list[str] | None = None) -> str:
        columns: list[str] = []
        if self.grain and self.time is not None:
            columns.append(f"DATE_TRUNC('{self.grain}', {self.time.column})")
        columns += [g.column for g in self.groups]
        columns += [f"MEASURE({m.column})" for m in self.measures]
        if aliases is not None:
            columns = [f"{column} AS {alias}" for column, alias in zip(columns, aliases, strict=True)]
        where = self._where()
        having = [c.sql() for c in self.having] + [d.test for d in self.dashboard_filters if d.on_measure]
        sql = f"SELECT {', '.join(columns)} FROM {self.cube.name}"  # noqa: S608 (semantic SQL over model names)
        if where:
            sql += " WHERE " + " AND ".join(where)
        if self.keys:
            sql += " GROUP BY " + ", ".join(str(i) for i in range(1, self.keys + 1))
        if having:
            sql += " HAVING " + " AND ".join(having)
        if self.descending is not None:
            sql += f" ORDER BY {self.keys + 1} {'DESC' if self.descending else 'ASC'}"
            sql += "".join(f", {i}" for i in range(1, self.keys + 1))
        elif self.keys:
            sql += " ORDER BY " + ", ".join(str(i) for i in range(1, self.keys + 1))
        if self.limit is not None:
            sql += f" LIMIT {self.limit}"
        return sql

    def title(self) -> str:
        """``Revenue by product category``: what the query answers, in a few words."""
        if self.share:
            return f"Share of {self.measures[0].title} where {' and '.join(c.words() for c in self.share)}"
        if self.aggregate:
            return f"{AGGREGATE_WORDS[self.aggregate].capitalize()} {self.measures[0].title}"
        if self.difference:
            assert self.date_range is not None
            assert self.compared is not None
            first, second = _period_words(self.date_range), _period_words(self.compared)
            later, earlier = (first, second) if self.difference > 0 else (second, first)
            return f"{self.measures[0].title}, {later} minus {earlier}"
        first, *others = [m.title for m in self.measures]
        text = " and ".join([first, *(in_sentence(title) for title in others)])
        by = ([self.grain_title or self.grain] if self.grain else []) + [g.title.lower() for g in self.groups]
        if by:
            text += " by " + " and ".join(by)
        return text

    def computed(self) -> str:
        """What was computed, in plain words a reader can check: measures, grouping, filters, dates, time zone."""
        measures = ", ".join(f"{m.title} ({describe_aggregation(m)})" for m in self.measures)
        if self.aggregate:
            measures = f"the {AGGREGATE_WORDS[self.aggregate]} of {self.measures[0].title} over its rows"
        elif self.share:
            part = " and ".join(c.words() for c in self.share)
            measures = f"the percentage of {measures} where {part}, out of all of it"
        elif self.difference:
            measures = f"the difference in {measures} between the two periods ({self.title()})"
        parts = [f"{measures} from {self.cube.title}"]
        by = (
            [f"{self.grain_title or self.grain} of {self.time.title.lower()}"] if self.grain and self.time else []
        ) + [g.title.lower() for g in self.groups]
        if by:
            parts.append("by " + " and ".join(by))
        conditions = [c.words() for c in (*self.conditions, *self.having)]
        if conditions:
            parts.append("where " + " and ".join(conditions))
        if self.date_range is not None and self.time is not None:
            periods = [_period_words(p) for p in (self.date_range, self.compared) if p is not None]
            parts.append(f"{self.time.title.lower()} {' and '.join(periods)}")
        if self.descending is not None:
            first = self.measures[0].title.lower()
            ranked = f"ranked by {first}, {'highest' if self.descending else 'lowest'} first"
            parts.append(ranked + (f", top {self.limit}" if self.limit is not None else ""))
        elif self.limit is not None:
            parts.append(f"first {self.limit}")
        if self.dashboard_filters:
            parts.append("within the dashboard's filters: " + ", ".join(d.words for d in self.dashboard_filters))
        text = "Computed: " + ", ".join(parts) + f" (time zone {self.timezone})."
        if self.left_out:
            text += " Left out of the dashboard's filters: " + "; ".join(self.left_out) + "."
        return text


def _period_sql(column: str, period: DateRange, *, literal: str = "DATE") -> str:
    """``column >= DATE '2024-01-01' AND column < DATE '2025-01-01'``: a range's days, open sides left out."""
    tests = []
    if period.start is not None:
        tests.append(f"{column} >= {literal} '{period.start.isoformat()}'")
    if period.end is not None:
        tests.append(f"{column} < {literal} '{period.end.isoformat()}'")
    return " AND ".join(tests)


def _period_words(period: DateRange) -> str:
    """``from 2024-01-01 to 2024-12-31``, ``from 2024-01-01 on``, ``before 2024-01-01``: a range's days."""
    start = period.start.isoformat() if period.start is not None else ""
    last = (period.end - timedelta(days=1)).isoformat() if period.end is not None else ""
    if start and last:
        return f"from {start} to {last}"
    return f"from {start} on" if start else f"up to {last}"


def in_sentence(title: str) -> str:
    """A title inside a sentence: "Order value" -> "order value"; an acronym ("GMV") or a name ("EMEA revenue") kept."""
    return title[:1].lower() + title[1:] if title[1:2].islower() else title


def describe_aggregation(member: Member) -> str:
    return {
        "count": "count",
        "countDistinct": "distinct count",
        "countDistinctApprox": "approximate distinct count",
        "sum": "sum",
        "avg": "average",
        "min": "minimum",
        "max": "maximum",
        "number": "calculated",
    }.get(member.agg_type, member.agg_type or "measure")


@dataclass(frozen=True)
class Decline:
    """Why the analyst does not answer: what it could not place or compute, and what it can answer about."""

    reason: str
    ambiguous: bool = False  # the words have several readings in the model (not: the model lacks something)
    # read, and refused for a reason of the view's rows: the cubes behind the view must not answer it another way
    final: bool = False
    choices: tuple[str, ...] = ()  # titles of members one of which the question could name to be answered
    unplaced: tuple[str, ...] = ()  # the words no member, value or date placed
    suggestions: tuple[str, ...] = ()  # questions like the one asked that the analyst answers (checked)

"""The built-in provider: an analyst that answers a question about the data offline and deterministically.

It reads the question for what needs no model (time grain, a year, ``top N``, a place after ``in``), calls
``serviceMeta`` with the question to learn the cubes and members this user may see, finds the phrases of the
question that name members (names, titles, ``meta`` synonyms, plurals folded; a measure named by no phrase may
be found by the words of its description), picks the cube or view that covers the most of them (a view when one
does as well), writes one semantic SQL statement, runs it with ``serviceSqlApi`` and states the numbers. When the
question names no measure it says so and lists what it can answer about.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from embedadmin.chat.providers.base import ContentDelta, ProviderEvent, ProviderRequest, ThinkingDelta
from embedadmin.chat.vocabulary import STOPWORDS, content_stems, local_name, phrases, short_title, stem

ANSWER_PARTS = 3
LISTED_ROWS = 12  # rows of a grouped answer written out; the rest are counted
SUGGESTIONS = 5  # measures and dimensions named when the analyst cannot answer

GRAINS = {
    "day": "day",
    "daily": "day",
    "week": "week",
    "weekly": "week",
    "month": "month",
    "monthly": "month",
    "quarter": "quarter",
    "quarterly": "quarter",
    "year": "year",
    "yearly": "year",
    "annual": "year",
    "annually": "year",
}
GRAIN_LEAD = {"by", "per", "each", "every", "a"}
COUNT_WORDS = ("how many", "number of", "count of")
TOP_WORDS = ("top", "bottom", "best", "worst")
PLACE_STEMS = ("country", "nation")
# A measure found by its description alone must share this many meaningful words with the question.
DESCRIBED_MIN_WORDS = 2
GENERIC_MEASURE_WORDS = frozenset(
    stem(w) for w in ("total", "number", "amount", "sum", "average", "mean", "value", "all", "count", "overall")
)
VALUE_SKIP = {"is", "equal", "equals", "of", "=", "being"}


@dataclass(frozen=True)
class Token:
    """A word of the question: as written, and its stem."""

    text: str
    stem: str
    start: int


@dataclass(frozen=True)
class Member:
    """A member of a cube as ``serviceMeta`` showed it."""

    name: str
    title: str
    type: str
    is_measure: bool
    agg_type: str
    phrases: tuple[tuple[str, ...], ...]
    described_by: frozenset[str] = frozenset()  # the content stems of its description

    @property
    def column(self) -> str:
        return local_name(self.name)


@dataclass(frozen=True)
class Cube:
    name: str
    title: str
    is_view: bool
    members: tuple[Member, ...]


@dataclass(frozen=True)
class Span:
    """Question words ``[start, end)`` naming ``member``."""

    start: int
    end: int
    member: Member


@dataclass
class Reading:
    """What the question asks for, independent of the model."""

    tokens: list[Token]
    grain: str = ""
    year: int | None = None
    year_words: str = ""
    top: int | None = None
    descending: bool = True
    place: str = ""
    used: set[int] = field(default_factory=set)  # token indexes consumed by the above


@dataclass
class Plan:
    """The query the analyst runs and how it describes it."""

    cube: Cube
    measures: list[Member]
    groups: list[Member]
    filters: list[tuple[Member, str]]
    time: Member | None
    reading: Reading
    covered: int  # question words the plan uses
    named: bool = True  # its measure is named in the question (not only found by its description)

    @property
    def time_filtered(self) -> bool:
        return self.reading.year is not None and self.time is not None


def tokenize(question: str) -> list[Token]:
    return [Token(m.group(), stem(m.group().lower()), m.start()) for m in re.finditer(r"[A-Za-z0-9]+", question)]


def read_question(question: str, *, now: datetime) -> Reading:
    """Grain, year, top-N and place: the parts of a question that need no data model."""
    tokens = tokenize(question)
    reading = Reading(tokens=tokens)
    lower = [t.text.lower() for t in tokens]
    for i, word in enumerate(lower):
        previous = lower[i - 1] if i else ""
        if word in ("last", "this", "previous", "current") and i + 1 < len(lower) and lower[i + 1] == "year":
            reading.year = now.year - (1 if word in ("last", "previous") else 0)
            reading.year_words = f"{word} year"
            reading.used |= {i, i + 1}
        elif re.fullmatch(r"(19|20)\d\d", word) and i not in reading.used:
            reading.year = int(word)
            reading.year_words = f"in {word}"
            reading.used |= {i} | ({i - 1} if previous in ("in", "for", "during") else set())
        elif word in TOP_WORDS and i + 1 < len(lower) and lower[i + 1].isdigit():
            reading.top = int(lower[i + 1])
            reading.descending = word in ("top", "best")
            reading.used |= {i, i + 1}
    for i, word in enumerate(lower):
        grain = GRAINS.get(word) or GRAINS.get(stem(word))
        adjective = word in GRAINS and word != grain  # "monthly", "daily"
        if grain and i not in reading.used and (adjective or (i and lower[i - 1] in GRAIN_LEAD)):
            reading.grain = grain
            reading.used |= {i} | ({i - 1} if i and lower[i - 1] in GRAIN_LEAD else set())
    for i, token in enumerate(tokens):
        if token.text.lower() == "in" and i + 1 < len(tokens) and tokens[i + 1].text[:1].isupper():
            end = i + 1
            while end < len(tokens) and tokens[end].text[:1].isupper():
                end += 1
            if all(j not in reading.used for j in range(i, end)):
                reading.place = " ".join(t.text for t in tokens[i + 1 : end])
                reading.used |= set(range(i, end))
                break
    return reading


def cubes_of(meta: dict[str, Any]) -> list[Cube]:
    """The cubes of a ``serviceMeta`` result."""
    cubes = []
    for cube in meta.get("cubes", []):
        title = cube.get("title") or cube["name"]
        members = tuple(
            Member(
                name=m["name"],
                title=short_title(m.get("title") or m["name"], title),
                type=m.get("type", ""),
                is_measure="aggType" in m,
                agg_type=m.get("aggType", ""),
                phrases=tuple(phrases(m, cube_title=title)),
                described_by=frozenset(content_stems(str(m.get("description") or ""))),
            )
            for m in cube.get("members", [])
        )
        cubes.append(Cube(name=cube["name"], title=title, is_view=cube.get("type") == "view", members=members))
    return cubes


def find_spans(cube: Cube, reading: Reading) -> list[Span]:
    """Non-overlapping phrases of the question naming members of ``cube``: longest first, then earliest."""
    words = [t.stem for t in reading.tokens]
    candidates: list[Span] = []
    for member in cube.members:
        for phrase in member.phrases:
            size = len(phrase)
            for start in range(len(words) - size + 1):
                if tuple(words[start : start + size]) == phrase:
                    candidates.append(Span(start, start + size, member))
    # Right after "top N" a dimension is named ("top 5 products"); elsewhere a measure wins a tie.
    after_top = next((i + 2 for i, t in enumerate(reading.tokens) if t.text.lower() in TOP_WORDS), -1)
    candidates.sort(key=lambda s: (-(s.end - s.start), s.start, s.member.is_measure == (s.start == after_top)))
    taken: set[int] = set(reading.used)
    chosen: list[Span] = []
    for span in candidates:
        positions = set(range(span.start, span.end))
        if positions & taken or all(words[i] in STOPWORDS for i in positions):
            continue
        if any(c.member == span.member for c in chosen):
            continue
        taken |= positions
        chosen.append(span)
    return sorted(chosen, key=lambda s: s.start)


def _value_after(span: Span, reading: Reading, measures: set[int]) -> int | None:
    """Where the value written after a string dimension is (``status completed``, ``status is shipped``)."""
    i = span.end
    tokens = reading.tokens
    while i < len(tokens) and tokens[i].text.lower() in VALUE_SKIP:
        i += 1
    if i < len(tokens) and i not in reading.used and i not in measures and tokens[i].stem not in STOPWORDS:
        return i
    return None


def plan_for(cube: Cube, reading: Reading, question: str) -> Plan | None:
    """The query ``cube`` would answer the question with; None when the cube has no measure for it."""
    spans = find_spans(cube, reading)
    measured = {i for s in spans if s.member.is_measure for i in range(s.start, s.end)}
    values: set[int] = set()
    measures: list[Member] = []
    groups: list[Member] = []
    filters: list[tuple[Member, str]] = []
    time: Member | None = None
    for span in spans:
        member = span.member
        if span.start in values:
            continue  # the word is the value of a filter, not a member
        if member.is_measure:
            measures.append(member)
        elif member.type == "time":
            time = time or member
        elif member.type == "string" and (at := _value_after(span, reading, measured)) is not None:
            filters.append((member, reading.tokens[at].text))
            values.add(at)
        else:
            groups.append(member)
    if not measures and any(words in question.lower() for words in COUNT_WORDS):
        counts = [m for m in cube.members if m.is_measure and m.agg_type == "count"]
        measures = counts[:1]
    described = 0
    if not measures:
        taken = set(reading.used) | {i for s in spans for i in range(s.start, s.end)} | values
        measure, described = _described_measure(cube, reading, taken)
        measures = [measure] if measure is not None else []
    if not measures:
        return None
    if reading.place:
        place = next((m for m in cube.members if not m.is_measure and _names_place(m)), None)
        if place is None:
            return None
        filters.append((place, reading.place))
    if reading.grain or reading.year is not None:
        time = time or next((m for m in cube.members if m.type == "time"), None)
        if time is None:
            return None
    covered = sum(s.end - s.start for s in spans if s.start not in values) + len(values) + bool(reading.place)
    covered += described
    return Plan(
        cube=cube,
        measures=measures,
        groups=groups,
        filters=filters,
        time=time,
        reading=reading,
        covered=covered,
        named=not described,
    )


def _described_measure(cube: Cube, reading: Reading, taken: set[int]) -> tuple[Member | None, int]:
    """The measure a question names only through its description: the one whose description shares the most
    meaningful words (at least ``DESCRIBED_MIN_WORDS``, one of them not a word any measure could be described
    with, such as "total") with the words no name, title or synonym took; with how many it shares."""
    free = {t.stem for i, t in enumerate(reading.tokens) if i not in taken}  # described_by has no stopwords
    best: tuple[int, Member | None] = (0, None)
    for member in cube.members:
        words = member.described_by & free
        if member.is_measure and words - GENERIC_MEASURE_WORDS and len(words) > best[0]:
            best = (len(words), member)
    return (best[1], best[0]) if best[0] >= DESCRIBED_MIN_WORDS else (None, 0)


def _names_place(member: Member) -> bool:
    return any(word in PLACE_STEMS for phrase in member.phrases for word in phrase)


def choose_plan(cubes: Sequence[Cube], reading: Reading, question: str) -> Plan | None:
    """The plan of the cube that uses the most of the question's words, a measure the question names before one
    found by its description; views before cubes among equals, then the order of relevance ``serviceMeta`` gave."""
    best: tuple[tuple[bool, int, bool], Plan] | None = None
    for cube in cubes:
        plan = plan_for(cube, reading, question)
        if plan is None:
            continue
        key = (plan.named, plan.covered, cube.is_view)
        if best is None or key > best[0]:
            best = (key, plan)
    return best[1] if best else None


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_for(plan: Plan) -> str:
    """The semantic SQL statement of ``plan``."""
    columns: list[str] = []
    if plan.reading.grain and plan.time is not None:
        columns.append(f"DATE_TRUNC('{plan.reading.grain}', {plan.time.column})")
    columns += [g.column for g in plan.groups]
    keys = len(columns)
    columns += [f"MEASURE({m.column})" for m in plan.measures]
    where = [f"{member.column} = {_quote(value)}" for member, value in plan.filters]
    year = plan.reading.year
    if year is not None and plan.time is not None:  # plan.time_filtered
        where.append(f"{plan.time.column} >= DATE '{year}-01-01' AND {plan.time.column} < DATE '{year + 1}-01-01'")
    # Semantic SQL over the model's own names, run by the semantic layer (never on the database as is).
    sql = f"SELECT {', '.join(columns)} FROM {plan.cube.name}"  # noqa: S608
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += " GROUP BY " + ", ".join(str(i) for i in range(1, keys + 1))
        if plan.reading.grain and not plan.groups and plan.reading.top is None:
            sql += " ORDER BY 1"
        else:
            sql += f" ORDER BY {keys + 1} {'DESC' if plan.reading.descending else 'ASC'}, 1"
        if plan.reading.top is not None:
            sql += f" LIMIT {plan.reading.top}"
    return sql


def title_for(plan: Plan) -> str:
    """``Revenue by category in France``: what the query answers."""
    text = " and ".join(m.title for m in plan.measures)
    dimensions = ([plan.reading.grain] if plan.reading.grain else []) + [g.title.lower() for g in plan.groups]
    if dimensions:
        text += " by " + " and ".join(dimensions)
    return text + context_for(plan)


def context_for(plan: Plan) -> str:
    parts = []
    for member, value in plan.filters:
        parts.append(f" in {value}" if value == plan.reading.place else f" with {member.title.lower()} {value}")
    if plan.time_filtered:
        parts.append(f" in {plan.reading.year}")
    return "".join(parts)


def format_number(text: Any, *, integral: bool) -> str:
    """``1234567.891`` -> ``1,234,567.89``; counts without decimals."""
    if text is None:
        return "no value"
    try:
        number = Decimal(str(text))
    except InvalidOperation:
        return str(text)
    if integral or number == number.to_integral_value():
        return f"{number:,.0f}"
    return f"{number:,.2f}"


def format_time(text: Any, grain: str) -> str:
    """A truncated timestamp as the grain reads: ``2024``, ``2024-Q1``, ``2024-03``, ``2024-03-04``."""
    value = str(text)
    if grain == "year":
        return value[:4]
    if grain == "quarter":
        return f"{value[:4]}-Q{(int(value[5:7]) - 1) // 3 + 1}"
    if grain == "month":
        return value[:7]
    return value[:10]


def write_answer(plan: Plan, result: dict[str, Any]) -> str:
    """The numbers of ``result`` in a sentence or a short list."""
    rows = result["data"]
    keys = (1 if plan.reading.grain else 0) + len(plan.groups)
    integral = [m.agg_type in ("count", "countDistinct", "countDistinctApprox") for m in plan.measures]

    def values(row: list[Any]) -> str:
        shown = [format_number(row[keys + i], integral=integral[i]) for i in range(len(plan.measures))]
        if len(shown) == 1:
            return shown[0]
        return ", ".join(f"{m.title} {v}" for m, v in zip(plan.measures, shown, strict=True))

    if not rows:
        return f"No data matches: {title_for(plan)} has no rows."
    if not keys:
        parts = [
            f"{m.title}{context_for(plan)} is {format_number(rows[0][i], integral=integral[i])}."
            for i, m in enumerate(plan.measures)
        ]
        return " ".join(parts)
    lines = [f"{title_for(plan)}:"]
    for row in rows[:LISTED_ROWS]:
        labels = [format_time(row[0], plan.reading.grain)] if plan.reading.grain else []
        labels += ["(none)" if v is None else str(v) for v in row[len(labels) : keys]]
        lines.append(f"- {', '.join(labels)}: {values(row)}")
    if result["totalRows"] > LISTED_ROWS:
        lines.append(f"… and {result['totalRows'] - LISTED_ROWS} more rows.")
    return "\n".join(lines)


def capabilities(cubes: Sequence[Cube]) -> str:
    """What the analyst can answer about: a few measures and dimensions, views first."""
    ordered = sorted(cubes, key=lambda c: not c.is_view)
    measures: list[str] = []
    dimensions: list[str] = []
    for cube in ordered:
        for member in cube.members:
            bucket = measures if member.is_measure else dimensions
            if member.title not in bucket:
                bucket.append(member.title)
    text = "I can't answer that from the data model."
    if measures:
        text += f" I can answer about measures such as {', '.join(measures[:SUGGESTIONS])}"
        if dimensions:
            text += f", by dimensions such as {', '.join(d.lower() for d in dimensions[:SUGGESTIONS])}"
        text += "."
    return text


def chunks(text: str, parts: int) -> list[str]:
    """``text`` cut at spaces into at most ``parts`` pieces that join back to it."""
    words = text.split(" ")
    size = max(1, -(-len(words) // parts))
    pieces = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [piece + (" " if index < len(pieces) - 1 else "") for index, piece in enumerate(pieces)]


class BuiltinProvider:
    """The ``builtin`` agent: ``serviceMeta``, then ``serviceSqlApi``, then an answer that states the numbers."""

    def stream(self, request: ProviderRequest) -> AsyncIterator[ProviderEvent]:
        return analyst_stream(request)


async def analyst_stream(request: ProviderRequest, *, now: datetime | None = None) -> AsyncIterator[ProviderEvent]:
    """The built-in analyst's answer to ``request``: thinking, ``serviceMeta``, ``serviceSqlApi``, content."""
    question = request.question
    yield ThinkingDelta(f"Searching the data model for: {question}")
    meta = json.loads(await request.call_tool("serviceMeta", {"searchQuery": question}))
    answer = await _answer(request, meta, now or datetime.now(UTC))
    for piece in chunks(answer, ANSWER_PARTS):
        yield ContentDelta(piece)


async def _answer(request: ProviderRequest, meta: dict[str, Any], now: datetime) -> str:
    if "error" in meta:
        return f"I could not search the data model: {meta['error']}"
    cubes = cubes_of(meta)
    if not cubes:
        return "I found nothing in the data model that matches your question."
    plan = choose_plan(cubes, read_question(request.question, now=now), request.question)
    if plan is None:
        return capabilities(cubes)
    title = title_for(plan)
    arguments = {
        "sqlQuery": sql_for(plan),
        "queryTitle": title,
        "description": f"{title}, from {plan.cube.title}",
        "userRequest": request.question,
    }
    result = json.loads(await request.call_tool("serviceSqlApi", arguments))
    if "error" in result:
        return f"I could not run the query ({result['error']}). " + capabilities(cubes)
    return write_answer(plan, result)

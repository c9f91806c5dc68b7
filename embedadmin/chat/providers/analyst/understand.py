"""From a question to one Cube query, or a decline that says which words could not be placed.

Every word of the question must be placed before the analyst answers: a date range, a grain, a ranking, an
aggregation word, a comparison, a member of the model (name, title, synonym), a value found in the data (looked
up through the Core Data API with the viewer's own access policies), a verb naming a date of the model, or a word
with no content of its own. A question is read against each cube and view (views first); the first that places
every word answers, written against a view that shows every member it uses. A cube is not read when a view showing
it declined the question as ambiguous: its fewer members would hide the ambiguity. When none answers, the analyst
declines, names the words no cube could place, and offers up to three questions like it that it answers
(``suggest.py``). A follow-up ("and last year?", "only in Berlin", "by city instead", "how many of those ...")
changes one part of the thread's previous question. What a question says without the model (dates, rankings,
aggregation words, comparisons, markers) is read first, in ``reading.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from zoneinfo import ZoneInfo

from embedadmin.chat.member_search import root, stem, stems, value_key
from embedadmin.chat.providers.analyst.dates import (
    GRAIN_ADJECTIVES,
    UNITS,
    DateRange,
    find_grain,
    period_grain,
    two_whole,
)
from embedadmin.chat.providers.analyst.intent import ADDITIVE, Condition, Decline, Intent
from embedadmin.chat.providers.analyst.model_phrases import AGGREGATION_WORDS, Cube, Member, custom_grains
from embedadmin.chat.providers.analyst.places import PLACE_FIELD_WORDS, place_names
from embedadmin.chat.providers.analyst.question_words import (
    AMOUNT_VERBS,
    DISTINCT_WORDS,
    FUNCTION_WORDS,
    GENERIC_HEADS,
    LEAST_WORDS,
    LIGHT_VERBS,
    MOST_WORDS,
    VALUE_WORDS,
    Token,
    number_text,
)
from embedadmin.chat.providers.analyst.reading import Reading, read
from embedadmin.chat.providers.analyst.suggest import MAX_SUGGESTIONS, candidates
from embedadmin.chat.providers.base import DateCoverage, ValueLookup

MAX_VALUE_WORDS = 4
DISTINCT_STEMS = frozenset(stem(w) for w in DISTINCT_WORDS) | {"count", "number"}
COPULAS = frozenset({"were", "was", "are", "is", "been", "being", "had", "have", "has", "got"})
# "revenue on orders placed in 2024", "only counting invoices issued in 2025"
OWNER_WORDS = frozenset({"of", "from", "for", "among", "by", "to", "on", "counting"})
# Words of a time dimension's names that say it is a date, not which event it dates.
DATE_WORDS = frozenset({"date", "time", "ts", "at", "on", "day", "timestamp", "datetime", "dt", "of", "the", "when"})
PARTICLES = frozenset({"up", "in", "out", "off", "over"})  # "signed up", "checked in", "paid out", "written off"
EVENT_ADJECTIVES = frozenset({"new"})  # "new accounts signed up in 2024": the accounts whose signup is in 2024
AUXILIARIES = frozenset({"did", "do", "does", "have", "has", "had"})
VERB_LEADS = frozenset({"we", "you", "they", "i", "did", "do", "does", "to", "will"})  # "did we invoice"
SINGULAR_VERBS = frozenset({"was", "is", "has"})
VERSUS = ("vs", "versus", "against")  # "air vs rail": values side by side, as "and" joins them
JOINED_FILLERS = frozenset({"in", "for", "from", "the", "of", "on", "at"})  # "fintech and in healthcare"
COMBINING_WORDS = frozenset({"combined", "together", "altogether", "overall"})
# The ranking words that say a size ("biggest", "lowest"), not a count or a judgement ("most", "worst", "top")
MAX_WORDS = MOST_WORDS - {"most", "best", "top"}
MIN_WORDS = LEAST_WORDS - {"least", "fewest", "worst", "bottom"}
EXTREME_STEMS = frozenset(stem(w) for w in (*MAX_WORDS, *MIN_WORDS))
POINTING_PREPOSITIONS = frozenset({"in", "for", "of", "on", "from", "at", "to", "with", "within", "by"})
AMOUNT_NOUNS = frozenset({"amount", "amounts", "value", "values"})
SENDING_VERBS = frozenset({"sent", "send", "sends"})
PRICE_WORDS = frozenset({"cheapest", "priciest"})
GRAIN_ORDER = ("day", "week", "month", "quarter", "year")
VALUE_NOUNS = AMOUNT_NOUNS | {"size", "sizes", "total", "totals"}  # what a count is never followed by
ONE_ROW_WORDS = frozenset({"single", "one", "individual", "the", "a", "any"})  # "the biggest single order"


async def _not_known_set(_cube: str, _measure: str, _dimension: str, _zero_is_none: bool) -> bool:
    return False


@dataclass(frozen=True)
class ModelFacts:
    """What the whole model says, which each cube's reading needs: the one-word names of its cubes and views (with
    the cubes each names), each cube's own count, and every word its members are named with; and how to ask its
    data whether every row of a measure has a date (``dates_set``; unknown: never)."""

    nouns: Mapping[str, frozenset[str]]
    plain_counts: Mapping[str, str] = field(default_factory=dict)
    words: frozenset[str] = frozenset()
    dates_set: DateCoverage = _not_known_set
    # the words of its members' names ("brwsr", "ord"), which may shorten a question's words (``_spelled_out``)
    name_words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, cubes: Sequence[Cube], dates_set: DateCoverage | None = None) -> ModelFacts:
        return cls(
            nouns=entity_nouns(cubes),
            plain_counts={c.name: n.name for c in cubes if not c.is_view and (n := c.count_measure()) is not None},
            words=frozenset(word for c in cubes for m in c.members for phrase in m.phrases for word in phrase),
            dates_set=dates_set or _not_known_set,
            name_words=_shortened_words(cubes),
        )


@dataclass
class Attempt:
    """One cube's reading of the question: the query it would run, or the words it could not place."""

    cube: Cube
    intent: Intent | None = None
    unplaced: list[str] = field(default_factory=list)
    decline: Decline | None = None


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    member: Member
    member_phrase: tuple[str, ...] = ()

    @property
    def positions(self) -> range:
        return range(self.start, self.end)


def _as_verb(reading: Reading, start: int, member: Member) -> bool:
    """Whether the word at ``start`` is a verb spelt like a count's noun ("did we invoice the most": an amount
    invoiced, never the count of invoices): after a subject or an auxiliary, in the singular."""
    token = reading.tokens[start]
    return member.is_count and not token.plural and start > 0 and reading.tokens[start - 1].lower in VERB_LEADS


async def _valued_grain_words(cube: Cube, reading: Reading, lookup: ValueLookup) -> set[int]:
    """The grain words that with the word before them are a value of the data ("starter monthly": starter_monthly)."""
    tokens = reading.tokens
    found: set[int] = set()
    for i, token in enumerate(tokens):
        if not i or token.lower not in GRAIN_ADJECTIVES or tokens[i - 1].lower in FUNCTION_WORDS:
            continue
        candidate = reading.phrase([i - 1, i])
        for member in cube.dimensions():
            if member.type == "string" and await lookup(cube.name, member.name, [candidate]):
                found.add(i)
                break
    return found


def _extreme_spans(cube: Cube, reading: Reading) -> list[Span]:
    """The model's largest or smallest of something named by an extreme word and the rest of its name ("biggest
    single order": Largest Order, a max; "highest MRR on any one subscription": Max Mrr; "lowest order value"): one
    span per extreme word, when exactly one measure of that aggregation fits."""
    tokens = reading.tokens
    found: list[Span] = []
    for i, token in enumerate(tokens):
        kind = "max" if token.lower in MAX_WORDS else "min" if token.lower in MIN_WORDS else ""
        if not kind:
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].lower in ONE_ROW_WORDS:
            j += 1
        fits = []
        for member in cube.measures():
            if member.agg_type != kind:
                continue
            for phrase in member.phrases:
                rest = tuple(w for w in phrase if w not in EXTREME_STEMS)
                said = _said(rest, tokens[j : j + len(rest)])
                # "the biggest single order" for Max Ord Rev: a money measure's last words may be left unsaid
                if rest and (said == len(rest) or (said and member.is_money)):
                    fits.append(Span(i, j + said, member, phrase))
                    break
        if len({span.member for span in fits}) == 1:
            found.append(max(fits, key=lambda span: span.end))
    return found


def _measures_versus(cube: Cube, spans: list[Span], reading: Reading, taken: set[int]) -> tuple[list[Span], set[int]]:
    """Two measures compared by "vs" ("gross sales vs net sales"), the first maybe said by its first word alone when
    the words after the second complete it ("gross vs net sales": Gross sales and Net sales): the spans with the
    first measure's, and the positions of the "vs" between them (placed, as "and" is between values)."""
    tokens, stems = reading.tokens, reading.stems
    starts = {span.start: span for span in spans}
    ends = {span.end: span for span in spans}
    placed: set[int] = set()
    added: list[Span] = []
    for v, token in enumerate(tokens):
        second = starts.get(v + 1)
        if token.lower not in VERSUS or second is None or not second.member.is_measure:
            continue
        first = ends.get(v)
        if first is None and v and v - 1 not in taken and len(second.member_phrase) > 1:
            whole = (stems[v - 1], *second.member_phrase[1:])  # "gross" + "sales"
            named = [m for m in cube.measures() if whole in m.phrases and m != second.member]
            if len(named) == 1:
                first = Span(v - 1, v, named[0], whole)
                added.append(first)
        if first is not None and first.member.is_measure:
            placed.add(v)
    return sorted([*spans, *added], key=lambda span: span.start), placed


def _said(phrase: tuple[str, ...], tokens: Sequence[Token]) -> int:
    """How many of ``phrase``'s first words ``tokens`` say, word by word, each as it is or in full ("ord": "order")."""
    count = 0
    for word, token in zip(phrase, tokens, strict=False):
        if word != token.stem and not (_shortens(word, token.lower) or _shortens(word, token.stem)):
            break
        count += 1
    return count


def _acronym_spans(cube: Cube, reading: Reading) -> list[Span]:
    """A member titled with an acronym ("ARR", "AOV") named by the words it stands for ("annual recurring revenue",
    "average order value"): as many words as letters, none a function word, their initials spelling it, and at
    least one a word the model names something with (the evidence that the words are the model's)."""
    found: list[Span] = []
    tokens = reading.tokens
    for member in cube.members:
        letters = member.title.lower()
        if not (member.title.isupper() and member.title.isalpha() and 2 <= len(letters) <= 5):
            continue
        for start in range(len(tokens) - len(letters) + 1):
            words = tokens[start : start + len(letters)]
            if (
                "".join(t.lower[:1] for t in words) == letters
                and all(t.lower.isalpha() and (t.lower not in FUNCTION_WORDS or t.lower in AMOUNT_NOUNS) for t in words)
                and any(t.stem in _model_stems(cube) for t in words)
            ):
                found.append(Span(start, start + len(letters), member, tuple(t.stem for t in words)))
    return found


@functools.lru_cache(maxsize=64)
def _model_stems(cube: Cube) -> frozenset[str]:
    return frozenset(word for m in cube.members for phrase in m.phrases for word in phrase)


def _spans(cube: Cube, reading: Reading, taken: set[int], named: Sequence[Span] = ()) -> list[Span]:
    """The non-overlapping phrases naming members of ``cube``: longest first, then earliest; a measure before a
    dimension of the same phrase, except where a group is named ("by customers"). ``named``: the spans found other
    than by a phrase (acronyms, extremes), read once per attempt."""
    stems = reading.stems
    candidates: list[Span] = []
    for member in cube.members:
        for phrase in member.phrases:
            for start in range(len(stems) - len(phrase) + 1):
                if tuple(stems[start : start + len(phrase)]) == phrase and not _as_verb(reading, start, member):
                    after = start + len(phrase)
                    if member.is_count and after < len(stems) and reading.tokens[after].lower in VALUE_NOUNS:
                        continue  # "order value", "invoice size": an amount of them, never their count
                    candidates.append(Span(start, after, member, phrase))
    candidates += named
    # A measure's phrase cut by "were"/"was" ("patients were seen": patients seen), spanning the word between.
    kept = [i for i, t in enumerate(reading.tokens) if t.lower not in COPULAS]
    if len(kept) < len(stems):
        for member in cube.measures():
            for phrase in member.phrases:
                for a in range(len(kept) - len(phrase) + 1):
                    positions = kept[a : a + len(phrase)]
                    contiguous = positions[-1] - positions[0] + 1 == len(phrase)
                    if not contiguous and tuple(stems[p] for p in positions) == phrase:
                        candidates.append(Span(positions[0], positions[-1] + 1, member, phrase))

        def ends_name(at: int) -> bool:  # "order lines": "lines" ends a longer name
            return any(
                len(p) > 1 and tuple(stems[max(0, at - len(p) + 1) : at + 1]) == p
                for m in cube.members
                for p in m.phrases
            )

        # A count's two words said the other way round ("subscriptions were canceled": Canceled subscriptions).
        for member in cube.measures():
            for first, second in (p for p in member.phrases if len(p) == 2 and member.is_count):
                for a in range(len(stems) - 2):
                    b = a + 1  # "subscriptions had been canceled": the copulas between
                    while b < len(stems) and reading.tokens[b].lower in COPULAS:
                        b += 1
                    if stems[a] == second and b > a + 1 and b < len(stems) and stems[b] == first and not ends_name(a):
                        candidates.append(Span(a, b + 1, member, (first, second)))

    def rank(span: Span) -> tuple[int, int, bool, bool]:
        grouped = reading.names_group(span.start)
        by_title = tuple(stems[span.start : span.end]) == span.member.title_phrase
        return (-(span.end - span.start), span.start, span.member.is_measure == grouped, not by_title)

    chosen: list[Span] = []
    used = set(taken)
    for span in sorted(candidates, key=rank):
        if any(p in used for p in span.positions) or all(stems[p] in FUNCTION_WORDS for p in span.positions):
            continue
        if any(c.member == span.member for c in chosen):
            continue
        used.update(span.positions)
        chosen.append(span)
    return sorted(chosen, key=lambda s: s.start)


async def attempt(
    cube: Cube,
    reading: Reading,
    lookup: ValueLookup,
    timezone: str,
    *,
    facts: ModelFacts,
    partial: bool = False,
    thread_time: Member | None = None,
) -> Attempt:
    """Read the question against ``cube``: an :class:`Attempt` with the query, or the words left unplaced.
    ``partial`` (a follow-up) asks for no measure; ``thread_time``: the date the thread's periods are of, which a
    follow-up's period is of too unless its words name another ("and in 2023?")."""
    nouns, plain_counts, model_words = facts.nouns, facts.plain_counts, facts.words
    extremes = _extreme_spans(cube, reading)
    special = [*_acronym_spans(cube, reading), *extremes]  # the question's words are the same for every _spans
    # "which customer", "by region": a group named; "what was the biggest ...": none
    named_which = [
        p for p in reading.which if p < len(reading.tokens) and reading.tokens[p].lower not in FUNCTION_WORDS
    ]
    # "the plan with the highest MRR", "the month with the biggest order": a field or a grain named is ranked
    within = {p for span in extremes for p in span.positions}
    fields = any(
        set(_positions_of(m, reading)) - within for m in cube.dimensions() if m.type != "time" and m.type != "boolean"
    )
    grains = any(
        t.lower.rstrip("s") in UNITS or t.lower in GRAIN_ADJECTIVES
        for i, t in enumerate(reading.tokens)
        if i not in reading.date_positions  # "last quarter" is a period, not a grain
    )
    ungrouped = not (named_which or reading.group_starts or reading.ranked_after or fields or grains)
    if extremes and reading.descending is not None and reading.limit is None and ungrouped:
        # "the biggest single order": the model's largest order, one number, not orders ranked
        starts = {span.start for span in extremes}
        reading = replace(reading, descending=None, taken=set(reading.taken) - starts)
    elif extremes and reading.descending is not None:
        # "rank the customers by largest order": ranked by the model's largest order, never by their count of orders;
        # "the plan with the highest MRR" stays ranked by MRR, which "MRR" alone names
        amount_names = {p for m in cube.measures() if not m.is_count for p in m.phrases}

        def whole(span: Span) -> tuple[str, ...] | None:  # the rest of the measure's name, all of it said
            said = tuple(t.stem for t in reading.tokens[span.start + 1 : span.end] if t.lower not in ONE_ROW_WORDS)
            rest = tuple(w for w in span.member_phrase if w not in EXTREME_STEMS)
            after = reading.tokens[span.end].lower if span.end < len(reading.tokens) else ""
            return said if len(said) == len(rest) and after not in VALUE_NOUNS else None

        starts = {span.start for span in extremes if (told := whole(span)) is not None and told not in amount_names}
        reading = replace(reading, taken=set(reading.taken) - starts)
    taken = set(reading.taken)
    tokens = reading.tokens
    # A grain word inside a longer name of the model ("monthly recurring revenue") is the name's, not a grain.
    names = _spans(cube, reading, taken, special)
    named_positions = {p for span in names if span.end - span.start > 1 for p in span.positions}
    # A grain word before a field's name that ends the phrase ("the starter monthly plan", not "monthly supplier
    # revenue"), after "on" ("on monthly billing"), or joined to the word before it in a value of the data ("starter
    # monthly" for starter_monthly): which values, never a grain
    measure_starts = {span.start for span in names if span.member.is_measure}
    named_positions |= {
        span.start - 1
        for span in names
        if not span.member.is_measure
        and span.member.type != "time"
        and span.start
        and tokens[span.start - 1].lower in GRAIN_ADJECTIVES
        and span.end not in measure_starts
    }
    named_positions |= {
        i for i, t in enumerate(tokens) if t.lower in GRAIN_ADJECTIVES and i and tokens[i - 1].lower == "on"
    }
    named_positions |= await _valued_grain_words(cube, reading, lookup)
    grain_found = find_grain(tokens, taken=taken | named_positions, custom=custom_grains(cube.time_dimensions()))
    grain = grain_found.grain if grain_found else None
    if grain_found:
        taken |= grain_found.positions
    # A comparison's unit named after its number ("at least 3 items") is its member.
    targets: dict[int, Member] = {}
    for index, (start, end, _operator, _number) in enumerate(reading.comparisons):
        named = _amount_named_before(cube, reading, start)
        if named is not None:  # "an average wait of over 30 minutes": the average wait, in minutes
            targets[index] = named
            if _unit_members(cube, reading, end, taken):
                taken.add(end)
            continue
        units = _unit_members(cube, reading, end, taken)
        if not units and end < len(tokens) and end not in taken:
            # "countries with more than 100 visits": the count of the things a cube's name says
            counted = _entity_count(cube, tokens[end].stem, nouns, plain_counts)
            units = [counted] if counted is not None else []
        stems_before = [t.stem for t in reading.tokens[:start]]
        before = [m for m in units if any(len(p) and tuple(stems_before[-len(p) :]) == p for p in m.phrases)]
        units = before if len(before) == 1 else units  # "a waiting time longer than 45 minutes": the wait
        if len(units) == 1:
            targets[index] = units[0]
            taken.add(end)
        elif len(units) > 1:
            choices = " or ".join(m.title.lower() for m in units)
            word = reading.tokens[end].text
            titles = tuple(m.title for m in units)
            decline = Decline(f"'{word}' could be {choices}: say which one.", ambiguous=True, choices=titles)
            return Attempt(cube, decline=decline)
    spans = _spans(cube, reading, taken, special)  # aggregation words are free: "average order value" is a measure
    if grain is None and not any(reading.names_group(span.start) for span in spans):
        spans = [_per_row(cube, span, reading) for span in spans]
    spans = _qualifying_heads(spans)
    spans, absorbed = _headed(spans, reading)
    spans, owners = _owned(spans, reading, nouns)
    taken |= absorbed | owners
    spans = [span for span in spans if not _names_cube_counted(cube, span, reading)]
    spans, versus = _measures_versus(cube, spans, reading, taken)
    taken |= versus
    for span in spans:
        taken.update(span.positions)
        after = span.end if span.end < len(tokens) else None
        if after is not None and span.member.is_money and tokens[after].lower in AMOUNT_NOUNS:
            taken.add(after)  # "the average invoice amount": Average invoice, an amount already
    aggregations = {flag for at, flag in reading.aggregations.items() if at not in taken}
    taken.update(reading.aggregations)
    measures: list[Member] = []
    groups: list[Member] = []
    conditions: list[Condition] = []
    having: list[Condition] = []
    time: Member | None = None
    time_span: Span | None = None
    value_holders: list[Member] = []
    holder_spans: list[Span] = []
    numeric_mentions: list[Member] = []
    negations_placed: set[int] = set()
    for span in spans:
        member = span.member
        grouped = reading.names_group(span.start)
        # "in that industry" (not "visits that bounced", where "that" starts a clause)
        pointed = span.start and tokens[span.start - 1].lower in ("that", "this")
        led = span.start < 2 or tokens[span.start - 2].lower in POINTING_PREPOSITIONS
        if pointed and led and not member.is_measure and member.type == "string":
            # "the top accounts in that industry": a value the thread answered, which the question does not say
            word = tokens[span.start - 1].text
            reason = f"I could not tell which {member.title.lower()} '{word}' is: name it."
            return Attempt(cube, decline=Decline(reason, final=True))
        if member.is_measure and span.start in reading.group_starts and reading.tokens[span.start - 1].lower == "per":
            reason = f"This asks for a ratio per {member.title.lower()}, which the data model has no measure for."
            return Attempt(cube, decline=Decline(reason))
        if member.is_measure:
            measures.append(member)
        elif member.type == "time":
            if grouped and grain is None and not reading.date_ranges:
                reason = f"Say which grain of {member.title.lower()}: per day, week, month, quarter or year."
                return Attempt(cube, decline=Decline(reason))
            time, time_span = member, span
        elif grouped:
            groups.append(member)
        elif member.type == "boolean":
            negated = span.start in reading.negated  # "subscriptions without auto-renew"
            conditions.append(Condition(member, "equals", ("FALSE" if negated else "TRUE",), at=span.start))
            negations_placed.update(reading.negated & {span.start})
        elif member.type == "number":
            numeric_mentions.append(member)
        else:
            value_holders.append(member)
            holder_spans.append(span)
    # Comparisons: "orders over 500", "at least 3 items", "revenue above 1000".
    for index, (start, end, operator, number) in enumerate(reading.comparisons):
        target = targets.get(index) or _comparison_target(cube, spans, start, end, reading, taken)
        if target is None:
            return Attempt(cube, unplaced=[reading.phrase(range(start, end))])
        percent = tokens[end - 1].lower == "percent" or tokens[end - 1].text.endswith("%")
        shown = number_text(number / 100 if percent else number)
        condition = Condition(target, operator, (shown,), numeric=True, at=start)
        (having if target.is_measure else conditions).append(condition)
        if target.is_measure and target not in measures:
            measures.append(target)  # "countries with more than 10000 orders": shown as well as compared
        if target in numeric_mentions:
            numeric_mentions.remove(target)
    # "the average list price of parts": a numeric field aggregated over its own cube's rows, no measure named
    aggregated = _aggregated_field(aggregations, measures, numeric_mentions)
    if aggregated is not None:
        function, field_member = aggregated
        numeric_mentions.remove(field_member)
        twin = _measure_of_field(cube, function, field_member)
        if twin is not None:  # the model's own measure of it ("Average retail price" for "average list price")
            measures, aggregated = [twin], None
        elif groups or grain or having:
            reason = f"I aggregate {field_member.title.lower()} as one number: ask for it without a grouping."
            return Attempt(cube, decline=Decline(reason))
        elif cube.is_view and field_member.owner != cube.name:  # a view's rows may repeat it (a part per line item)
            reason = (
                f"I aggregate {field_member.title.lower()} over the rows of {field_member.owner}, not of {cube.title}."
            )
            return Attempt(cube, decline=Decline(reason))
    # A number field named with nothing that says what of it ("by", an aggregation, a comparison) is not placed: "pay"
    # in "subscriptions that pay us" is a verb, not a grouping by "Days to pay"
    if numeric_mentions:
        words = [reading.phrase(s.positions) for s in spans if s.member in numeric_mentions]
        return Attempt(cube, unplaced=words)
    # Values found in the data for the words left.
    # A dimension named without "by" may be the start of a value ("United States" against "state"): its words are
    # looked up with the others, and a value that takes them releases the dimension.
    # So may a one-word time dimension ("completed" against "completed at"): a value of that name wins, and a time
    # dimension named with no date range or grain is not placed at all.
    soft = {p for span in holder_spans for p in span.positions}
    if time_span is not None and (len(time_span.positions) == 1 or not (reading.date_ranges or grain)):
        soft |= set(time_span.positions)
    found, left, valued_positions, joined_by_and = await _values(cube, reading, taken - soft, value_holders, lookup)
    valued = soft - left
    value_holders = [span.member for span in holder_spans if not set(span.positions) & valued]
    if time_span is not None:
        positions = set(time_span.positions)
        if positions & valued:
            time = None
        elif not (reading.date_ranges or grain):
            time = None
            soft -= positions
    left -= soft
    # Words naming the thing measured, the cube itself ("how many purchases") or an entity a value qualifies
    # ("private patients", "female customers"), are placed.
    subject = _subject(cube, reading, left)
    left -= subject
    # "the site" in "how many visits did the site get": a word of the view's own title ("Site traffic") that names
    # nothing else of the model, after "the" or "our", says no more than the view asked
    own_words = set(stems(cube.title)) - _model_stems(cube) - set(nouns)
    left -= {i for i in left if tokens[i].stem in own_words and i and tokens[i - 1].lower in ("the", "our")}
    left -= _qualified(reading, left, valued_positions, nouns, cube, found)
    left -= _owner_nouns(reading, left, spans, nouns, cube)
    labelled: dict[str, list[int]] = {}
    # A thing the model holds, named where a group is ("top 10 customers by revenue", "which customer"): grouped by
    # the dimension that names each one (the customers' "Customer" or "name").
    for i in sorted(left):
        label = _label(cube, tokens[i].stem, nouns) if reading.names_group(i) else None
        if label is not None:
            left.discard(i)
            labelled[label.name] = [i]
            if label not in groups:
                groups.append(label)
    # A verb or noun naming a date of the model is that event ("accounts signed up in 2024": by the signup date;
    # "subscriptions that churned": those with a churn date); "new" beside it says no more than the event.
    event, event_positions = _event(cube, reading, left)
    left -= event_positions
    left -= {i for i in left if tokens[i].lower == "up" and i + 1 in reading.date_positions}  # "up until March"
    if event is not None:
        left -= {i for i in left if tokens[i].lower in EVENT_ADJECTIVES}
    elif reading.date_ranges:  # "new accounts in 2024": the accounts of 2024, by the date the period is of
        counted_at = subject | {s.start for s in spans if s.member.is_count}
        left -= {i for i in left if tokens[i].lower in EVENT_ADJECTIVES and i + 1 in counted_at}
    conditions += found
    named_holders = {c.member for c in found}
    qualified_by = {p for span in holder_spans if span.member in named_holders for p in span.positions}
    entities = {  # "budget (price band) products": the products a value qualifies, not a grouping by product
        span.member
        for span in holder_spans
        if len(span.member_phrase) == 1
        and span.member_phrase[0] in nouns
        and (
            span.start - 1 in valued_positions | qualified_by
            # "how many orders did customers place": the customers who did, not one row per customer
            or (tokens[span.start].plural and not reading.names_group(span.start))
        )
    }
    for span in holder_spans:  # "chinese suppliers" with China found as the customers' nation: not theirs
        if span.member not in entities or span.start - 1 not in valued_positions or len(span.member_phrase) != 1:
            continue
        value = _value_before(found, span.start - 1)
        kinds = nouns.get(span.member_phrase[0], frozenset())
        if kinds and value is not None and not _of_entity(value.member, kinds, nouns):
            return Attempt(cube, unplaced=[tokens[span.start].text])
    distinct_at = {p + 1 for p, flag in reading.aggregations.items() if flag == "distinct"}
    for span in holder_spans:
        if span.start in distinct_at and span.member not in named_holders:
            # "how many different customers": a distinct count of them, never one row per customer; the model's
            # one distinct count named like them ("Customers who ordered"), else declined
            counted = _distinct_count_named(cube, reading.tokens[span.start].stem, nouns)
            if counted is None:
                reason = f"The data model has no distinct count of {span.member.title.lower()}."
                return Attempt(cube, decline=Decline(reason))
            # "how many different customers placed an order": the customers counted, the orders only what they did
            measures = [m for m in measures if not m.is_count] + [counted]
            value_holders = [m for m in value_holders if m != span.member]
    groups += [m for m in value_holders if m not in named_holders and m not in groups and m not in entities]
    # Values joined by "and" are each answered ("orders from men and women": a row for each), unless the question
    # asks for them together ("combined", "together", "in total"); joined by "or", they are one group.
    together = any(t.lower in COMBINING_WORDS for t in tokens) or "total" in reading.aggregations.values()
    split = [c.member for c in found if c.member.name in joined_by_and]
    if reading.compares or not together:
        groups += [m for m in split if m not in groups]
    periods = period_grain(*reading.date_ranges) if len(reading.date_ranges) == 2 and grain is None else None
    # "orders per quarter, 2023 vs 2024": two whole periods one after the other, by a grain the question names
    pair = period_grain(*reading.date_ranges) if len(reading.date_ranges) == 2 and grain is not None else None
    finer = pair is not None and GRAIN_ORDER.index(grain or "day") <= GRAIN_ORDER.index(pair[0])  # never coarser
    joined = DateRange(pair[1].start, pair[2].end) if pair and finer and pair[1].end == pair[2].start else None
    if reading.compares and not split and grain is None and len(reading.date_ranges) == 1:
        periods = two_whole(reading.date_ranges[0])  # "compare orders in 2023 and 2024": a row per year
    if reading.compares and not split and len(measures) < 2 and periods is None and joined is None:
        # "compare 2023 and 2024", "revenue vs last year": two results side by side, which one query cannot hold
        reason = "This compares two results that one query cannot hold: compare values of one field or two measures."
        return Attempt(cube, decline=Decline(reason))
    # A verb that only says the event happened ("orders placed in 2024") has no content, unless the model names
    # something by it ("lines returned": a member says "returned"), in this cube or another (a cube without the
    # invoices may not drop "invoiced"): then it must be placed like any word.
    modelled = model_words | _model_stems(cube)
    # "sent" is light only of things the model holds ("invoices we sent"), never of a value ("emails sent")
    things = bool(subject) or any(w in nouns for span in spans for w in span.member_phrase)
    unplaced = [
        tokens[i].text
        for i in sorted(left)
        if (tokens[i].lower not in LIGHT_VERBS or {tokens[i].lower, tokens[i].stem} & modelled)
        or (tokens[i].lower in SENDING_VERBS and not things)
        if not (tokens[i].lower == "out" and i and tokens[i - 1].lower in LIGHT_VERBS)  # "invoices went out"
    ]
    # A negation that negates no value or yes/no field ("subscriptions that did not churn") is never dropped.
    negations_placed |= reading.negated & valued_positions
    unplaced += [
        reading.phrase([i - 1, i]) if 0 < i < len(tokens) else "not" for i in sorted(reading.negated - negations_placed)
    ]
    if unplaced:
        return Attempt(cube, unplaced=unplaced)
    # The measure.
    measures = _without_subjects(measures, spans, reading, valued_positions)
    qualifying = {
        s.member
        for s in spans
        if partial and s.member.is_count and {t.lower for t in tokens[max(0, s.start - 2) : s.start]} & OWNER_WORDS
    }
    if qualifying and (reading.date_ranges or conditions or groups):
        # "what about just for orders placed in 2024?": the orders qualify the thread's measure
        measures = [m for m in measures if m not in qualifying]
    elif qualifying and not any(t.lower == "same" for t in tokens[:2]):
        # "what about for urgent orders?" after revenue: those orders' revenue, or their count? ("same for sign ups"
        # asks the sign-ups instead)
        said = ", ".join(m.title.lower() for m in qualifying)
        reason = f"I could not tell whether {said} replaces the last measure or narrows it: ask the whole question."
        return Attempt(cube, decline=Decline(reason))
    counted_entity = _counted_entity(cube, reading, spans, nouns, plain_counts)
    if counted_entity is not None and measures and all(m.is_count for m in measures):
        auxiliary = next((i for i, t in enumerate(tokens) if t.lower in AUXILIARIES), len(tokens))
        if all(s.start > auxiliary for s in spans if s.member in measures):
            measures = [counted_entity]  # "how many visits did tablet users make": the visits, not the users
    if aggregated is not None:
        chosen: list[Member] | Decline = [aggregated[1]]
    elif partial and not measures and aggregations & {"share", "average", "distinct"}:
        # "what percentage of them were urgent?": a new aggregation of the thread's rows, never its old measure
        chosen = _which_measure(cube)
    elif partial and not measures and "count" not in aggregations:
        chosen = []
    else:
        counted = _counted(reading, spans)
        if "count" in aggregations and counted is not None and not counted.is_measure and not measures:
            return Attempt(cube, decline=Decline(f"The data model has no count of {counted.title.lower()}."))
        narrowed = bool(groups or conditions or grain or reading.date_ranges or reading.descending is not None)
        # The count stands for an unnamed measure only where the question counts things it names in the plural
        # ("bookings in Toulouse last year"), never for an amount ("how much did we invoice", "the total").
        plural_subject = any(tokens[p].plural for p in subject | event_positions)
        asks_amount = "total" in aggregations or any(t.lower == "much" for t in tokens)
        named_subject = (plural_subject or _names_subject(cube, spans)) and not asks_amount
        used = [*groups, *(c.member for c in conditions), *(m for m in (time, event) if m is not None)]
        chosen = _measures(
            cube, reading, aggregations, measures, named_subject and narrowed, used=used, plain_counts=plain_counts
        )
        counts_only = isinstance(chosen, list) and bool(chosen) and all(m.is_count for m in chosen)
        named_at = {p for span in spans for p in span.positions}
        totals = [  # "how many and total $": a total of something, besides the count ("in total" is the count's)
            p
            for p, flag in reading.aggregations.items()
            if flag == "total"
            and p not in named_at
            and tokens[p].lower != "overall"
            and not (p and tokens[p - 1].lower == "in")
            and not (p + 1 < len(tokens) and tokens[p + 1].lower in ("number", "count", "counts"))
        ]
        if "count" in aggregations and totals and counts_only:
            word = tokens[totals[0]].text
            chosen = Decline(f"I could not tell what '{word}' is a total of: name the amount.")
        if asks_amount and "count" not in aggregations and counts_only:  # "how much did we invoice": not a count
            assert isinstance(chosen, list)
            counted_names = ", ".join(m.title.lower() for m in chosen)
            reason = f"This asks for an amount, but I only found a count ({counted_names}): name the amount."
            chosen = Decline(reason, choices=_measure_titles(cube, amounts=True))
    if isinstance(chosen, Decline):
        return Attempt(cube, decline=chosen)
    if reading.date_ranges or grain:
        # The time dimension named, else the event's, else the only one the question did not name as a value,
        # else _default_date's.
        # A rate or an amount named ("completion rate") is no event; a count of things ("orders") may be.
        amounts = {p for span in spans if span.member.is_measure and not span.member.is_count for p in span.positions}
        one_word = set(time_span.positions) if time_span is not None and len(time_span.positions) == 1 else set()
        # A word of a dimension's name ("shipping method") names that dimension, not an event
        named_fields = {p for span in spans if not span.member.is_measure for p in span.positions}
        wording = {
            root(t.lower)
            for i, t in enumerate(tokens)
            if i not in amounts | event_positions | one_word | reading.date_positions | named_fields
            and t.lower not in FUNCTION_WORDS
        }
        # A verb naming a date ("received": the model's "received on") against a noun evoking another ("orders")
        # The date a verb names, else the thread's, against a noun evoking another ("orders received this year":
        # the order date or the receipt date? "how many of those were canceled in 2025?": the thread's start date
        # or the cancellation date?)
        verb_date = event if time is None else (time if one_word else None)
        anchor = verb_date or (thread_time if time is None else None)
        if anchor is not None:
            evoked = [m for m in cube.time_dimensions() if m != anchor and _event_roots(m) & wording]
            if evoked:
                return Attempt(cube, decline=_which_date([anchor, *evoked]))
        time = time or event or thread_time
        others = [m for m in cube.time_dimensions() if time_span is None or m != time_span.member]
        if time is None and len(others) > 1:
            dated = await _default_date(cube, others, chosen, wording, facts.dates_set)
            if isinstance(dated, Decline):
                return Attempt(cube, decline=dated)
            others = [dated]
        time = time or next(iter(others), None)
        if time is None:
            return Attempt(cube, unplaced=[reading.phrase(sorted(reading.date_positions)) or (grain or "")])
        # A value that names another date's event ("invoices paid in 2024": status paid, or the payment date?) when
        # the question names no date itself: asked, never the default date taken in silence.
        valued_roots = {root(tokens[i].lower) for i in valued_positions if tokens[i].lower not in FUNCTION_WORDS}
        evoked_by_values = [m for m in cube.time_dimensions() if m != time and _event_roots(m) & valued_roots]
        by_verb = verb_date is not None and not set(event_positions) <= subject  # not just the things counted
        named_time = time_span is not None and not set(time_span.positions) & valued_positions
        if evoked_by_values and not by_verb and not named_time:
            return Attempt(cube, decline=_which_date([time, *evoked_by_values]))
    elif (
        event is not None
        and _event_happened(event, event_positions, reading, conditions)
        and not (isinstance(chosen, list) and await _always_set(cube, chosen, event, facts.dates_set))
    ):
        # "subscriptions that churned": those with a churn date ("patients registered": all, as the data means)
        conditions.append(Condition(event, "set", ()))
    date_range = reading.date_ranges[0] if reading.date_ranges else None
    compared = None
    if reading.difference:  # "how much more did we invoice in 2024 than in 2023": one number
        reason = _difference_refused(chosen, groups, grain, having, reading, time.owner if time else "")
        if reason:
            return Attempt(cube, decline=Decline(reason, final=True))
        date_range, compared = reading.date_ranges
    elif periods is not None:  # "revenue in 2023 vs 2024", "Q1 2024 and Q1 2025": a row for each period
        grain, date_range, compared = periods
        if date_range.end == compared.start:  # "2023 vs 2024": one range of two years, a row per year
            date_range, compared = DateRange(date_range.start, compared.end), None
    elif joined is not None:
        date_range = joined
    elif len(reading.date_ranges) > 1:
        reason = "This names two periods that are not two whole days, months, quarters or years: ask for each."
        return Attempt(cube, decline=Decline(reason))
    if having and not (groups or grain):
        return Attempt(cube, decline=Decline("A condition on a measure needs a grouping (per what?)."))
    share: tuple[Condition, ...] = ()
    if "share" in aggregations and len(chosen) == 1 and not chosen[0].is_percent:
        parts = _share_parts(chosen[0], conditions, spans, reading, subject | event_positions)
        if isinstance(parts, Decline):
            return Attempt(cube, decline=parts)
        if groups or grain or having or compared or reading.difference or reading.descending is not None:
            reason = "I compute a share as one number: ask for it without a grouping, a ranking or a second period."
            return Attempt(cube, decline=Decline(reason))
        rate = _model_rate(cube, parts[1])
        if isinstance(rate, Decline):
            return Attempt(cube, decline=rate)
        if rate is not None:  # the model's own percentage, on the whole's rows
            chosen, conditions = [rate], parts[0]
        else:
            conditions, share = parts
    spanned = {p for span in spans for p in span.positions}
    priced = [t.text for i, t in enumerate(tokens) if t.lower in PRICE_WORDS and i not in spanned]
    if priced and not (chosen and chosen[0].is_money):  # "the cheapest order" ranks money, never a count
        reason = f"'{priced[0]}' ranks an amount of money: name it ('... by order value')."
        return Attempt(cube, decline=Decline(reason))
    grain_title = next((title for name, title in (time.granularities if time else ()) if name == grain), "")
    intent = Intent(
        cube=cube,
        measures=tuple(chosen),
        groups=tuple(groups),
        conditions=tuple(conditions),
        having=tuple(having),
        time=time,
        grain=grain,
        grain_title=grain_title.lower(),
        date_range=date_range,
        compared=compared,
        timezone=timezone,
        yearless=bool(reading.date_ranges) and reading.yearless[0] and date_range == reading.date_ranges[0],
        share=share,
        difference=reading.difference,
        aggregate=aggregated[0] if aggregated is not None else "",
    )
    if (reading.limit is not None or reading.descending is not None) and not (groups or grain or partial):
        # "the smallest order" with no grouping: a ranking of nothing, never answered with the measure's total
        return Attempt(cube, decline=Decline("This asks for a ranking, but I could not tell what to rank (by what?)."))
    judged = [m for m in intent.measures[:1] if not (m.is_count or (m.agg_type == "sum" and not m.is_percent))]
    if reading.judges and reading.descending is not None and judged:
        # "the worst bounce rate": more is worse there, and better for a conversion rate; the model does not say
        title = judged[0].title
        reason = f"'Best' and 'worst' depend on whether a higher {title.lower()} is better: say highest or lowest."
        return Attempt(cube, decline=Decline(reason, ambiguous=True))
    return Attempt(cube, intent=_ranked(intent, reading, labelled))


# Words of a percentage measure's name that say it is one, not what it is of.
RATE_WORDS = frozenset({"rate", "ratio", "percentage", "percent", "share", "pct", "of", "the", "a", "per"})
# Words after the thing a share is of that start what the part is ("what % of paid invoices WERE paid by card").
PART_VERBS = frozenset({"is", "are", "was", "were", "be", "been", "came", "come", "comes", "went", "go", "goes"})


def _share_parts(
    measure: Member, conditions: list[Condition], spans: list[Span], reading: Reading, subject: set[int]
) -> tuple[list[Condition], tuple[Condition, ...]] | Decline:
    """The conditions of a share question split into those of the whole and those of the part: a condition
    before the share word ("EMEA's share of revenue") or after the verb that follows the thing the share is of
    ("what % of paid invoices were paid by card") is the part's; between them, the whole's ("paid invoices"). With
    no such verb, what follows the thing is the part ("the share of revenue from desktop")."""
    title = measure.title.lower()
    if measure.agg_type not in ADDITIVE:
        return Decline(f"The data model has no share or percentage of {title}, and it does not add up over parts.")
    tokens = reading.tokens
    share_at = min(at for at, flag in reading.aggregations.items() if flag == "share")
    named = [p for span in spans if span.member == measure for p in span.positions] or sorted(subject)
    after = [p for p in named if p > share_at]
    thing_end = max(after) if after else share_at
    verb = next((i for i in range(thing_end + 1, len(tokens)) if tokens[i].lower in PART_VERBS), None)
    whole: list[Condition] = []
    part: list[Condition] = []
    starts = verb if verb is not None else thing_end
    for condition in conditions:
        (part if _names_part(condition, share_at, starts, reading) else whole).append(condition)
    if not part or any(c.at < 0 for c in conditions):
        reason = f"This asks for a share of {title}, but I could not tell of which part: name it ('... by card')."
        return Decline(reason)
    outside = sorted({c.member.title.lower() for c in part if c.member.owner != measure.owner})
    if outside:  # grouped by another cube's field, one row of the measure's cube may count in several parts
        names = ", ".join(outside)
        reason = f"I compute a share of {title} only over the fields of its own rows, and not over {names}."
        return Decline(reason, final=True)
    return whole, tuple(part)


def _aggregated_field(
    aggregations: set[str], measures: Sequence[Member], numeric_mentions: Sequence[Member]
) -> tuple[str, Member] | None:
    """("avg" or "sum", the field) when the question aggregates one numeric field and names no measure but the
    count of the things it is of ("average list price of parts", "total employees of fintech accounts"); None
    otherwise."""
    asked = aggregations & {"average", "total"}
    amounts = [m for m in measures if not m.is_count]
    if len(asked) != 1 or amounts or len(numeric_mentions) != 1 or aggregations & {"count", "share", "distinct"}:
        return None
    return ("avg" if "average" in asked else "sum"), numeric_mentions[0]


def _measure_of_field(cube: Cube, aggregate: str, field: Member) -> Member | None:
    """The one measure of ``cube`` that aggregates ``field`` as asked, by its name: "Average retail price" (avg)
    for the field "Retail price"."""
    named = {phrase for phrase in field.phrases if phrase}
    twins = [
        m
        for m in cube.measures()
        if m.agg_type == aggregate and any(set(f) <= set(p) for f in named for p in m.phrases if len(p) > len(f))
    ]
    return twins[0] if len(twins) == 1 else None


def _names_part(condition: Condition, share_at: int, starts: int, reading: Reading) -> bool:
    """Whether a condition is of the part a share is asked of: after the words that start it, or right before the
    share word ("the EMEA share", "EMEA's share"), never in a clause before it ("of the invoices that were paid,
    what percentage ...": the whole)."""
    if condition.at > starts:
        return True
    between = [t.lower for t in reading.tokens[condition.at + 1 : share_at]]
    return condition.at < share_at and not any(word in FUNCTION_WORDS or word == "," for word in between)


def _model_rate(cube: Cube, part: Sequence[Condition]) -> Member | Decline | None:
    """The model's own percentage measure for a share's part ("what % of visits bounced": Bounce rate, for the part
    "bounced is true"): one whose name shares a root with the part's field or values. None when no measure does;
    asked back when several do."""
    words = {w for c in part for w in c.member.title.lower().split()}
    values = [v for c in part if not c.numeric and c.member.type == "string" for v in c.values]
    words |= {w for v in values for w in v.lower().split()}
    roots = {root(w) for w in words if w.isalpha() and w not in RATE_WORDS}
    rates = [m for m in cube.measures() if m.is_percent and roots & {root(w) for p in m.phrases for w in p}]
    if len(rates) > 1:
        titles = tuple(m.title for m in rates)
        return Decline(f"This could be {' or '.join(titles)}: say which one.", ambiguous=True, choices=titles)
    return rates[0] if rates else None


def _difference_refused(
    chosen: Sequence[Member],
    groups: Sequence[Member],
    grain: str | None,
    having: Sequence[Condition],
    reading: Reading,
    time_owner: str,
) -> str:
    """Why a difference between two periods is not computed ("" when it is)."""
    if len(chosen) != 1 or groups or grain or having or reading.descending is not None:
        return "I compute a difference between two periods as one number: ask it for one measure, without a grouping."
    first, second = reading.date_ranges
    if period_grain(first, second) is None and (chosen[0].agg_type not in ADDITIVE or time_owner != chosen[0].owner):
        title = chosen[0].title
        return (
            f"{title} does not add up over the days of its date: I compare it between two whole days, months, quarters "
            "or years."
        )
    return ""


# Measures that add up or count their rows, each of which the date of their own event places in a period.
PLAIN_AGGREGATIONS = frozenset({"sum", "count", "countDistinct", "countDistinctApprox", "min", "max", "avg"})


async def _default_date(
    cube: Cube, dates: list[Member], measures: Sequence[Member], wording: set[str], dates_set: DateCoverage
) -> Member | Decline:
    """Which of several dates a period is of when the question names none: never a guess, since it changes the
    answer. The one date a word of the question names as its event ("orders in 2024": the order date; "canceled in
    2024": the cancellation date); else the one date the measures' titles name ("Invoiced amount": the invoice
    date); else the one date of the cube the measures come from (in a view: orders' revenue,
    the orders' date); else the one the model calls plainly "date" (its title or a synonym); else, when no word
    names any date's event and none of the measures' own cube's dates is set on every row, the one date of another
    cube every row of the measures has in the data (a line item's order date, where its ship and receipt dates are
    empty until it ships or arrives); else the question must say. ``wording``: the
    roots of the question's words that may name an event."""
    evoked = [m for m in dates if _event_roots(m) & wording]
    if len(evoked) == 1:
        return evoked[0]
    # "Invoiced amount": the invoice date; never for a ratio ("Completion rate" of orders is by the orders' date)
    added = all(m.agg_type in PLAIN_AGGREGATIONS and not m.is_percent for m in measures)
    titled = {root(word) for m in measures for word in m.title_phrase} if added else set()
    dated = [m for m in dates if _event_roots(m) & titled]
    if not dated and added:  # else its other names ("Collected", also "payments received": the payment date)
        named = {root(word) for m in measures for phrase in m.phrases for word in phrase}
        by_names = [m for m in dates if _event_roots(m) & named]
        dated = by_names if len(by_names) == 1 else []
    if len(dated) == 1:
        return dated[0]
    owners = {m.owner for m in measures}
    own = [m for m in dates if m.owner in owners] if cube.is_view else []
    if len(own) == 1:
        return own[0]
    plain = [m for m in (own or dates) if ("date",) in m.phrases]
    if len(plain) == 1:
        return plain[0]
    others = [m for m in dates if m not in own]
    # Only when the measures' own cube has no date every row has: another cube's, the one they belong to (a line
    # item's order date); never one of their own cube's dates chosen by the data ("MRR in 2024": by start date?)
    unnamed = not evoked and not dated and others and all(m.is_measure for m in measures)
    if unnamed and not [d for d in own if await _always_set(cube, measures, d, dates_set)]:
        kept = [d for d in others if await _always_set(cube, measures, d, dates_set)]
        if len(kept) == 1:
            return kept[0]
    return _which_date(own or dates)


async def _always_set(cube: Cube, measures: Sequence[Member], date: Member, dates_set: DateCoverage) -> bool:
    """Whether every row of each of ``measures`` has ``date`` in the data."""
    for measure in measures:
        additive = measure.is_count or measure.agg_type == "sum"
        if not await dates_set(cube.name, measure.name, date.name, additive):
            return False
    return True


def _label(cube: Cube, noun: str, nouns: Mapping[str, frozenset[str]]) -> Member | None:
    """The one string dimension of ``cube`` that names each thing ``noun`` names ("customers": the accounts): of that
    cube, titled with one of its one-word names ("Account", "Customer") or called "name"; None when there is not
    exactly one, or ``noun`` names several cubes."""
    entities = nouns.get(noun, frozenset())
    if len(entities) != 1:
        return None
    [entity] = entities
    names = {(word,) for word, owners in nouns.items() if entity in owners}
    labels = [
        m
        for m in cube.dimensions()
        if m.owner == entity and m.type == "string" and (("name",) in m.phrases or m.title_phrase in names)
    ]
    return labels[0] if len(labels) == 1 else None


def _event_happened(event: Member, positions: set[int], reading: Reading, conditions: list[Condition]) -> bool:
    """Whether a verb naming ``event`` with no period says the event happened ("subscriptions that churned",
    "accounts that signed up"): a verb form that is not a light one ("placed", "registered": what the data means),
    and not one that only says how a value came about ("lines shipped by truck": the ship mode)."""
    tokens = reading.tokens
    verb = any(tokens[i].lower.endswith("ed") or i + 1 in positions for i in positions)
    light = all(tokens[i].lower in LIGHT_VERBS for i in positions)
    event_roots = {root(tokens[i].lower) for i in positions}
    told_by_value = any(
        event_roots & {root(word) for phrase in c.member.phrases for word in phrase} for c in conditions
    )
    return verb and not light and not told_by_value


def _counted_entity(
    cube: Cube,
    reading: Reading,
    spans: list[Span],
    nouns: Mapping[str, frozenset[str]],
    plain_counts: Mapping[str, str],
) -> Member | None:
    """The count of the things named right after "how many" by their cube's name, not a measure's ("how many visits
    did tablet users make": the sessions, which "visits" names), when ``cube`` has exactly one."""
    counts = [p for p, flag in reading.aggregations.items() if flag == "count"]
    at = max(counts) + 1 if counts else len(reading.tokens)
    if at >= len(reading.tokens) or any(s.start <= at < s.end for s in spans):
        return None
    return _entity_count(cube, reading.tokens[at].stem, nouns, plain_counts)


def _entity_count(
    cube: Cube, noun: str, nouns: Mapping[str, frozenset[str]], plain_counts: Mapping[str, str]
) -> Member | None:
    """The count, in ``cube``, of the one cube ``noun`` names ("visits": the sessions' count), when it has one."""
    entities = {e for e in nouns.get(noun, frozenset()) if e in plain_counts}  # cubes, not views
    own = [m for m in cube.measures() if m.owner in entities and m.agg_type == "count"]
    plain = [m for m in own if (m.alias or m.name) in plain_counts.values()]  # the cube's own count, not a filtered one
    own = plain or own
    return own[0] if len(entities) == 1 and len(own) == 1 else None


def _measure_titles(cube: Cube, *, amounts: bool = False) -> tuple[str, ...]:
    """The titles of the measures a question could name instead (for ``amounts``, those that are no count)."""
    return tuple(dict.fromkeys(m.title for m in cube.measures() if not (amounts and m.is_count)))


def _only_count(cube: Cube, used: Sequence[Member], plain_counts: Mapping[str, str]) -> Member | None:
    """The count a question that names none asks for: the cube's own; in a view, the one of the only cube its counts
    count, else of the only cube whose members the question uses ("count by status": the orders the status is of;
    "signups per quarter": the accounts that signed up); None when that is not one cube (how many of which?)."""
    count = cube.count_measure()
    if count is None or not cube.is_view:
        return count
    counts = [m for m in cube.measures() if m.is_count]
    owners = {m.owner for m in counts}
    if len(owners) == 1:
        return count
    asked = {m.owner for m in used}
    if len(asked) != 1:
        return None
    [owner] = asked
    own = [m for m in counts if m.owner == owner]
    plain = [m for m in own if m.alias == plain_counts.get(owner)] or [m for m in own if m.agg_type == "count"]
    return plain[0] if len(plain) == 1 else None


def _which_count(cube: Cube) -> Decline:
    """The decline of a count whose things the question does not name, offering the model's counts."""
    counts = tuple(dict.fromkeys(m.title for m in cube.measures() if m.is_count))
    if not counts:
        return Decline(f"{cube.title} has no count.")
    return Decline("I could not tell what to count: name the things.", ambiguous=True, choices=counts)


def _which_measure(cube: Cube) -> Decline:
    """The decline of a question that names no measure it can be answered with, offering the cube's."""
    return Decline("I could not tell which measure you mean.", choices=_measure_titles(cube))


def _which_date(dates: Sequence[Member]) -> Decline:
    """The decline of a period that could be of several ``dates``, offering each."""
    titles = tuple(m.title for m in dates)
    named = ", ".join(t.lower() for t in titles[:-1]) + f" or {titles[-1].lower()}"
    return Decline(f"Which date should the period be of: {named}? Say it.", ambiguous=True, choices=titles)


@functools.lru_cache(maxsize=1024)
def _event_roots(member: Member) -> frozenset[str]:
    """The roots of the words naming a time dimension other than "date", "at" and the like: the event it dates
    ("Signup date": signup; "canceled_ts", "Cancellation date": cancel). Read for every word of every question."""
    return frozenset(root(word) for phrase in member.phrases for word in phrase if word not in DATE_WORDS)


def _event(cube: Cube, reading: Reading, candidates: set[int]) -> tuple[Member | None, set[int]]:
    """The one time dimension words among ``candidates`` name as an event ("signed up": Signup date, "churned":
    churn date), with their positions; None when no date or several are named so."""
    tokens = reading.tokens
    named: dict[str, tuple[Member, set[int]]] = {}
    for i in sorted(candidates):
        forms = [(root(tokens[i].lower), {i})]
        if i + 1 in candidates and tokens[i + 1].lower in PARTICLES:  # "signed up": signup
            forms.insert(0, (root(root(tokens[i].lower) + tokens[i + 1].lower), {i, i + 1}))
        for form, positions in forms:
            matching = [m for m in cube.time_dimensions() if form in _event_roots(m)]
            if len(matching) == 1:
                member, taken = named.get(matching[0].name, (matching[0], set()))
                named[matching[0].name] = (member, taken | positions)
                break
    if len(named) != 1:
        return None, set()
    [(member, positions)] = named.values()
    return member, positions


def _qualifying_heads(spans: list[Span]) -> list[Span]:
    """ "net billings": the one measure whose title is the first word before the title of the measure named next
    ("Net" + "Invoiced amount", named "billings": Net invoiced amount), never both."""
    kept: list[Span] = []
    for span in spans:
        before = kept[-1] if kept else None
        if (
            before is not None
            and before.end == span.start
            and before.end - before.start == 1
            and before.member.is_measure
            and span.member.is_measure
            and before.member.title_phrase[1:] == span.member.title_phrase
            and before.member_phrase == before.member.title_phrase[:1]
        ):
            kept[-1] = Span(before.start, span.end, before.member, before.member.title_phrase)
            continue
        kept.append(span)
    return kept


def _headed(spans: list[Span], reading: Reading) -> tuple[list[Span], set[int]]:
    """The spans without a generic head noun right after a dimension ("insurance type": the insurance, not the
    visit type), and the positions such heads take."""
    kept: list[Span] = []
    absorbed: set[int] = set()
    for span in spans:
        generic = span.end - span.start == 1 and reading.tokens[span.start].lower in GENERIC_HEADS
        if generic and kept and kept[-1].end == span.start and not kept[-1].member.is_measure:
            absorbed.add(span.start)
            continue
        kept.append(span)
    named = {p for span in kept for p in span.positions}
    for span in kept:
        after = span.end
        free = after < len(reading.tokens) and after not in named
        if not span.member.is_measure and free and reading.tokens[after].lower in GENERIC_HEADS:
            absorbed.add(after)
    return kept, absorbed


def _owned(spans: list[Span], reading: Reading, nouns: Mapping[str, frozenset[str]]) -> tuple[list[Span], set[int]]:
    """The spans without a one-word name of a cube right before another dimension ("product category": the products'
    category, not the product name and the category; "customer countries"), and the positions such names take."""
    dropped: set[int] = set()
    kept: list[Span] = []
    for index, span in enumerate(spans):
        following = spans[index + 1] if index + 1 < len(spans) else None
        if (
            following is not None
            and following.start == span.end
            and len(span.member_phrase) == 1
            and not span.member.is_measure
            and not following.member.is_measure
            and following.member.type != "time"
            and (
                following.member.owner in nouns.get(span.member_phrase[0], frozenset())
                # "customer countries": the customers' countries; "customers placed": no modifier, the plural
                or (span.member_phrase[0] in nouns and reading.tokens[span.start].lower == span.member_phrase[0])
            )
        ):
            dropped.update(span.positions)
            continue
        kept.append(span)
    return kept, dropped


def _names_cube_counted(cube: Cube, span: Span, reading: Reading) -> bool:
    """Whether a dimension named right after "how many" is the cube's own name ("how many doctors": the physicians
    counted, not their names)."""
    counted_at = {p + 1 for p, flag in reading.aggregations.items() if flag == "count"}
    return (
        span.start in counted_at
        and not span.member.is_measure
        and span.member_phrase in cube.phrases
        and cube.count_measure() is not None
    )


def _per_row(cube: Cube, span: Span, reading: Reading) -> Span:
    """A measure compared with no grouping ("appointments with a fee under 40") as the numeric dimension of the same
    name, when there is one: a condition on each row, not on a total there is nothing to group by."""
    compared = any(start == span.end for start, *_ in reading.comparisons)
    if not (compared and span.member.is_measure and not span.member.is_count):
        return span
    same = [m for m in cube.dimensions() if m.type == "number" and span.member_phrase in m.phrases]
    return Span(span.start, span.end, same[0], span.member_phrase) if len(same) == 1 else span


def _amount_named_before(cube: Cube, reading: Reading, start: int) -> Member | None:
    """The one amount (a numeric dimension or a measure other than a count) named right before a comparison, "of"
    allowed between ("an average wait of over 30")."""
    stems = reading.stems
    end = start - 1 if start >= 2 and reading.tokens[start - 1].lower == "of" else start
    found = {
        m
        for m in cube.members
        if m.type == "number" and not m.is_count
        for p in m.phrases
        if len(p) <= end and tuple(stems[end - len(p) : end]) == p
    }
    return next(iter(found)) if len(found) == 1 else None


def _unit_members(cube: Cube, reading: Reading, at: int, taken: set[int]) -> list[Member]:
    """The numeric members a comparison's unit could name ("3 items": the items in an order); the dimensions among
    them when there are any."""
    if at >= len(reading.tokens) or at in taken or reading.tokens[at].lower in FUNCTION_WORDS:
        return []
    word = reading.tokens[at].stem
    numeric = [m for m in cube.members if (m.is_measure or m.type == "number") and any(word in p for p in m.phrases)]
    exact = [m for m in numeric if (word,) in m.phrases]  # "10000 orders": the orders themselves
    if len(exact) == 1:
        return exact
    fitting = [m for m in numeric if not m.is_measure] or numeric
    hints = {stem(w) for t in reading.tokens for w in AMOUNT_VERBS.get(t.lower, ())}
    hinted = [m for m in fitting if any(hints & set(p) for p in m.phrases)]  # "lasting 60 minutes": the duration
    return hinted if len(hinted) == 1 else fitting


def _subject(cube: Cube, reading: Reading, candidates: set[int]) -> set[int]:
    """The positions among ``candidates`` of a phrase naming the cube itself ("how many purchases")."""
    stems = reading.stems
    for phrase in sorted(cube.phrases, key=len, reverse=True):
        for start in range(len(stems) - len(phrase) + 1):
            positions = set(range(start, start + len(phrase)))
            if tuple(stems[start : start + len(phrase)]) == phrase and positions <= candidates:
                return positions
    return set()


def _qualified(
    reading: Reading,
    left: set[int],
    valued: set[int],
    nouns: Mapping[str, frozenset[str]],
    cube: Cube,
    conditions: Sequence[Condition] = (),
) -> set[int]:
    """Words left that name an entity of ``cube`` right after a value or "of"/"from" ("private patients"); never one
    the cube does not hold ("number of vendors" on customer accounts), nor one after a value of another entity's
    field ("chinese vendors" with China found as the customers' nation)."""
    held = {m.owner for m in cube.members} | {cube.name}
    placed = set()
    for i in sorted(left):
        entities = nouns.get(reading.tokens[i].stem, frozenset()) & held
        if not entities:
            continue
        before = i - 1
        while before > 0 and reading.tokens[before].lower in LIGHT_VERBS:
            before -= 1  # "privately insured patients"
        if before in valued:
            value = _value_before(conditions, before)
            if value is not None and not _of_entity(value.member, entities, nouns):
                continue
        if reading.tokens[i].stem in nouns and (before in valued or reading.tokens[before].lower in OWNER_WORDS):
            placed.add(i)
    return placed


def _value_before(conditions: Sequence[Condition], at: int) -> Condition | None:
    """The condition read from the last value the question names at or before position ``at``."""
    return max((c for c in conditions if 0 <= c.at <= at), key=lambda c: c.at, default=None)


def _of_entity(member: Member, entities: frozenset[str], nouns: Mapping[str, frozenset[str]]) -> bool:
    """Whether ``member`` is a field of one of ``entities`` (cubes): its own cube's, or named with one of their
    names ("Supplier nation" of the suppliers)."""
    if member.owner in entities:
        return True
    named = {cube for phrase in member.phrases for word in phrase for cube in nouns.get(word, frozenset())}
    return bool(named & entities)


def _owner_nouns(
    reading: Reading, left: set[int], spans: list[Span], nouns: Mapping[str, frozenset[str]], cube: Cube
) -> set[int]:
    """Words left that name the cube a dimension named right after them comes from ("patient cities": the
    patients' city)."""
    placed = set()
    for span in spans:
        before = span.start - 1
        if before not in left or span.member.is_measure:
            continue
        if span.member.owner in nouns.get(reading.tokens[before].stem, frozenset()):
            placed.add(before)
    return placed


def _counted(reading: Reading, spans: list[Span]) -> Member | None:
    """The member named right after "how many" / "number of", if one is."""
    counts = [p for p, flag in reading.aggregations.items() if flag == "count"]
    if not counts:
        return None
    return next((s.member for s in spans if s.start == max(counts) + 1), None)


def _comparison_target(
    cube: Cube, spans: list[Span], start: int, end: int, reading: Reading, taken: set[int]
) -> Member | None:
    """What a comparison with no unit compares: the numeric member named right before it ("revenue over 1000");
    for a count of things ("orders over 500") the amount of each thing, when the cube has exactly one."""
    before = next((s for s in reversed(spans) if s.end == start), None)
    implied = {stem(w) for w in AMOUNT_VERBS.get(reading.tokens[start].lower, ())}  # "older than 60": the age
    if implied:
        named = [m for m in cube.dimensions() if m.type == "number" and any(implied & set(p) for p in m.phrases)]
        if len(named) == 1:
            return named[0]
    if before is None and start > 0 and start - 1 not in taken:
        word = reading.tokens[start - 1].stem  # "a wait above 30": the head word of a numeric member
        named = [m for m in cube.members if (m.is_measure or m.type == "number") and any(word in p for p in m.phrases)]
        dimensions = [m for m in named if not m.is_measure]
        if len(dimensions) == 1 or len(named) == 1:
            taken.add(start - 1)
            return (dimensions or named)[0]
    if before is not None and before.member.is_measure and not before.member.is_count:
        return before.member
    after = next((s for s in spans if s.start == end + 1 and reading.tokens[end].lower in ("in", "of")), None)
    if after is not None and after.member.type == "number" and not after.member.is_count:
        return after.member  # "over 1 million dollars in revenue"
    if before is not None and not before.member.is_measure and before.member.type == "number":
        return before.member
    unit = reading.tokens[end] if end < len(reading.tokens) else None
    if unit is not None and unit.lower not in FUNCTION_WORDS and end not in taken:
        return None  # a unit ("60 minutes") that names no numeric member: not an amount of money
    money = [m for m in cube.dimensions() if m.type == "number" and m.is_money]
    if len(money) == 1:
        return money[0]
    return None


async def _values(
    cube: Cube, reading: Reading, taken: set[int], holders: list[Member], lookup: ValueLookup
) -> tuple[list[Condition], set[int], set[int], set[str]]:
    """Conditions for words the data holds as values of the cube's string dimensions ("completed", "New York"),
    longest phrases first; the dimensions the question named ("status completed") are looked in first. Values of
    one dimension joined by "or"/"and" make one condition. Returns the conditions, the positions left, the
    positions the values took and the dimensions whose values "and" joins ("men and women")."""
    tokens = reading.tokens
    left = {i for i in range(len(tokens)) if i not in taken and tokens[i].lower not in FUNCTION_WORDS}
    if all(tokens[i].lower in LIGHT_VERBS for i in left):
        return [], left, set(), set()
    strings = [m for m in cube.dimensions() if m.type == "string"]
    ordered = [*holders, *[m for m in strings if m not in holders]]
    runs = _runs(sorted(left))
    written = {
        reading.phrase(run[a:b]).strip('"')
        for run in runs
        for a in range(len(run))
        for b in range(a + 1, min(len(run), a + MAX_VALUE_WORDS) + 1)
    }
    candidates = written | {singular(text) for text in written}
    candidates |= {key(text) for text in written for key in (_plain, _participle)} - {""}
    candidates |= {name for text in written for name in place_names(text)}
    place_fields = [m for m in ordered if _holds_places(m)]
    found_values: dict[str, dict[str, str]] = {}  # dimension -> lower value -> value
    for member in ordered:
        values = await lookup(cube.name, member.name, sorted(candidates))
        if values:
            found_values[member.name] = {value_key(v): v for v in values}
    matched: list[tuple[Member, str, list[int]]] = []
    for run in runs:
        a = 0
        while a < len(run):
            for b in range(min(len(run), a + MAX_VALUE_WORDS), a, -1):
                text = reading.phrase(run[a:b]).strip('"').lower()
                keys = tuple(value_key(k) for k in (text, singular(text), _plain(text), _participle(text)) if k)
                owners = [(m, key) for key in keys for m in ordered if key and key in found_values.get(m.name, {})]
                places = [value_key(name) for name in place_names(text)]
                owners += [(m, key) for key in places for m in place_fields if key in found_values.get(m.name, {})]
                if owners:
                    member, key = owners[0]
                    matched.append((member, found_values[member.name][key], run[a:b]))
                    a = b
                    break
            else:
                a += 1
    conditions: dict[tuple[str, str], Condition] = {}
    used: set[int] = set()
    for member, value, positions in matched:
        operator = "notEquals" if positions[0] in reading.negated else "equals"
        previous = conditions.get((member.name, operator))
        held = previous.values if previous else ()
        joined = held if value in held else (*held, value)
        at = min(previous.at, positions[0]) if previous else positions[0]
        conditions[(member.name, operator)] = Condition(member, operator, joined, at=at)
        used.update(positions)
    # Connectors between values of one dimension ("completed or shipped") are placed with them.
    for i in left - used:
        if tokens[i].lower in ("or", "and", "nor", *VERSUS) and i - 1 in used and i + 1 in used:
            used.add(i)
    owner_at = {p: member for member, _value, positions in matched for p in positions}

    def next_value(i: int) -> int:
        """The position after "and" where the next value starts ("and in healthcare", "and the United Kingdom")."""
        while i < len(tokens) and tokens[i].lower in JOINED_FILLERS and i not in owner_at:
            i += 1
        return i

    # Values compared are each answered, joined by "or" too ("which has more, EMEA or APAC?").
    joiners = ("and", *VERSUS, *(("or",) if reading.compares else ()))
    joined_by_and = {
        owner_at[i - 1].name
        for i, token in enumerate(tokens)
        if token.lower in joiners
        and i - 1 in owner_at
        and owner_at[i - 1] == owner_at.get(next_value(i + 1))
        and not {i - 1, next_value(i + 1)} & reading.negated
    }
    return list(conditions.values()), left - used, used, joined_by_and


def _holds_places(member: Member) -> bool:
    """Whether a field's name says it holds places ("Country", "hq_country", "Sales territory")."""
    return any(word in PLACE_FIELD_WORDS for phrase in member.phrases for word in phrase)


def _plain(text: str) -> str:
    """The value an everyday word stands for ("women": female) or an adverb's adjective ("privately": private);
    "" when neither."""
    lower = text.lower()
    if lower in VALUE_WORDS:
        return VALUE_WORDS[lower]
    if " " not in lower and lower.endswith("ly") and len(lower) > 5:
        return lower[:-2]
    return ""


def _participle(text: str) -> str:
    """The value a past participle says of a thing ("voided": void, "paused": pause); "" for other words."""
    lower = text.lower()
    if " " in lower or len(lower) < 6 or not lower.endswith("ed"):
        return ""
    return lower[:-2]


def singular(text: str) -> str:
    """``text`` with its last word's plural folded ("no-shows": "no-show"), as values are written."""
    head, _, last = text.rpartition(" ")
    folded = stem(last.lower())
    return f"{head} {folded}" if head else folded


def _runs(positions: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for p in positions:
        if runs and runs[-1][-1] == p - 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


def _predicated(reading: Reading, counts: list[Member]) -> bool:
    """Whether the second count is said of the first ("visits were no-shows", "orders are returned ones")."""
    words = [t.lower for t in reading.tokens]
    return any(word in COPULAS for word in words) and len(counts) == 2


def _acted(reading: Reading, counts: list[Member]) -> bool:
    """Whether the first count did something to the second ("customers placed orders", "patients booked visits")."""
    first, second = (_positions_of(m, reading) for m in counts)
    if not first or not second or first[-1] >= second[0]:
        return False
    between = [t.lower for t in reading.tokens[first[-1] + 1 : second[0]]]
    return bool(between) and all(w in LIGHT_VERBS or w in FUNCTION_WORDS for w in between)


def _distinct_count_named(cube: Cube, word: str, nouns: Mapping[str, frozenset[str]]) -> Member | None:
    """The one distinct count of ``cube`` a phrase of which says ``word`` or another name of the things it names
    ("distinct customers": Customers who ordered; Billed accounts, when "customers" and "accounts" name one cube)."""
    entities = nouns.get(word, frozenset())
    names = {word} | {other for other, owners in nouns.items() if owners & entities}
    found = [m for m in cube.measures() if m.is_distinct_count and any(set(p) & names for p in m.phrases)]
    return found[0] if len(found) == 1 else None


def _distinct(cube: Cube, count: Member) -> Member:
    """For "distinct customers": the distinct count named like ``count``, when the cube has one."""
    if count.is_distinct_count:
        return count

    def bare(member: Member) -> set[tuple[str, ...]]:
        return {tuple(w for w in p if w not in DISTINCT_STEMS) for p in member.phrases}

    alike = [m for m in cube.measures() if m.is_distinct_count and bare(m) & bare(count)]
    return alike[0] if len(alike) == 1 else count


def _without_subjects(measures: list[Member], spans: list[Span], reading: Reading, valued: set[int]) -> list[Member]:
    """``measures`` without a count that only says whose measure it is: "average age of customers", "revenue from
    female customers", "average fee, counting attended visits only"."""
    kept = list(measures)
    seen_other = False
    fields = {p for s in spans if not s.member.is_measure for p in s.positions}
    for span in spans:
        member = span.member
        if member.is_count and seen_other and member in kept:
            before = {t.lower for t in reading.tokens[max(0, span.start - 3) : span.start]}
            after = reading.tokens[span.end].lower if span.end < len(reading.tokens) else ""
            # "revenue have orders placed since April brought in": the orders whose revenue it is
            if (
                before & OWNER_WORDS
                or span.start - 1 in valued
                or after in LIGHT_VERBS
                or _owned_after(span, reading, valued | fields)
            ):
                kept.remove(member)
        if member.is_measure:
            seen_other = True
    return kept


def _owned_after(span: Span, reading: Reading, qualifiers: set[int]) -> bool:
    """Whether a word naming whose measure it is leads to ``span`` across values, fields and function words only
    ("the ARR on our active enterprise plan subscriptions"), never across "and"/"or" (two things asked)."""
    j = span.start - 1
    tokens = reading.tokens
    while j >= 0 and tokens[j].lower not in OWNER_WORDS and tokens[j].lower not in ("and", "or"):
        if j not in qualifiers and tokens[j].lower not in FUNCTION_WORDS:
            return False
        j -= 1
    return j >= 0 and tokens[j].lower in OWNER_WORDS


def _names_subject(cube: Cube, spans: list[Span]) -> bool:
    """Whether a dimension's phrase begins with the cube's own name ("patients registered": the patients' registration
    date), so the question names the cube as well."""
    return any(
        not span.member.is_measure
        and any(len(span.member_phrase) > len(p) and span.member_phrase[: len(p)] == p for p in cube.phrases)
        for span in spans
    )


def _measures(
    cube: Cube,
    reading: Reading,
    aggregations: set[str],
    named: list[Member],
    counted_subject: bool,
    *,
    used: Sequence[Member],
    plain_counts: Mapping[str, str],
) -> list[Member] | Decline:
    """The measures the question asks for, with its aggregation words checked against their aggregation;
    ``counted_subject``: the question names the cube and narrows it (grouped, filtered, dated, ranked), so with no
    measure named it asks for the count ("bookings in Toulouse last year")."""
    if "count" in aggregations:
        if aggregations & {"average", "share"}:
            # "avg employee count", "what % of the number of visits": never the count alone
            what = "an average" if "average" in aggregations else "a share"
            return Decline(f"This asks for {what} of a count, which I cannot compute.", choices=_measure_titles(cube))
        counts = [m for m in named if m.is_count]
        if len(counts) == 2 and _predicated(reading, counts):
            return counts[1:]  # "how many visits were no-shows": the count of the ones that were
        if len(counts) == 2 and _acted(reading, counts):
            counts = counts[:1]  # "how many customers placed orders": the customers
        if "distinct" in aggregations:
            counts = [_distinct(cube, m) for m in counts]
        dropped = [m for m in named if not m.is_count and m not in counts]
        if counts and dropped:  # "how many open invoices" with "open" read as Open receivables: never left out
            titles = ", ".join(m.title.lower() for m in dropped)
            return Decline(f"This counts, but also names {titles}, which is no count: ask for each.")
        if counts:
            return counts
        countable = [m for m in named if m.agg_type == "sum" and not m.is_money and not m.is_percent]
        if countable:
            return countable  # "how many units": a sum of units
        if named:
            return Decline(f"The data model has no count of {named[0].title.lower()}.")
        count = _only_count(cube, used, plain_counts)
        if count is None:
            return _which_count(cube)
        return [count]
    if not named and aggregations & {"share", "average"}:
        # "what percentage of our customers were sourced through partners": a share of the count of the things
        # named (computed in attempt), never the count of the ones that were
        count = _only_count(cube, used, plain_counts) if counted_subject and "average" not in aggregations else None
        return [count] if count is not None else _which_measure(cube)
    if not named:
        count = _only_count(cube, used, plain_counts) if counted_subject else None
        return [count] if count is not None else _which_measure(cube)
    for member in named:
        if "average" in aggregations and member.agg_type != "avg":
            return Decline(f"The data model has no average of {member.title.lower()}.")
        if "share" in aggregations and not member.is_percent and not (len(named) == 1 and member.agg_type in ADDITIVE):
            # a count or a sum: the share of a part of it is computed (attempt); anything else does not add up
            return Decline(f"The data model has no share or percentage of {member.title.lower()}.")
        if "distinct" in aggregations and not member.is_distinct_count:
            return Decline(f"The data model has no distinct count of {member.title.lower()}.")
    return named


def _ranked(intent: Intent, reading: Reading, labelled: Mapping[str, list[int]]) -> Intent:
    """A ranking asked for ("top 5", "which category has the most") ranks the rows by the first measure;
    ``labelled``: where a group is named by the thing it names ("which customer")."""
    if reading.descending is None:
        return intent
    if not intent.groups and not intent.grain:
        return intent  # one number: nothing to rank
    limit = reading.limit
    if not reading.limit_said and len(intent.groups) == 1:
        # "top supplier by units": the one supplier; "top suppliers": ten
        positions = labelled.get(intent.groups[0].name) or _positions_of(intent.groups[0], reading)
        if positions and positions[0] in reading.ranked_after:
            last = reading.tokens[positions[-1]]
            limit = 1 if not last.plural and not last.lower.endswith("s") else limit
    if limit is None:
        for group in intent.groups:
            positions = labelled.get(group.name) or _positions_of(group, reading)
            if positions and positions[0] not in reading.group_starts:
                last = reading.tokens[positions[-1]]
                after = reading.tokens[positions[-1] + 1].lower if positions[-1] + 1 < len(reading.tokens) else ""
                # "which category": one; "which categories": all; "which of those regions was": one
                limit = 1 if not last.plural or after in SINGULAR_VERBS else None
                break
    if limit is None and intent.grain and not intent.groups:
        words = [t.lower for t in reading.tokens]
        asked = any(word == intent.grain and words[i - 1] in ("which", "what") for i, word in enumerate(words) if i)
        limit = 1 if asked else None  # "which month had the most orders": one month; "which months": all
    return intent.replaced(descending=reading.descending, limit=limit)


def _positions_of(member: Member, reading: Reading) -> list[int]:
    stems = reading.stems
    for phrase in member.phrases:
        for start in range(len(stems) - len(phrase) + 1):
            if tuple(stems[start : start + len(phrase)]) == phrase:
                return list(range(start, start + len(phrase)))
    return []


async def understand(
    question: str,
    cubes: Sequence[Cube],
    lookup: ValueLookup,
    *,
    zone: ZoneInfo,
    now: datetime,
    previous: Intent | None = None,
    suggest: bool = True,
    dates_set: DateCoverage | None = None,
) -> Intent | Decline:
    """The query that answers ``question`` (or, for a follow-up, ``previous`` with the part it changes), or a
    :class:`Decline` naming what could not be placed, with up to three questions like it that it answers (when
    ``suggest``). ``dates_set`` asks the data whether every row of a measure has a date (without it: never)."""
    facts = ModelFacts.of(cubes, dates_set)
    outcome = await _understood(question, cubes, facts, lookup, zone=zone, now=now, previous=previous)
    if isinstance(outcome, Intent) or not suggest:
        return outcome
    offered: list[str] = []
    for candidate in candidates(question, outcome, cubes):
        tried = await _understood(candidate, cubes, facts, lookup, zone=zone, now=now, previous=previous)
        if isinstance(tried, Intent):
            offered.append(candidate)
            if len(offered) == MAX_SUGGESTIONS:
                break
    return replace(outcome, suggestions=tuple(offered))


async def _understood(
    question: str,
    cubes: Sequence[Cube],
    facts: ModelFacts,
    lookup: ValueLookup,
    *,
    zone: ZoneInfo,
    now: datetime,
    previous: Intent | None = None,
) -> Intent | Decline:
    reading = read(question, zone=zone, now=now)
    if isinstance(reading, Decline):
        return reading
    reading = _spelled_out(reading, facts)
    if previous is not None and reading.follow_up:
        reading.taken.update(reading.pointing)  # "how many of those": the thread's last question, narrowed
        return await _follow_up(reading, previous, lookup, facts)
    if reading.pointing:  # "the MRR on those" with nothing answered before in the thread
        word = reading.tokens[reading.pointing[0]].text
        return Decline(f"I could not tell what '{word}' refers to: ask the whole question, naming it.")
    if reading.follow_up and not reading.aggregations:
        # "just for enterprise customers" with nothing answered before: a change to a question the thread does not
        # hold, never a question of its own
        return Decline("This reads as a change to an earlier question, and none was answered: ask the whole question.")
    ordered = sorted(cubes, key=lambda c: not c.is_view)
    views = [c for c in cubes if c.is_view]
    best: Attempt | None = None
    behind_ambiguity: set[str] = set()  # the cubes of a view that declined the question as ambiguous
    for cube in ordered:
        if cube.name in behind_ambiguity:
            # The view showing this cube found the question ambiguous: the cube's fewer members would hide that.
            continue
        tried = await attempt(cube, reading, lookup, zone.key, facts=facts)
        if tried.intent is not None:  # a field aggregated over its own cube's rows stays on that cube
            keep = cube.is_view or bool(tried.intent.aggregate)
            return tried.intent if keep else _through_view(tried.intent, views)
        if cube.is_view and tried.decline is not None and (tried.decline.ambiguous or tried.decline.final):
            behind_ambiguity |= {m.owner for m in cube.members}
        if best is None or _worse(best, tried):
            best = tried
    if best is None:
        return Decline("I found nothing in the data model to answer with.")
    if best.decline is not None:
        return best.decline
    words = ", ".join(f"'{w}'" for w in dict.fromkeys(best.unplaced))
    reason = f"I did not understand {words}: no measure, dimension or value of the data model matches."
    return Decline(reason, unplaced=tuple(dict.fromkeys(best.unplaced)))


def _shortened_words(cubes: Sequence[Cube]) -> frozenset[str]:
    """The words of members' names that no title or synonym of the model says ("brwsr", "ord", "rev" beside
    "revenue"): what may be a shortening of a word the question writes in full."""
    said = {word for c in cubes for phrase in c.phrases for word in phrase}
    for member in (m for c in cubes for m in c.members):
        named_title = " ".join(w.capitalize() for w in member.column.split("_"))
        if member.title != named_title:  # a title of its own ("ARR", "Browser"), not the one the name gives
            said |= {word for phrase in member.phrases[1:] for word in phrase} | set(member.title_phrase)
    named = {w for c in cubes for m in c.members for w in m.column.split("_") if w.isalpha()}
    return frozenset(named - said - AGGREGATION_WORDS)  # "min" of min_ord_rev shortens no "minutes"


def _spelled_out(reading: Reading, facts: ModelFacts) -> Reading:
    """The question with each word the model never says read as the one word of its members' names that shortens
    it ("browser" as the model's "brwsr", "source" as "src"), when exactly one does (:func:`_shortens`)."""
    tokens = list(reading.tokens)
    known = facts.words | facts.nouns.keys()
    for i, token in enumerate(tokens):
        word = token.lower
        if (
            not reading.free(i)
            or i in reading.aggregations
            or (i and token.text[:1].isupper())  # a name ("United States"), never a shortening's
            or not word.isalpha()
            or word in FUNCTION_WORDS
            or word in known
            or token.stem in known
        ):
            continue
        short = [a for a in facts.name_words if _shortens(a, word) or _shortens(a, token.stem)]
        if len(short) == 1:
            tokens[i] = replace(token, stem=short[0])
    return reading if tokens == reading.tokens else replace(reading, tokens=tokens)


def _shortens(short: str, word: str) -> bool:
    """Whether ``short`` is a way names shorten ``word``: its first three letters or more, at most three fifths of it
    ("ord", "rev", "sess"), or its first letter and then consonants of it in order ("brwsr", "src", "cmp", "dvc");
    never the word's own root ("unit" of "united")."""
    if len(short) < 3 or len(short) >= len(word) or short[0] != word[0] or root(word) == short:
        return False  # "unit" of "united", "part" of "partly": the word's own root, a word, not a shortening
    if word.startswith(short):
        return len(short) <= 0.6 * len(word)  # "ord" of "order"; never "stat" of "states"
    if any(letter in "aeiou" for letter in short[1:]) or word.endswith(("ed", "ing")):
        return False  # "cmp" never shortens "completed"
    # its consonants in order, a double one once ("browser": brwsr, "country": cntry), with at most one left out and
    # the last kept ("src" of "source", "ctry" of "country", "evt" of "event"; never "src" of "search")
    outline = word[0] + "".join(c for c in word[1:] if c not in "aeiou")
    outline = "".join(c for i, c in enumerate(outline) if i == 0 or c != outline[i - 1])
    rest = iter(outline[1:])
    return all(letter in rest for letter in short[1:]) and short[-1] == outline[-1] and len(outline) - len(short) <= 1


def _through_view(intent: Intent, views: Sequence[Cube]) -> Intent:
    """A cube's answer written against the first view that shows every member it uses (the model's public face; the
    same query, since a view member is its cube member), else as it is."""
    used = [*intent.measures, *intent.groups, *(c.member for c in (*intent.conditions, *intent.having))]
    if intent.time is not None:
        used.append(intent.time)
    for view in views:
        showing = {m.alias: m for m in view.members if m.alias}
        if all(m.name in showing for m in used):
            break
    else:
        return intent

    def shown(member: Member) -> Member:
        return showing[member.name]

    return intent.replaced(
        cube=view,
        measures=tuple(shown(m) for m in intent.measures),
        groups=tuple(shown(m) for m in intent.groups),
        conditions=tuple(replace(c, member=shown(c.member)) for c in intent.conditions),
        having=tuple(replace(c, member=shown(c.member)) for c in intent.having),
        time=shown(intent.time) if intent.time is not None else None,
    )


def _worse(best: Attempt, other: Attempt) -> bool:
    """Whether ``other`` is a better failure to report than ``best``: a reasoned decline, then fewer words left."""
    if other.decline is not None and best.decline is None:
        return not other.unplaced
    if best.decline is not None:
        return False
    return len(other.unplaced) < len(best.unplaced)


def _in_thread_year(reading: Reading, previous: Intent) -> DateRange | Decline:
    """A follow-up's period: one named without its year ("and in Q4?") takes the year of the thread's period; where
    it has not begun in that year, the latest one begun when the thread's year was not named either, else asked."""
    named = reading.date_ranges[0]
    thread = previous.date_range
    if not reading.yearless[0] or thread is None or thread.start is None or named.start is None:
        return named
    shift = thread.start.year - named.start.year

    def shifted(day: date | None) -> date | None:
        return day.replace(year=day.year + shift) if day is not None else None

    try:
        moved = DateRange(shifted(named.start), shifted(named.end))
    except ValueError:  # February 29 in a year without one: the period as named
        return named
    # the period as named is the latest one begun: in a later year it has not begun ("and in Q4?" after "Q1" read as
    # Q1 2025 in June 2025 is Q4 2024, never Q4 2025; after "Q1 2025", asked)
    if moved.start is not None and moved.start > named.start:
        if previous.yearless:
            return named
        return Decline(f"That period of {moved.start.year} has not begun: name the year.")
    return moved


def entity_nouns(cubes: Sequence[Cube]) -> dict[str, frozenset[str]]:
    """The one-word names of the model's cubes and views ("patients", "customers"), each with the cubes it names."""
    named: dict[str, set[str]] = {}
    for cube in cubes:
        for phrase in cube.phrases:
            if len(phrase) == 1:
                named.setdefault(phrase[0], set()).add(cube.name)
    return {noun: frozenset(names) for noun, names in named.items()}


async def _follow_up(reading: Reading, previous: Intent, lookup: ValueLookup, facts: ModelFacts) -> Intent | Decline:
    """``previous`` with what the follow-up changes: its dates, grain, groups, filters, measures or ranking."""
    if previous.computes:  # a share, a difference or an aggregate: a change would change what it is computed on
        return Decline("The last answer was one number computed from a query: ask the whole question with the change.")
    tried = await attempt(
        previous.cube, reading, lookup, previous.timezone, facts=facts, partial=True, thread_time=previous.time
    )
    if tried.decline is not None:
        return tried.decline
    if tried.unplaced:
        words = ", ".join(f"'{w}'" for w in dict.fromkeys(tried.unplaced))
        reason = f"I did not understand {words} as a change to the last question."
        return Decline(reason, unplaced=tuple(dict.fromkeys(tried.unplaced)))
    change = tried.intent
    updated = previous
    named, before = (change.time if change else None), previous.time
    if reading.date_ranges and named and before and named != before and previous.date_range is not None:
        # "how many of those were canceled in 2025?" after "subscriptions started in 2024": a period on each of two
        # dates, which one question of the thread does not hold; never the new period on the old date
        reason = f"This puts a period on {named.title.lower()}, and the last question's is on {before.title.lower()}"
        return Decline(reason + ": ask the whole question.")
    if len(reading.date_ranges) == 2 and change is not None:
        # "and 2023 vs 2024?": the two periods, each a row of their grain
        updated = updated.replaced(
            date_range=change.date_range,
            compared=change.compared,
            grain=change.grain,
            time=previous.time or change.time,
        )
    elif reading.date_ranges:
        in_year = _in_thread_year(reading, previous)
        if isinstance(in_year, Decline):
            return in_year
        updated = updated.replaced(
            date_range=in_year,
            compared=None,
            time=previous.time or (change.time if change else None),
            yearless=previous.yearless and reading.yearless[0],
        )
    if change is None:
        # Only dates (or nothing the model names) changed.
        return updated if updated is not previous else Decline("I could not tell what to change in the last question.")
    if change.measures and reading.pointing and previous.limit is not None and change.descending is None:
        # "the bounce rate on those" after "the three pages with the most visits": ranked again by the bounce rate,
        # they would be other pages; the same ones take their names
        return Decline("I could not tell which rows 'those' are once ranked by another measure: name them.")
    # "break that down by region too", "and revenue as well": joined to the thread's, never in their place
    if change.measures:
        added = tuple(m for m in change.measures if m not in updated.measures)
        updated = updated.replaced(measures=(*updated.measures, *added) if reading.adds else change.measures)
    if previous.limit is not None and (
        (change.groups and reading.adds) or (change.grain and change.grain != previous.grain)
    ):
        # "break that down by month" after "top 5 customers": the five split by month, which a ranking of the split
        # rows would not keep
        return Decline("I could not split the ranked rows of the last answer and keep them: ask the whole question.")
    if change.groups:
        kept = tuple(c for c in updated.conditions if c.member not in change.groups)
        added = tuple(g for g in change.groups if g not in updated.groups)
        updated = updated.replaced(groups=(*updated.groups, *added) if reading.adds else change.groups, conditions=kept)
    if change.grain:
        updated = updated.replaced(grain=change.grain, grain_title=change.grain_title, time=change.time)
    if change.conditions:
        kept = tuple(c for c in updated.conditions if all(c.member != n.member for n in change.conditions))
        updated = updated.replaced(conditions=(*kept, *change.conditions))
    if change.having:
        updated = updated.replaced(having=change.having)
    if change.descending is not None:
        updated = updated.replaced(descending=change.descending, limit=change.limit)
    elif reading.descending is not None and (updated.groups or updated.grain):
        # "and the bottom three?": the thread's rows ranked the other way
        updated = updated.replaced(descending=reading.descending, limit=reading.limit or updated.limit)
    if _asks_amount_of_a_count(reading, updated):
        # "how much was billed to each of those?" after a count of invoices: an amount the words did not place
        counted = ", ".join(m.title.lower() for m in updated.measures)
        return Decline(f"This asks for an amount, but the last question counted ({counted}): name the amount.")
    return updated


def _asks_amount_of_a_count(reading: Reading, intent: Intent) -> bool:
    """Whether "how much" (not "how many") asks a follow-up whose measures are all counts."""
    words = [t.lower for t in reading.tokens]
    much = any(w == "much" and i and words[i - 1] in ("how", "so") for i, w in enumerate(words))
    return much and "count" not in reading.aggregations.values() and all(m.is_count for m in intent.measures)

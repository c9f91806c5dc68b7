"""The model-free reading of a question: its tokens, and which of them say a date range, a ranking, an
aggregation, a comparison or a grouping marker (``read``). What is left is placed against the model by
``understand``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from zoneinfo import ZoneInfo

from embedadmin.chat.providers.analyst.dates import DateRange, find_dates, unread_range
from embedadmin.chat.providers.analyst.intent import Decline
from embedadmin.chat.providers.analyst.question_words import (
    ALSO_PHRASES,
    AMOUNT_UNITS,
    ANAPHORS,
    AVERAGE_WORDS,
    BREAKDOWN_WORDS,
    COMPARE_WORDS,
    COUNT_PHRASES,
    DISTINCT_WORDS,
    FOLLOW_UP_OPENERS,
    GROUP_MARKERS,
    GROUP_WORDS,
    LEAST_WORDS,
    LIGHT_VERBS,
    MOST_WORDS,
    MULTIPLIERS,
    NEGATIONS,
    SHARE_WORDS,
    SUM_WORDS,
    UNSUPPORTED,
    Token,
    number_of,
    tokenize,
    whole_number,
)

DEFAULT_TOP = 10
POINTING_LEADS = frozenset({"of", "on", "for", "from", "in"})  # "how much of that was collected?"
POINTING_FOLLOWERS = frozenset({"was", "is", "were", "are", "as", "by", "in", "for"})
DIFFERENCE_WORDS = {"more": 1, "higher": 1, "bigger": 1, "larger": 1, "fewer": -1, "less": -1, "lower": -1}
NEGATED_AUXILIARIES = frozenset({"have", "has", "had", "be", "been", "being", "a", "an", "the", "any", "yet"})
COMPARISONS = {
    ("over",): "gt",
    ("above",): "gt",
    ("more", "than"): "gt",
    ("greater", "than"): "gt",
    ("bigger", "than"): "gt",
    ("larger", "than"): "gt",
    ("higher", "than"): "gt",
    ("exceeding",): "gt",
    ("at", "least"): "gte",
    ("under",): "lt",
    ("below",): "lt",
    ("less", "than"): "lt",
    ("fewer", "than"): "lt",
    ("lower", "than"): "lt",
    ("smaller", "than"): "lt",
    ("at", "most"): "lte",
    ("no", "more", "than"): "lte",
    ("up", "to"): "lte",
    ("older", "than"): "gt",
    ("younger", "than"): "lt",
    ("longer", "than"): "gt",
    ("shorter", "than"): "lt",
    ("cheaper", "than"): "lt",
    ("heavier", "than"): "gt",
    ("lighter", "than"): "lt",
}
# After the number: "60 minutes or more", "3 items or fewer".
TRAILING_COMPARISONS = {
    ("or", "more"): "gte",
    ("or", "over"): "gte",
    ("or", "above"): "gte",
    ("or", "higher"): "gte",
    ("and", "above"): "gte",
    ("and", "over"): "gte",
    ("and", "up"): "gte",
    ("or", "less"): "lte",
    ("or", "fewer"): "lte",
    ("or", "under"): "lte",
    ("or", "below"): "lte",
    ("or", "lower"): "lte",
    ("and", "below"): "lte",
    ("and", "under"): "lte",
}


@dataclass
class Reading:
    """The model-free reading of a question: tokens and what took which of them."""

    tokens: list[Token]
    text: str = ""
    taken: set[int] = field(default_factory=set)
    date_ranges: list[DateRange] = field(default_factory=list)
    date_positions: set[int] = field(default_factory=set)
    yearless: list[bool] = field(default_factory=list)  # per date range: a month, quarter or half without its year
    limit: int | None = None
    limit_said: bool = (
        True  # False for "top" without a number: ten things, or the one a singular names ("top supplier")
    )
    descending: bool | None = None
    aggregations: dict[int, str] = field(default_factory=dict)  # position -> count, total, average, share, distinct
    ranked_after: set[int] = field(default_factory=set)  # positions right after "top 5": a group is named there
    group_starts: set[int] = field(default_factory=set)  # positions right after "by", "per", "for each"
    which: set[int] = field(default_factory=set)  # positions right after "which"/"what"
    comparisons: list[tuple[int, int, str, float]] = field(default_factory=list)  # (start, end, operator, number)
    negated: set[int] = field(default_factory=set)  # positions right after "not", "excluding"
    follow_up: bool = False
    compares: bool = False  # "compare", "vs": results side by side
    # "how much more ... in 2024 than in 2023": 1, the first period's minus the second's; "fewer ... than": -1
    difference: int = 0
    pointing: list[int] = field(default_factory=list)  # positions of words pointing into the thread ("those")
    judges: bool = False  # ranked by "best" or "worst": better, not more or less
    adds: bool = False  # a follow-up's "too", "as well", "also": its groups or measures join the thread's

    @cached_property
    def stems(self) -> list[str]:
        return [t.stem for t in self.tokens]

    def names_group(self, i: int) -> bool:
        """Whether a group is named at ``i``: after "by", "which", "top 5"."""
        return i in self.group_starts or i in self.which or i in self.ranked_after

    def free(self, i: int) -> bool:
        return 0 <= i < len(self.tokens) and i not in self.taken

    def phrase(self, positions: Sequence[int]) -> str:
        """The question's text from the first of ``positions`` to the last, as written ("no-show", "Le Havre")."""
        ordered = sorted(positions)
        return self.text[self.tokens[ordered[0]].start : self.tokens[ordered[-1]].end] if ordered else ""


def read(question: str, *, zone: ZoneInfo, now: datetime) -> Reading | Decline:
    """What a question says without the model: dates, ranking, aggregation words, comparisons, markers."""
    tokens = tokenize(question)
    reading = Reading(tokens=tokens, text=question)
    words = [t.lower for t in tokens]
    for token in tokens:
        if token.lower in UNSUPPORTED or token.stem in UNSUPPORTED:
            what = UNSUPPORTED.get(token.lower) or UNSUPPORTED[token.stem]
            return Decline(
                f"This needs {what}, which the data model has no measure for and which one query cannot compute."
            )
    if len(words) > 1 and words[0] == "name" and (words[1] in ("the", "a", "all", "top", "our") or words[1].isdigit()):
        reading.taken.add(0)  # "Name the top three countries": a request, not the name dimension
    for opener in FOLLOW_UP_OPENERS:
        if tuple(words[: len(opener)]) == opener:
            reading.follow_up = True
            reading.taken.update(range(len(opener)))
            break
    for i, word in enumerate(words):
        if word == "instead":
            reading.follow_up = True
            reading.taken.add(i)
        after = words[i + 1] if i + 1 < len(words) else ""
        that = word == "that" and i > 0 and words[i - 1] in POINTING_LEADS and after in ("", *POINTING_FOLLOWERS)
        if word in ANAPHORS or that:  # "those", "them", "how much of that was": the thread's last question
            reading.follow_up = True
            reading.pointing.append(i)
    if reading.follow_up:
        for phrase in ALSO_PHRASES:
            for i in range(len(words) - len(phrase) + 1):
                if tuple(words[i : i + len(phrase)]) == phrase:
                    reading.taken.update(range(i, i + len(phrase)))
                    reading.adds = True
    for i, word in enumerate(words):
        if word in ("only", "just") and reading.follow_up:
            reading.taken.add(i)
        elif word == "but" and i + 1 < len(words) and words[i + 1] in BUT_FOLLOWERS:
            reading.taken.add(i)  # "same but only for Europe"; never "all regions but Europe"
        elif word == "right" and i + 1 < len(words) and words[i + 1] == "now":
            reading.taken.update({i, i + 1})  # "right now": as things stand, no period
    for i, word in enumerate(words):
        if word in COMPARE_WORDS:
            reading.compares = True
            if word not in ("vs", "versus"):  # those join the values compared, as "and" does
                reading.taken.add(i)
    found = find_dates(tokens, zone=zone, now=now, taken=reading.taken)
    today = now.astimezone(zone).date()
    if unread_range(found, words):
        # "from June 15 to June 1", "December 1 to January 15": two days joined by "to" that make no range read
        return Decline("I could not read that range of days: say it from the earlier day to the later, with its year.")
    for date_found in found:
        assert date_found.date_range is not None
        if date_found.date_range.start is not None and date_found.date_range.start > today:
            # "what will revenue be in Q4 2025?": nothing has happened there yet; a forecast is another model's
            return Decline("That period has not begun: the data holds what happened, and I do not forecast.")
        reading.date_ranges.append(date_found.date_range)
        reading.yearless.append(date_found.yearless)
        reading.date_positions |= date_found.positions
    for i, word in enumerate(words):  # "Q1 2024 vs Q1 2025", "2023 and 2024": the word joining two periods
        joins = word in ("vs", "versus", "and", "with") and reading.free(i)
        if joins and i - 1 in reading.date_positions and i + 1 in reading.date_positions:
            reading.taken.add(i)
    _read_comparisons(reading, words)
    _read_difference(reading, words)
    _read_choice(reading, words)
    _read_ranking(reading, words)
    _skip_verbs(reading, words)
    _read_aggregation(reading, words)
    _read_markers(reading, words)
    if reading.compares:  # "compare revenue between air and rail": "between" only joins the values compared
        reading.taken.update(i for i, word in enumerate(words) if word == "between" and reading.free(i))
    return reading


def _read_difference(reading: Reading, words: list[str]) -> None:
    """ "How much more did we invoice in 2024 than in 2023?", "how many fewer signups in Q2 than in Q1": the
    difference between two periods, "more" and "than" placed (a comparison with a number took its own)."""
    if len(reading.date_ranges) != 2:
        return
    for i, word in enumerate(words):
        if word not in DIFFERENCE_WORDS or not reading.free(i):
            continue
        than = next((j for j in range(i + 1, len(words)) if words[j] == "than" and reading.free(j)), None)
        if than is None or not any(p > than for p in reading.date_positions):
            return
        if not any(i < p < than for p in reading.date_positions) and not any(p < i for p in reading.date_positions):
            return
        reading.difference = DIFFERENCE_WORDS[word]
        reading.taken |= {i, than}
        return


def _read_choice(reading: Reading, words: list[str]) -> None:
    """ "EMEA vs APAC: which has more MRR?", "which moves more units, truck or rail?": a comparative with no "than"
    in a question of which asks which of the things compared: a row for each answers it (``compares``)."""
    if not (reading.compares or "which" in words):
        return
    for i, word in enumerate(words):
        if word in DIFFERENCE_WORDS and reading.free(i) and "than" not in words[i:]:
            reading.taken.add(i)
            reading.compares = True


BUT_FOLLOWERS = frozenset({"only", "just", "by", "for", "in", "with", "now", "as", "per", "number", "counting"})
RANK_DIRECTIONS = frozenset({*MOST_WORDS, *LEAST_WORDS, "ascending", "descending"}) - {"top", "bottom"}


def _read_ranking(reading: Reading, words: list[str]) -> None:
    for i, word in enumerate(words):
        if not reading.free(i):
            continue
        reading.judges = reading.judges or word in ("best", "worst")
        following = words[i + 1] if i + 1 < len(words) else ""
        count = whole_number(following)
        if word in ("top", "bottom") or (word in ("best", "worst") and count is not None):
            reading.descending = word in ("top", "best")
            reading.taken.add(i)
            if count is not None and reading.free(i + 1):
                reading.limit = count
                reading.taken.add(i + 1)
                reading.ranked_after.add(i + 2)
            else:
                reading.limit, reading.limit_said = DEFAULT_TOP, False
                reading.ranked_after.add(i + 1)
        elif (
            (ranked := whole_number(word)) is not None
            and following in ("best", "worst", "top", "biggest", "largest", *MOST_WORDS, *LEAST_WORDS)
            and reading.free(i + 1)
        ):
            reading.limit = ranked  # "the three biggest", "the 5 lowest"
            reading.descending = following not in ("worst", *LEAST_WORDS)
            reading.taken |= {i, i + 1}
            reading.ranked_after.add(i + 2)
            if i and words[i - 1] == "the":
                reading.taken.add(i - 1)
        elif word in ("rank", "ranked") and reading.descending is None:
            # "rank the regions by revenue": every region, highest first; "from lowest to highest": lowest first
            directions = [  # "from lowest to highest", "highest first", "ascending": never "by largest order"
                j
                for j in range(i + 1, len(words))
                if words[j] in RANK_DIRECTIONS
                and reading.free(j)
                and (
                    words[j] in ("ascending", "descending")
                    or words[j - 1] == "from"
                    or (j > 1 and words[j - 1] == "to" and words[j - 2] in RANK_DIRECTIONS)
                    or (j + 1 < len(words) and words[j + 1] in ("to", "first"))
                )
            ]
            first = words[directions[0]] if directions else ""
            reading.descending = first not in (*LEAST_WORDS, "ascending")
            reading.taken.update(directions)
            at = i + 1 + (following == "the")
            reading.taken.update(range(i, at))
            reading.ranked_after.add(at)
        elif word == "which" and following in ("one", "ones") and reading.free(i + 1):
            reading.taken.add(i + 1)  # "which one moves more units": which of them, not a ranking's first
        elif word in ("which", "what") and count is not None and reading.free(i + 1):
            reading.limit = count  # "which 5 physicians have the lowest ...", "which three methods": the ones ranked
            reading.taken.add(i + 1)
            reading.which.add(i + 2)
        elif word in MOST_WORDS or word in LEAST_WORDS:
            reading.descending = word in MOST_WORDS
            reading.taken.add(i)
            if i and words[i - 1] == "the":
                reading.taken.add(i - 1)


def _skip_verbs(reading: Reading, words: list[str]) -> None:
    """A group named after a ranking may follow a verb ("10 best-selling products", "top 5 ordered products")."""
    for at in sorted(reading.ranked_after):
        while at < len(words) and words[at] in LIGHT_VERBS:
            reading.taken.add(at)
            at += 1
            reading.ranked_after.add(at)


def _read_aggregation(reading: Reading, words: list[str]) -> None:
    for i, word in enumerate(words):
        if not reading.free(i):
            continue
        for phrase in COUNT_PHRASES:
            if tuple(words[i : i + len(phrase)]) == phrase and all(reading.free(j) for j in range(i, i + len(phrase))):
                reading.aggregations.update(dict.fromkeys(range(i, i + len(phrase)), "count"))
                break
        else:
            flags = (
                (SUM_WORDS, "total"),
                (AVERAGE_WORDS, "average"),
                (SHARE_WORDS, "share"),
                (DISTINCT_WORDS, "distinct"),
            )
            for vocabulary, flag in flags:
                if word in vocabulary:
                    reading.aggregations[i] = flag


def _read_markers(reading: Reading, words: list[str]) -> None:
    if "break" in words and "down" in words and "by" in words and words.index("break") < words.index("down"):
        reading.taken.update({words.index("break"), words.index("down")})  # "break the visits down by ..."
        between = words[words.index("break") + 1 : words.index("down")]
        if set(between) & {"that", "it", "this", "those", "them", "these"} and "instead" not in words:
            reading.adds = True  # "break that down by priority": that answer's rows, each split
    for i, word in enumerate(words):
        if word == "breakdown" and reading.free(i) and "by" not in words:
            reading.taken.add(i)  # "attendance breakdown": by attendance
            reading.group_starts.update(p for p in (i - 1, i - 2) if reading.free(p))
    if "by" in words:
        for phrase in BREAKDOWN_WORDS:
            for i in range(len(words) - len(phrase) + 1):
                spot = range(i, i + len(phrase))
                if tuple(words[i : i + len(phrase)]) == phrase and all(reading.free(j) for j in spot):
                    reading.taken.update(spot)
    for i in range(len(words)):
        if not reading.free(i):
            continue
        for marker in GROUP_MARKERS:
            if tuple(words[i : i + len(marker)]) == marker:
                reading.taken.update(range(i, i + len(marker)))
                reading.group_starts.add(i + len(marker))
                break
        else:
            if words[i] in GROUP_WORDS:
                reading.taken.add(i)
                reading.group_starts.add(i + 1)
            elif words[i] in ("which", "what") and i + 1 < len(words):
                reading.which.add(i + 1)
            elif words[i] in NEGATIONS:
                reading.taken.add(i)
                at = i + 1
                while at < len(words) and words[at] in NEGATED_AUXILIARIES:
                    at += 1  # "do not have auto-renew": what is not had
                reading.negated.add(at)


def _read_comparisons(reading: Reading, words: list[str]) -> None:
    for i in range(len(words)):
        for phrase, operator in sorted(COMPARISONS.items(), key=lambda item: -len(item[0])):
            end = i + len(phrase)
            if tuple(words[i:end]) != phrase or not all(reading.free(j) for j in range(i, end)):
                continue
            if end < len(words) and reading.free(end) and (number := number_of(reading.tokens[end].text)) is not None:
                number, span_end = _amount(words, end + 1, number)
                reading.taken.update(range(i, span_end))
                reading.comparisons.append((i, span_end, operator, number))
            break
    # "60 minutes or more": the number (and the words of its amount) compared; its unit stays to be read.
    for i, token in enumerate(reading.tokens):
        number = number_of(token.text)
        if number is None or not reading.free(i):
            continue
        number, after = _amount(words, i + 1, number)
        for at in (after, after + 1):  # the unit may stand between the number and "or more"
            for phrase, operator in TRAILING_COMPARISONS.items():
                spot = range(at, at + len(phrase))
                if tuple(words[at : at + len(phrase)]) == phrase and all(reading.free(j) for j in spot):
                    reading.taken.update(range(i, after))
                    reading.taken.update(spot)
                    reading.comparisons.append((i, after, operator, number))
                    break
            else:
                continue
            break


def _amount(words: list[str], at: int, number: float) -> tuple[float, int]:
    """The number scaled by a multiplier written after it ("1 million"), and the position after the amount's
    words (a money or percent unit included)."""
    if at < len(words) and words[at] in MULTIPLIERS:
        number *= MULTIPLIERS[words[at]]
        at += 1
    if at < len(words) and words[at] in AMOUNT_UNITS:
        at += 1
    return number, at

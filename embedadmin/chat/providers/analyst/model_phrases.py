"""The data model as the analyst reads it: the cubes and views ``serviceMeta`` showed, and the phrases that name
them and their members (names, titles, ``meta`` synonyms, plurals folded)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from embedadmin.chat.member_search import local_name, names_regions, phrases, short_title, stem, stems, view_root

COUNT_TYPES = frozenset({"count", "countDistinct", "countDistinctApprox"})
LINKING_WORDS = frozenset(stems("to for from with at on in of the a an by per and or"))  # "days to pay": no "to pay"
EDGE_WORDS = frozenset({"at", "on", "in", "of", "the", "a", "an", "by", "per"})
# A phrase of these words alone names no member: they say how to aggregate ("count", "total").
AGGREGATION_WORDS = frozenset(
    {"count", "total", "sum", "average", "avg", "mean", "number", "amount", "value", "max", "min", "maximum", "minimum"}
)
# Everyday words for what a model holds, given to the one cube whose title or description says one of them
# (``_with_described_nouns``); the stems, as questions are matched.
BUSINESS_NOUNS = (("customer", "client", "buyer", "shopper"),)
# Everyday words for what a count counts, given to the one count measure of the model named by one of them
# ("Transactions": also "orders" and "purchases"), when no cube or member is already named by another
# (``_with_counted_twins``).
COUNTED_TWINS = (("order", "purchase", "transaction"),)
# Words of a dimension's title that classify rather than name ("Device category", "Default channel group"): the
# rest of the title names the dimension too, when nothing else of the cube says it (``_with_short_names``).
CLASSIFIER_WORDS = frozenset(stems("category type kind class group default"))
QUALIFIER = re.compile(r"\s*\([^)]*\)")  # "Country (geo-IP)": a title's note in parentheses


@dataclass(frozen=True)
class Member:
    """A measure or dimension of one cube or view."""

    name: str  # cube.member
    title: str
    type: str  # number, string, time, boolean
    is_measure: bool
    agg_type: str
    format: str  # percent, currency, number... ("" when the model gives none)
    currency: str
    phrases: tuple[tuple[str, ...], ...]
    granularities: tuple[tuple[str, str], ...] = ()  # custom granularities: (name, title)
    title_phrase: tuple[str, ...] = ()  # its title's words: a question that uses them names this member first
    alias: str = ""  # a view member's cube member (``aliasMember``)
    # Its format as ``serviceMeta`` gives it (``"currency"``, ``{"type": "custom-numeric", "alias": "number_2"}``),
    # what its values are formatted by (``analyst/formatting.py``).
    shown_format: Any = field(default=None, compare=False)

    @property
    def column(self) -> str:
        return local_name(self.name)

    @property
    def is_count(self) -> bool:
        return self.agg_type in COUNT_TYPES

    @property
    def is_distinct_count(self) -> bool:
        return self.agg_type in ("countDistinct", "countDistinctApprox")

    @property
    def owner(self) -> str:
        """The cube the member comes from: a view member's cube, else its own."""
        return (self.alias or self.name).split(".", 1)[0]

    @property
    def is_money(self) -> bool:
        return self.format.startswith("currency") or bool(self.currency)

    @property
    def is_percent(self) -> bool:
        return self.format.startswith("percent")


@dataclass(frozen=True)
class Cube:
    name: str
    title: str
    is_view: bool
    phrases: tuple[tuple[str, ...], ...]  # what names the cube itself (its name, title and synonyms)
    members: tuple[Member, ...]

    def measures(self) -> list[Member]:
        return [m for m in self.members if m.is_measure]

    def dimensions(self) -> list[Member]:
        return [m for m in self.members if not m.is_measure]

    def time_dimensions(self) -> list[Member]:
        return [m for m in self.members if m.type == "time"]

    def count_measure(self) -> Member | None:
        """The cube's plain count (``type: count``), else its first counting measure."""
        counts = [m for m in self.measures() if m.is_count]
        return next((m for m in counts if m.agg_type == "count"), counts[0] if counts else None)


def _format(member: Mapping[str, Any]) -> str:
    value = member.get("format")
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return str(value.get("type") or "")
    return ""


def _granularities(member: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found = member.get("granularities")
    if not isinstance(found, list):
        return ()
    return tuple((str(g.get("name")), str(g.get("title") or g.get("name"))) for g in found if isinstance(g, Mapping))


def _reading_title(member: Mapping[str, Any], cube_title: str) -> str:
    """The title people read a member by: ``serviceMeta``'s ``shortTitle`` (its ``readingTitle``), else its title
    without its cube's."""
    given = member.get("shortTitle")
    return given if isinstance(given, str) and given else short_title(member.get("title") or member["name"], cube_title)


def cubes_of(meta: Mapping[str, Any]) -> list[Cube]:
    """The cubes and views of a ``serviceMeta`` result, in its order (most relevant first)."""
    cubes = []
    for cube in meta.get("cubes", []):
        title = cube.get("title") or cube["name"]
        members = tuple(
            Member(
                name=m["name"],
                title=_reading_title(m, title),
                type=m.get("type", ""),
                is_measure="aggType" in m,
                agg_type=m.get("aggType", ""),
                format=_format(m),
                currency=str(m.get("currency") or ""),
                phrases=_trimmed(phrases(m, cube_title=title)),
                granularities=_granularities(m),
                title_phrase=tuple(stems(short_title(m.get("title") or m["name"], title))),
                alias=str(m.get("aliasMember") or ""),
                shown_format=m.get("format"),
            )
            for m in cube.get("members", [])
        )
        members = _with_region_word(members, cube.get("members", []))
        own = phrases({"name": cube["name"], "title": title, "meta": cube.get("meta") or {}})
        cubes.append(
            Cube(
                name=cube["name"], title=title, is_view=cube.get("type") == "view", phrases=tuple(own), members=members
            )
        )
    cubes = _with_described_nouns(
        cubes, descriptions={c["name"]: str(c.get("description") or "") for c in meta["cubes"]}
    )
    cubes = _with_counted_twins(cubes)
    nouns = {p[0] for cube in cubes for p in cube.phrases if len(p) == 1}
    return [_with_root_phrases(_with_short_names(cube, nouns), cubes) for cube in cubes]


def _with_region_word(members: tuple[Member, ...], described: Sequence[Mapping[str, Any]]) -> tuple[Member, ...]:
    """ "Region" for the one string dimension whose description names two or more of the world's regions ("Sales
    territory: North America, EMEA, APAC or LATAM"), when no member of the cube is already called so."""
    word = (stem("region"),)
    if any(word in m.phrases for m in members):
        return members
    regional = {
        str(m["name"])
        for m in described
        if "aggType" not in m and m.get("type") == "string" and names_regions(str(m.get("description") or ""))
    }
    if len(regional) != 1:
        return members
    return tuple(replace(m, phrases=(*m.phrases, word)) if m.name in regional else m for m in members)


def _with_described_nouns(cubes: list[Cube], *, descriptions: Mapping[str, str]) -> list[Cube]:
    """The business lexicon: everyday words for the things a model holds ("customers", "clients"), given to the one
    cube whose title or description says them ("Users": "one row per customer"), when no cube or view is already
    named by them. Never to a view, and never to two cubes: the model's own words are the evidence."""
    named = {p for cube in cubes for p in cube.phrases}
    for words in BUSINESS_NOUNS:
        if any((w,) in named for w in words):
            continue
        said = [
            cube
            for cube in cubes
            if not cube.is_view and set(words) & set(stems(f"{cube.title} {descriptions.get(cube.name, '')}"))
        ]
        if len(said) == 1:
            [cube] = said
            extra = tuple((w,) for w in words)
            cubes = [replace(c, phrases=(*c.phrases, *extra)) if c is cube else c for c in cubes]
    return cubes


def _with_counted_twins(cubes: list[Cube]) -> list[Cube]:
    """The business lexicon for counts: a count measure named by one word of a :data:`COUNTED_TWINS` group
    ("Transactions") is named by the others too ("how many orders"), when it is the model's only count so named (a
    view's member and its cube's are one) and no cube or member is named by another word of the group alone."""
    for words in COUNTED_TWINS:
        named = {p for cube in cubes for p in cube.phrases} | {p for c in cubes for m in c.members for p in m.phrases}
        taken = [w for w in words if (w,) in named]
        counts = {
            m.alias or m.name
            for cube in cubes
            for m in cube.measures()
            if m.is_count and any((w,) in m.phrases for w in words)
        }
        if len(taken) != 1 or len(counts) != 1 or any((w,) in c.phrases for c in cubes for w in words):
            continue
        [counted] = counts
        extra = tuple((w,) for w in words if w != taken[0])
        cubes = [
            replace(
                cube,
                members=tuple(
                    replace(m, phrases=(*m.phrases, *extra)) if (m.alias or m.name) == counted else m
                    for m in cube.members
                ),
            )
            for cube in cubes
        ]
    return cubes


def _with_short_names(cube: Cube, nouns: set[str]) -> Cube:
    """Members named by part of their title when no other member's phrases use that part, and it names no cube:

    - a measure by the first word of a longer title ("units" for "Units sold"), by the head noun of a two-word
      one ("revenue" for "Gross revenue"), or by the last two words or more of a longer one ("conversion rate" for
      "Session conversion rate (%)");
    - a dimension by its title without a note in parentheses ("country" for "Country (geo-IP)") and without the
      words that classify ("device" for "Device category", "channel" for "Default channel group")."""
    used: dict[str, int] = {}
    for member in cube.members:
        for word in {w for p in member.phrases for w in p}:
            used[word] = used.get(word, 0) + 1
    taken = {p for member in cube.members for p in member.phrases}

    def free(part: tuple[str, ...], member: Member) -> bool:
        """A word no other member's phrases use, or a longer phrase no member has."""
        if not part:
            return False
        unused = used.get(part[0]) == 1 if len(part) == 1 else part not in taken
        return (
            unused
            and part not in member.phrases
            and not set(part) & (EDGE_WORDS | AGGREGATION_WORDS | nouns)  # "patients" stays the patients' name
        )

    members = []
    for member in cube.members:
        if member.is_measure and len(member.title_phrase) > 1:
            heads = [member.title_phrase[:1]] + ([member.title_phrase[1:]] if len(member.title_phrase) == 2 else [])
            # a measure by the last words of a longer title ("conversion rate" for "Session conversion rate (%)")
            plain = tuple(stems(QUALIFIER.sub("", member.title)))
            heads += [plain[k:] for k in range(1, len(plain) - 1) if plain[k] not in LINKING_WORDS]
        elif not member.is_measure:
            plain = tuple(stems(QUALIFIER.sub("", member.title)))
            heads = [plain, tuple(word for word in plain if word not in CLASSIFIER_WORDS)]
        else:
            heads = []
        if member.is_measure:
            # and by the first word of a two-word synonym ("cash" of "cash collected"; never "active customers")
            synonyms = [p for p in member.phrases[1:] if len(p) == 2 and p != member.title_phrase]
            heads += [p[:1] for p in synonyms if p[1] not in nouns]
        for head in heads:
            if free(head, member):
                member = replace(member, phrases=(*member.phrases, head))
        members.append(member)
    return replace(cube, members=tuple(members))


def _with_root_phrases(view: Cube, cubes: Sequence[Cube]) -> Cube:
    """A view whose measures all come from one cube is also named by that cube's names ("bookings" for a view
    over the appointments cube)."""
    name = view_root(m.alias for m in view.measures()) if view.is_view else None
    root = next((c for c in cubes if c.name == name and not c.is_view), None)
    if root is None:
        return view
    extra = tuple(p for p in root.phrases if p not in view.phrases)
    return replace(view, phrases=(*view.phrases, *extra))


def _trimmed(found: Sequence[tuple[str, ...]]) -> tuple[tuple[str, ...], ...]:
    """Phrases, each also without the function words it ends or starts with ("Signed up at": "signed up")."""
    out = list(found)
    for phrase in found:
        words = list(phrase)
        if "in" in words[1:]:  # "Waiting time in minutes": also "waiting time"
            words = words[: words.index("in", 1)]
        while words and words[-1] in EDGE_WORDS:
            words.pop()
        while words and words[0] in EDGE_WORDS:
            words.pop(0)
        if words and tuple(words) not in out:
            out.append(tuple(words))
    return tuple(p for p in out if not set(p) <= AGGREGATION_WORDS)


def custom_grains(members: Sequence[Member]) -> dict[tuple[str, ...], str]:
    """The custom granularities of ``members`` by the phrases that name them (name and title)."""
    found: dict[tuple[str, ...], str] = {}
    for member in members:
        for name, title in member.granularities:
            for text in (name.replace("_", " "), title):
                words = tuple(stems(text))
                if words:
                    found.setdefault(words, name)
    return found

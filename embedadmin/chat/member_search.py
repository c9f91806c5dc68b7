"""Words of the data model: how a question's words meet members' names, titles, descriptions and synonyms.

Shared by the ``serviceMeta`` tool (which ranks members by relevance to a search) and the built-in analyst
(which finds, in a question, the phrases that name members). Words are lowercased and reduced to a simple
stem (plurals folded: ``categories`` and ``category``, ``orders`` and ``order`` meet), so the two always agree.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import snowballstemmer

WORD = re.compile(r"[a-z0-9]+")
HYPHENATED = re.compile(r"(?<=[A-Za-z])-(?=[A-Za-z])")  # the hyphen inside "Sign-ups", "add-on"

STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "give",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "of",
        "on",
        "or",
        "per",
        "please",
        "show",
        "tell",
        "the",
        "their",
        "there",
        "this",
        "to",
        "us",
        "was",
        "we",
        "were",
        "what",
        "which",
        "who",
        "with",
    }
)

# Weights: a whole phrase of a member's name, title or synonym present in the search counts most; a word
# shared with a name, title or synonym less; a word of the description least.
PHRASE_WEIGHT = 10.0
WORD_WEIGHT = 2.0
DESCRIPTION_WEIGHT = 0.5


def stem(word: str) -> str:
    """``word`` (lowercase) with a plural or third-person ending removed: a crude, consistent stemmer."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("sses"):
        return word[:-2]
    if len(word) > 4 and (word.endswith(("xes", "zes", "uses"))):  # "boxes", "statuses"; "purchases" below
        return word[:-2]
    if len(word) > 4 and word.endswith(("ches", "shes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_ENGLISH = threading.local()


@functools.lru_cache(maxsize=8192)
def root(word: str) -> str:
    """The English root of ``word`` (lowercase), verb and noun endings removed (Snowball's English stemmer:
    ``signed``, ``signs`` -> ``sign``; ``cancelled``, ``cancellation`` -> ``cancel``), for meeting a question's verb
    with the member the model names after it. Coarser than :func:`stem`, which names are matched with."""
    english = getattr(_ENGLISH, "stemmer", None)
    if english is None:  # a stemmer keeps state while it works: one per thread
        english = _ENGLISH.stemmer = snowballstemmer.stemmer("english")
    return str(english.stemWord(word))


def stems(text: str) -> list[str]:
    """The stems of the words of ``text``, in order."""
    return [stem(word) for word in WORD.findall(text.lower())]


def content_stems(text: str) -> set[str]:
    """The stems of ``text`` that carry meaning (stopwords left out)."""
    return {word for word in stems(text) if word not in STOPWORDS}


def local_name(name: str) -> str:
    """``orders.total_amount`` -> ``total_amount``."""
    return name.rsplit(".", 1)[-1]


def view_root(measure_aliases: Iterable[str]) -> str | None:
    """The one cube a view's measures all come from (their ``aliasMember``s), if there is one: a view over the
    appointments cube is named by that cube's names too."""
    roots = {alias.split(".", 1)[0] if alias else "" for alias in measure_aliases}
    return roots.pop() if len(roots) == 1 and "" not in roots else None


def short_title(title: str, cube_title: str) -> str:
    """A view member's title without its view's title (``Sales Order value`` -> ``Order value``)."""
    prefix = f"{cube_title} "
    return title[len(prefix) :] if cube_title and title.startswith(prefix) and len(title) > len(prefix) else title


def _synonyms(item: Mapping[str, Any]) -> list[str]:
    meta = item.get("meta")
    found = meta.get("synonyms") if isinstance(meta, Mapping) else None
    return [str(s) for s in found] if isinstance(found, list) else []


MAX_LABEL_WORDS = 3
# Everyday words for a field of places that mean the same ("supplier country" for the model's "Supplier nation").
PLACE_TWINS = (("nation", "country"),)
# The world's regions as companies name their sales regions: a field whose description names two of them holds
# regions, and "region" names it when nothing else of the model is called so (the evidence is the model's own).
WORLD_REGIONS = frozenset(
    {
        "emea", "apac", "latam", "amer", "americas", "europe", "asia", "africa", "oceania", "nordics", "dach",
        "north america", "south america", "latin america", "middle east", "asia pacific",
    }
)  # fmt: skip
NOTE_LABELS = frozenset({"note", "notes", "example", "examples", "warning", "deprecated", "nb", "caution", "see"})


def phrases(item: Mapping[str, Any], *, cube_title: str = "") -> list[tuple[str, ...]]:
    """The phrases that name a member (or a cube): its name's words, for a dimension also their tail
    (``product_category`` gives ``product category`` and ``category``), its title, its title without the view's,
    and its synonyms."""
    local = local_name(str(item.get("name", ""))).replace("_", " ")
    named = stems(local)
    found = [tuple(named)]
    if "aggType" not in item:
        found += [tuple(named[i:]) for i in range(1, len(named))]
    title = str(item.get("title") or "")
    for text in (title, short_title(title, cube_title), *_synonyms(item), _description_label(item)):
        found.append(tuple(stems(text)))
        if HYPHENATED.search(text):  # "Sign-ups": also "signups", as people type it
            found.append(tuple(stems(HYPHENATED.sub("", text))))
    for first, second in PLACE_TWINS:
        one, other = stem(first), stem(second)
        found += [
            tuple(other if w == one else one if w == other else w for w in p) for p in found if {one, other} & set(p)
        ]
    unique: list[tuple[str, ...]] = []
    for phrase in found:
        if phrase and phrase not in unique and not all(word in STOPWORDS for word in phrase):
            unique.append(phrase)
    return unique


def names_regions(description: str) -> bool:
    """Whether a description names two or more of the world's regions ("North America, EMEA, APAC or LATAM")."""
    text = " " + re.sub(r"[^a-z]+", " ", description.lower()) + " "
    return sum(f" {region} " in text for region in WORLD_REGIONS) >= 2


def value_key(text: str) -> str:
    """A value as a question may write it: lowercase, its words apart ("starter_monthly", "Starter-Monthly" and
    "starter monthly" are one value)."""
    return " ".join(re.split(r"[\s_\-]+", text.lower())).strip()


def _description_label(item: Mapping[str, Any]) -> str:
    """The label a description opens with before a colon ("Sales territory: North America, EMEA, APAC or LATAM."),
    which names the member as its title does; "" when it opens otherwise."""
    description = str(item.get("description") or "")
    label, colon, _ = description.partition(":")
    words = label.split()
    if not colon or not 1 <= len(words) <= MAX_LABEL_WORDS or not all(w.isalpha() for w in words):
        return ""
    return "" if words[0].lower() in NOTE_LABELS else label


def relevance(item: Mapping[str, Any], search: Iterable[str], *, cube_title: str = "") -> float:
    """How well a member (or cube) matches ``search`` (content stems); 0 when it does not match at all."""
    wanted = set(search)
    if not wanted:
        return 0.0
    score = 0.0
    named_words: set[str] = set()
    for phrase in phrases(item, cube_title=cube_title):
        words = {word for word in phrase if word not in STOPWORDS}
        named_words |= words
        if words and words <= wanted:
            score = max(score, PHRASE_WEIGHT * len(words))
    score += WORD_WEIGHT * len(named_words & wanted)
    score += DESCRIPTION_WEIGHT * len(content_stems(str(item.get("description") or "")) & wanted)
    return score

"""A question's words: tokens with their stems, and the fixed English words the analyst reads without the model.

Every word of a question must be *placed* (as a member, a value, a date, a grain, a ranking, an aggregation or a
word that carries no content) before the analyst answers; the sets below are the words it places by themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from embedadmin.chat.member_search import stem

# Spellings of a chat box, read as the word they stand for.
SPELLINGS = {
    "whats": "what",
    "hows": "how",
    "pls": "please",
    "plz": "please",
    "qty": "quantity",
    "amt": "amount",
    "subs": "subscriptions",
    "yr": "year",
    "yrs": "years",
}
ORDINAL = re.compile(r"\d{1,2}(?:st|nd|rd|th)")
TOKEN = re.compile(
    r"\d{1,2}(?:st|nd|rd|th)\b"  # an ordinal day ("June 15th")
    r"|\d{4}-\d{2}-\d{2}"  # an ISO date
    r"|\d+-\d+\b"  # a range of numbers, as values are written ("25-34")
    r"|\$?\d+(?:,\d{3})*(?:\.\d+)?%?"  # a number, maybe money or a percentage (not the comma after it)
    r"|[A-Za-z][A-Za-z0-9]*"  # a word (Q1); a hyphen separates words, as in the model's names
    r"|%"  # "what % of visits": a share
    r"|\"[^\"]+\""  # a quoted value
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that carry no content of their own in a question about data.
FUNCTION_WORDS = _words(
    """
    a an the and or of for to on at in into from with within is are was were be been being am do does did done
    have has had
    what which who whose how show me us give list tell please i we our my you your can could would should will
    there it its that these those all any some get find see know want need about just find return display
    much many so far ever currently now still overall as through via altogether whole entire respectively
    value values number numbers
    data figure figures result results report where only counting combined together
    whats pls plz actually
    """
)
# Verbs that say an event happened, which the data already means ("orders placed in 2024"); placed as function
# words only when the data has no value of that name.
LIGHT_VERBS = _words(
    """placed made created recorded happened occurred generated got came logged registered submitted received
    booked taken lasting lasted costing costed priced brought bring brings make makes making sell sells selling
    sold billed charged paid spent earned invoiced living live lives located based took place saw treated insured
    waited carry carried offer offered bought buy buys
    receive place make create record register submit take generate log handle handled handling process processed
    come comes coming drive drives drove driven track tracked move moves moved go goes went sent send sends
    """
)
# Verbs that say which amount a unit measures when the unit alone fits several ("lasting 60 minutes": a duration,
# not a wait): the words a member's name would use.
AMOUNT_VERBS = {
    "lasting": ("duration", "length"),
    "lasted": ("duration", "length"),
    "long": ("duration", "length"),
    "waiting": ("wait", "waiting"),
    "waited": ("wait", "waiting"),
    "costing": ("cost", "price", "fee"),
    "cost": ("cost", "price", "fee"),
    "priced": ("price",),
    "weighing": ("weight",),
    "older": ("age",),
    "younger": ("age",),
    "longer": ("duration", "length"),
    "shorter": ("duration", "length"),
    "cheaper": ("price", "cost", "fee"),
    "heavier": ("weight",),
    "lighter": ("weight",),
}
# Words a number is written with ("1 million", "10k").
MULTIPLIERS = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9}
# A unit after an amount that only says it is money or a share ("over 500 dollars", "above 5 percent").
AMOUNT_UNITS = frozenset({"dollars", "dollar", "usd", "euros", "euro", "eur", "pounds", "gbp", "percent"})
# Everyday words for values the data writes otherwise ("women": female).
VALUE_WORDS = {"women": "female", "woman": "female", "men": "male", "man": "male", "ladies": "female"}
# A generic head noun after a dimension's name says nothing more ("insurance type", "age group" named "age").
GENERIC_HEADS = frozenset({"type", "types", "kind", "kinds", "sort", "class", "level"})
GROUP_MARKERS = (
    ("under", "each"),
    ("for", "every"),
    ("for", "each"),
    ("in", "each"),
    ("broken", "down", "by"),
    ("split", "by"),
    ("grouped", "by"),
)
# Words that only ask for a breakdown ("break down June's visits by attendance"): the "by" says by what.
BREAKDOWN_WORDS = (("break", "down"), ("breakdown",), ("broken", "down"))
GROUP_WORDS = frozenset({"by", "per", "across", "each", "every"})
COUNT_PHRASES = (("how", "many"), ("number", "of"), ("count", "of"), ("count",), ("counts",))
SUM_WORDS = frozenset({"total", "sum", "overall"})
AVERAGE_WORDS = frozenset({"average", "mean", "avg", "typical"})
SHARE_WORDS = frozenset({"share", "percentage", "percent", "%", "proportion", "ratio", "rate", "fraction"})
DISTINCT_WORDS = frozenset({"distinct", "unique", "different"})
MOST_WORDS = frozenset(
    {"most", "highest", "largest", "biggest", "greatest", "best", "top", "maximum", "max", "priciest"}
)
LEAST_WORDS = frozenset({"least", "lowest", "smallest", "fewest", "worst", "bottom", "minimum", "min", "cheapest"})
# Asked for, but the model has no measure that computes it (or it takes more than one query).
UNSUPPORTED = {
    "median": "a median",
    "percentile": "a percentile",
    "deviation": "a standard deviation",
    "variance": "a variance",
    "cumulative": "a running total",
    "running": "a running total",
    "growth": "a growth rate (two periods compared)",
    "change": "a change between two periods",
    "increase": "a change between two periods",
    "decrease": "a change between two periods",
    "difference": "a difference between two results",
    "correlation": "a correlation",
    "forecast": "a forecast",
    "predict": "a forecast",
    "why": "an explanation",
}
FOLLOW_UP_OPENERS = (
    ("and",),
    ("what", "about"),
    ("how", "about"),
    ("only",),
    ("just",),
    ("now",),
    ("but",),
    ("same", "list"),
    ("the", "same"),
    ("same",),
    *((verb, it, "down") for verb in ("break", "split") for it in ("that", "this", "it")),
    *((verb, it) for verb in ("split", "show") for it in ("that", "this", "it")),
)
# Words that point into the thread ("how many of those were urgent?"): a question with one is a follow-up.
ANAPHORS = frozenset({"those", "these", "them", "they", "ones"})
# Words that only say a follow-up adds to the last question ("break that down by region as well").
ALSO_PHRASES = (("as", "well"), ("too",), ("also",))
NEGATIONS = frozenset({"not", "excluding", "except", "without"})
# Words asking for results side by side ("compare revenue between air and rail", "air vs rail").
COMPARE_WORDS = frozenset({"compare", "compared", "comparing", "comparison", "vs", "versus"})
# Counts written as words ("the top three", "more than five orders"); "one" is left out: it is mostly a pronoun.
NUMBER_WORDS = {
    "zero": 0,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "hundred": 100,
    "dozen": 12,
}


@dataclass(frozen=True)
class Token:
    """A word of the question: as written, lowercased, and stemmed; ``start`` and ``end`` where it stands in the
    question's text."""

    text: str
    lower: str
    stem: str
    start: int = 0
    end: int = 0

    @property
    def plural(self) -> bool:
        """Whether the word is written in the plural ("orders"), whatever its stem was read as."""
        return stem(self.lower) != self.lower


def tokenize(question: str) -> list[Token]:
    """The question's tokens (a possessive ``'s`` and the endings ``'ve``, ``'re``, ``'ll``, ``'d``, ``'m`` dropped,
    ``n't`` read as "not"; a quoted value kept as one token)."""
    text = re.sub(
        r"(?<=[A-Za-z0-9])['\u2019](s|ve|re|ll|d|m)\b", lambda m: " " * len(m.group()), question
    )  # same length
    tokens: list[Token] = []
    for match in TOKEN.finditer(text):
        word = match.group()
        lower = word.lower()
        if lower == "t" and tokens and text[match.start() - 1 : match.start()] in ("'", "\u2019"):
            before = tokens.pop()  # "don't": "do" and "not"; "can't": "can" and "not"; "won't": "will" and "not"
            base = {"can": "can", "won": "will"}.get(before.lower, before.lower.removesuffix("n"))
            tokens.append(Token(before.text, base, stem(base), before.start, before.end))
            tokens.append(Token(word, "not", "not", match.start(), match.end()))
            continue
        if ORDINAL.fullmatch(lower):
            lower = lower[:-2]  # "June 15th": the 15th day, read as 15
        elif lower == "no" and text[match.end() : match.end() + 4].startswith((". of", ".of")):
            lower = "number"  # "no. of urgent orders": the number of them, not a negation
        lower = SPELLINGS.get(lower, lower)
        stemmed = lower if lower[:1].isdigit() or lower[:1] in '"$' else stem(lower)
        tokens.append(Token(word, lower, stemmed, match.start(), match.end()))
    return tokens


def whole_number(word: str) -> int | None:
    """A count written as digits or as a word ("5", "five", "twelve"); None when the word is not one."""
    if word.isdigit():
        return int(word)
    return NUMBER_WORDS.get(word.lower())


def number_of(text: str) -> float | None:
    """``500``, ``$1,200``, ``12.5%``, ``3``, ``five`` as a number; None when the text is not one."""
    if text.lower() in NUMBER_WORDS:
        return float(NUMBER_WORDS[text.lower()])
    cleaned = text.replace("$", "").replace(",", "").rstrip("%")
    if not re.fullmatch(r"\d+(?:\.\d+)?", cleaned):
        return None
    return float(cleaned)


def number_text(value: float) -> str:
    """A number as SQL and answers write it: ``500``, ``12.5``."""
    return str(int(value)) if value == int(value) else repr(value)

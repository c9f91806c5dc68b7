"""A decline's way forward: up to three questions like the one asked that the analyst does answer.

Candidates are built from the model, never from a list of phrasings: the question with one of the members a decline
names as its choices (the dates of an ambiguous period, the measures an amount could be), or with a word it could
not place replaced by a member named alike ("invoice": Invoiced amount). Each candidate is read like any question
and offered only when it is understood, so a suggestion is always one the analyst answers, in words the user reads
before choosing it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from embedadmin.chat.member_search import root, stems
from embedadmin.chat.providers.analyst.intent import Decline
from embedadmin.chat.providers.analyst.model_phrases import Cube

MAX_SUGGESTIONS = 3
MAX_CANDIDATES = 8  # each is read like a question: a bound on the work a decline costs
CLOSE = 0.8  # how alike a word and a member's word must be (difflib's ratio) to be offered for it


def candidates(question: str, decline: Decline, cubes: Sequence[Cube]) -> list[str]:
    """Questions to try, most likely first."""
    base = question.strip().rstrip("?.! ")
    wording = _roots(base)
    found: list[str] = []
    for title in sorted(decline.choices, key=lambda t: -len(wording & _roots(t))):
        found.append(f"{base} ({title.lower()})")
    for word in decline.unplaced:
        for title in _alike(word, cubes):
            replaced = re.sub(rf"\b{re.escape(word)}\b", title.lower(), base, count=1, flags=re.IGNORECASE)
            if replaced != base:
                found.append(replaced)
    return list(dict.fromkeys(found))[:MAX_CANDIDATES]


def _roots(text: str) -> set[str]:
    return {root(w) for w in stems(text)}


def _alike(word: str, cubes: Sequence[Cube]) -> list[str]:
    """Titles of members one of whose words has the root of ``word`` or is spelled much like it."""
    wanted = root(word.lower())
    titles: list[str] = []
    for cube in sorted(cubes, key=lambda c: not c.is_view):
        for member in cube.members:
            words = {w for phrase in member.phrases for w in phrase}
            same_root = any(root(w) == wanted for w in words)
            if same_root or difflib.get_close_matches(word.lower(), words, n=1, cutoff=CLOSE):
                titles.append(member.title)
    return list(dict.fromkeys(titles))

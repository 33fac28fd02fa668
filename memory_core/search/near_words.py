"""Words the notes hold one edit away from a query word they lack: the hint for a misspelt query. Pure.

A word the memory lacks may be a typo or a word of another topic ("cancer" asked of a chat that says
"dancer"), and only the caller can tell. So the query's own words decide whether the memory answers; an
answer is ranked with each hint in place of its word (a misspelt word then finds what it meant), and the
warning names both, for the caller to search again if the hint is not what was meant.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence

# Shorter words have too many real neighbours one edit away: at 5 letters, 14 of LoCoMo's 200 other-topic probes
# got a hint ("liver": "live"), at 6 letters 7, while the hints of misspelt questions stayed as good (docs/benchmarks.md).
MIN_LETTERS = 6
MAX_WORDS = 3  # words looked up per query, at most: each costs about 54 lookups per letter
_WORD = re.compile(r"[a-z]+")


def correctable(term: str) -> bool:
    """Whether ``term`` is a word a hint is sought for: ASCII letters only, at least :data:`MIN_LETTERS`."""
    return len(term) >= MIN_LETTERS and _WORD.fullmatch(term) is not None


def one_edit(word: str) -> list[str]:
    """Every string one deletion, transposition, replacement or insertion of a letter away from ``word``."""
    letters = string.ascii_lowercase
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    deletes = [a + b[1:] for a, b in splits if b]
    transposes = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    replaces = [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    inserts = [a + c + b for a, b in splits for c in letters]
    return list(dict.fromkeys(deletes + transposes + replaces + inserts))


def near_words(
    missing: Sequence[str],
    count: Callable[[Sequence[str]], Mapping[str, int]],
    texts: Callable[[str], Iterable[str]],
) -> dict[str, str]:
    """For each word of ``missing`` (words no note holds) that :func:`correctable` takes, the word one edit
    away, with the same first letter, that the most notes hold, as the notes write it. Words with no such
    neighbour are left out.

    ``count`` says how many chunks hold each of some words, ``texts`` gives a few chunks that hold one.
    Counts go by the index's stems, so several spellings one edit away share the best count ("melani" and
    "melanie" both count the notes that say "Melanie"): the hint is the one of them those notes write.
    """
    words = [word for word in dict.fromkeys(missing) if correctable(word)][:MAX_WORDS]
    edits = {word: [edit for edit in one_edit(word) if edit[0] == word[0]] for word in words}  # typos seldom hit it
    counts = count(list(dict.fromkeys(edit for near in edits.values() for edit in near))) if words else {}
    hints: dict[str, str] = {}
    for word, near in edits.items():
        best = max((counts.get(edit, 0) for edit in near), default=0)
        if best <= 0:
            continue
        tied = [edit for edit in near if counts.get(edit, 0) == best]
        written = set(_WORD.findall(" ".join(texts(tied[0])).lower()))
        if spelled := [edit for edit in tied if edit in written]:
            hints[word] = spelled[0]
    return hints


def hint_text(hints: Mapping[str, str], *, ranked: bool = False) -> str:
    """The hints as a warning the caller can act on; ``ranked``: the answer's hits were ranked by them."""
    pairs = ", ".join(f'"{word}" (did you mean "{near}"?)' for word, near in hints.items())
    if ranked:
        return f"no note holds {pairs}: the results are ranked by that spelling; search again if you meant another word"
    return f"no note holds {pairs}: search again with that spelling if it is what you meant"

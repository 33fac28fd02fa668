"""How often everyday English writes a word: the background a small memory's keyword weights lean on.

The counts are ``english_frequencies.txt`` beside this module (its header says where they come from): the
10,000 commonest English words, in occurrences per billion words. A word outside them counts as never written.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

PER_BILLION = 1e-9


@cache
def _shares() -> dict[str, float]:
    """Each listed word's share of running English text, read once."""
    text = files(__package__).joinpath("english_frequencies.txt").read_text(encoding="utf-8")
    shares: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            word, count = line.split()
            shares[word] = int(count) * PER_BILLION
    return shares


def english_share(word: str) -> float:
    """The share of English running text that is ``word`` (lower-case): about 0.0016 for "time", 0 for a word
    outside the 10,000 commonest ("standup", "postgresql")."""
    return _shares().get(word, 0.0)

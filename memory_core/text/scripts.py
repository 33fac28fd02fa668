"""Which writing systems a text's letters are in: how the doctor tells an English-only embedding model
from the memory it would have to read. Pure."""

from __future__ import annotations

import re
from collections import Counter

from .segments import CJK_LETTERS, HANGUL_LETTERS

# Scripts an embedding model may or may not have been trained on, by letter ranges; other letters count as
# "other". Latin covers English and the accented European languages.
SCRIPTS: dict[str, str] = {
    "Latin": "A-Za-z\u00c0-\u024f\u1e00-\u1eff",
    "Chinese/Japanese": CJK_LETTERS,
    "Korean": HANGUL_LETTERS,
    "Cyrillic": "\u0400-\u04ff",
    "Greek": "\u0370-\u03ff",
    "Arabic": "\u0600-\u06ff",
    "Hebrew": "\u0590-\u05ff",
    "Devanagari": "\u0900-\u097f",
    "Thai": "\u0e00-\u0e7f",
}
_LETTERS = {name: re.compile(f"[{chars}]") for name, chars in SCRIPTS.items()}


def letters_by_script(text: str) -> Counter[str]:
    """How many of ``text``'s letters each script of :data:`SCRIPTS` holds (scripts with none left out)."""
    counts = Counter({name: len(pattern.findall(text)) for name, pattern in _LETTERS.items()})
    return +counts

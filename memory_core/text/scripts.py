"""Which writing systems a text's letters are in: how the doctor tells an English-only embedding model
from the memory it would have to read. Pure."""

from __future__ import annotations

import re
from collections import Counter

from .segments import CJK_LETTERS, HANGUL_LETTERS

# Scripts an embedding model may or may not have been trained on, by letter ranges; letters of scripts not
# named here are not counted. Latin covers English and the accented European languages.
SCRIPTS: dict[str, str] = {
    "Latin": "A-Za-z\u00c0-\u024f\u1e00-\u1eff",
    "Chinese/Japanese": CJK_LETTERS,
    "Korean": HANGUL_LETTERS,
    "Cyrillic": "\u0400-\u04ff",
    "Greek": "\u0370-\u03ff",
    "Armenian": "\u0530-\u058f",
    "Hebrew": "\u0590-\u05ff",
    "Arabic": "\u0600-\u06ff",
    "Devanagari": "\u0900-\u097f",
    "Bengali": "\u0980-\u09ff",
    "Gurmukhi": "\u0a00-\u0a7f",
    "Gujarati": "\u0a80-\u0aff",
    "Oriya": "\u0b00-\u0b7f",
    "Tamil": "\u0b80-\u0bff",
    "Telugu": "\u0c00-\u0c7f",
    "Kannada": "\u0c80-\u0cff",
    "Malayalam": "\u0d00-\u0d7f",
    "Sinhala": "\u0d80-\u0dff",
    "Thai": "\u0e00-\u0e7f",
    "Lao": "\u0e80-\u0eff",
    "Georgian": "\u10a0-\u10ff",
    "Myanmar": "\u1000-\u109f",
    "Khmer": "\u1780-\u17ff",
}
_LETTERS = {name: re.compile(f"[{chars}]") for name, chars in SCRIPTS.items()}


def letters_by_script(text: str) -> Counter[str]:
    """How many of ``text``'s letters each script of :data:`SCRIPTS` holds (scripts with none left out)."""
    counts = Counter({name: len(pattern.findall(text)) for name, pattern in _LETTERS.items()})
    return +counts

"""Stems of words in a script that one stemmed language writes: Russian for Cyrillic, Greek for Greek, Hindi
for Devanagari, Arabic for the Arabic script (:mod:`.arabic`). Pure.

FTS5's porter stemmer stems English only, so a note that says ``встреча`` ("a meeting") was not found by
``встречи`` ("meetings") or ``встречу``: every Russian, Greek or Hindi noun and verb is inflected.
Snowball's stemmers (the ``snowballstemmer`` package, the reference implementations) give each form its
stem: the index holds the word and its stem, a query asks for the stem, so any form finds any other. Only
scripts that a single stemmer serves are stemmed; a Latin word could be English, French or German, and
porter already stems it.
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from typing import Any

import snowballstemmer  # type: ignore[import-untyped]

from .arabic import ARABIC_LETTERS, fold, light_stem

# language -> its letters (Devanagari without its dandas, the full stops)
_STEMMERS = {
    "russian": "\u0400-\u04ff",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "hindi": "\u0900-\u0963\u0966-\u097f",
    "arabic": ARABIC_LETTERS,
}
_WORDS = {language: re.compile(f"[{letters}]+") for language, letters in _STEMMERS.items()}
STEMMED_LETTERS = "".join(_STEMMERS.values())  # regex ranges, for the segmenter's test for other scripts
STEMMED_LETTER = re.compile(f"[{STEMMED_LETTERS}]")  # a letter of a stemmed script
_WORD = re.compile("|".join(f"[{letters}]+" for letters in _STEMMERS.values()))
MIN_LETTERS = 4  # shorter words are mostly particles and pronouns, whose stems would merge unrelated words


def with_stems(text: str) -> str:
    """``text`` (its Arabic folded: :func:`.arabic.fold`) with the stems of its stemmed words after it, one per
    word that has one (``встречи`` -> ``встречи встреч``): the index's term counts; a stem's place in the text
    matters to no search."""
    if not STEMMED_LETTER.search(text):
        return text
    text = fold(text)
    stems = [stem for word in _WORD.findall(text) if (stem := stem_of(word))]
    return f"{text} {' '.join(stems)}" if stems else text


@lru_cache(maxsize=65_536)
def stem_of(word: str) -> str | None:
    """The stem of ``word`` (lower-cased; Arabic folded by the caller) when it is a word of one stemmed script,
    at least :data:`MIN_LETTERS` long, and its stem differs from it; else None."""
    if len(word) < MIN_LETTERS:
        return None
    for language, letters in _WORDS.items():
        if letters.fullmatch(word):
            stem: str = light_stem(word) if language == "arabic" else _stemmer(language).stemWord(word.lower())
            return stem if stem and stem != word.lower() else None
    return None


_local = threading.local()  # a Snowball stemmer keeps its word in itself: one per thread (indexing, queries)


def _stemmer(language: str) -> Any:
    stemmers: dict[str, Any] = _local.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        stemmers[language] = snowballstemmer.stemmer(language)
    return stemmers[language]

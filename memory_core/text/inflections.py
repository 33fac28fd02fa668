"""English inflections folded as the index's porter stemmer folds them: Porter's steps 1 and 5a; and the whole
of porter's stem, for what the index finds beyond them. Pure.

FTS5's porter tokenizer finds "databases" for "database", "decided" for "decide", "studies" for "study". The
Python side must agree wherever it decides what the index holds (whether memory answers, BM25 scored here), or
it says "nothing in memory matches" about a note FTS5 has just found. Only the inflectional steps are taken
there: Porter's derivational steps 2 to 4 merge words that are not one ("informal" and "information" ->
"inform"). :func:`porter_stem` takes every step, to name the word a note writes where the index found one of
these ("migrated" for "migration").

M. F. Porter, "An algorithm for suffix stripping", Program 14(3), 1980; the steps as SQLite's FTS5 runs them
(with the later "bli" and "logi" rules of Porter's own code).
"""

from __future__ import annotations

from collections.abc import Callable

_VOWELS = frozenset("aeiou")


def inflection_stem(word: str) -> str:
    """``word`` (lower case) with its inflection removed as porter removes it: the plural, ``-ed``, ``-ing``,
    a final ``-y`` and ``-e`` ("databases", "database" -> "databas"; "planned", "planning" -> "plan"). A word of
    two letters or fewer, or with anything but ASCII letters, is returned as it is."""
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    return _final_e(_final_y(_ed_ing(_plural(word))))


def porter_stem(word: str) -> str:
    """``word`` (lower case) as FTS5's porter tokenizer stems it, every step ("migration", "migrated" ->
    "migrat"); like :func:`inflection_stem`, a word of two letters or fewer or with anything but ASCII
    letters is returned as it is."""
    if len(word) <= 2 or not (word.isascii() and word.isalpha()):
        return word
    stem = _final_y(_ed_ing(_plural(word)))
    for rules in (_STEP2, _STEP3, _STEP4):
        stem = _derivation(stem, rules)
    return _final_ll(_final_e(stem))


def _consonant(word: str, at: int) -> bool:
    """Porter's consonant: not a vowel, and a ``y`` only after a vowel or first."""
    char = word[at]
    if char in _VOWELS:
        return False
    return char != "y" or at == 0 or not _consonant(word, at - 1)


def _measure(stem: str) -> int:
    """Porter's m: how many times a run of vowels is followed by a consonant in ``stem``."""
    return "".join("c" if _consonant(stem, at) else "v" for at in range(len(stem))).count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, at) for at in range(len(stem)))


def _short_syllable(stem: str) -> bool:
    """Porter's *o: ``stem`` ends consonant, vowel, consonant, the last not w, x or y ("hop", not "snow")."""
    n = len(stem)
    return (
        n >= 3
        and _consonant(stem, n - 3)
        and not _consonant(stem, n - 2)
        and _consonant(stem, n - 1)
        and stem[-1] not in "wxy"
    )


def _plural(word: str) -> str:
    """Step 1a: sses -> ss, ies -> i, s -> (none), but ss stays; as SQLite, only with a letter before the ending
    ("ies" alone -> "ie")."""
    if (word.endswith("sses") and len(word) > 4) or (word.endswith("ies") and len(word) > 3):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _ed_ing(word: str) -> str:
    """Step 1b: eed -> ee (m > 0); ed and ing go after a vowel, then at/bl/iz get their e back, a doubled
    consonant is undoubled (not l, s, z), and a short stem gets its e back ("hoping" -> "hope")."""
    if word.endswith("eed") and len(word) > 3:  # "eed" itself is "e" + "ed", as SQLite reads it
        return word[:-1] if _measure(word[:-3]) > 0 else word
    for suffix in ("ed", "ing"):
        if word.endswith(suffix) and _has_vowel(stem := word[: -len(suffix)]):
            if stem.endswith(("at", "bl", "iz")):
                return stem + "e"
            if len(stem) >= 2 and stem[-1] == stem[-2] and _consonant(stem, len(stem) - 1) and stem[-1] not in "lsz":
                return stem[:-1]
            return stem + "e" if _measure(stem) == 1 and _short_syllable(stem) else stem
    return word


def _final_y(word: str) -> str:
    """Step 1c: y -> i after a vowel ("study", "studies" -> "studi")."""
    return word[:-1] + "i" if word.endswith("y") and _has_vowel(word[:-1]) else word


def _final_e(word: str) -> str:
    """Step 5a: a final e goes when m > 1, or m = 1 and the stem is not a short syllable ("note" stays)."""
    if word.endswith("e"):
        stem = word[:-1]
        m = _measure(stem)
        if m > 1 or (m == 1 and not _short_syllable(stem)):
            return stem
    return word


def _final_ll(word: str) -> str:
    """Step 5b: a final ll loses an l when m > 1."""
    return word[:-1] if word.endswith("ll") and _measure(word[:-1]) > 1 else word


def _derivation(word: str, rules: Rules) -> str:
    """One of steps 2 to 4: the first rule whose suffix ends ``word`` (and is shorter) decides; its
    replacement is made when what comes before the suffix meets the rule's condition, else nothing changes."""
    for suffix, replacement, condition in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            return stem + replacement if condition(stem) else word
    return word


def _m_above_0(stem: str) -> bool:
    return _measure(stem) > 0


def _m_above_1(stem: str) -> bool:
    return _measure(stem) > 1


def _m_above_1_after_s_or_t(stem: str) -> bool:
    """Step 4's condition for "ion": m > 1, and an s or t before it."""
    return _m_above_1(stem) and stem.endswith(("s", "t"))


Rules = tuple[tuple[str, str, Callable[[str], bool]], ...]  # (suffix, replacement, condition on what precedes it)
# Steps 2 to 4, each rule with its condition as SQLite lists them (mkportersteps.tcl): tried in this order, which
# within the rules that share a second-last letter is SQLite's, the only order in which two suffixes can both end
# a word.
_STEP2: Rules = tuple(
    (suffix, replacement, _m_above_0)
    for suffix, replacement in (
        ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"), ("logi", "log"),
        ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"), ("ization", "ize"),
        ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"), ("fulness", "ful"),
        ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
    )
)  # fmt: skip
_STEP3: Rules = tuple(
    (suffix, replacement, _m_above_0)
    for suffix, replacement in (
        ("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"), ("ful", ""), ("ness", ""),
    )
)  # fmt: skip
_STEP4: Rules = tuple(
    (suffix, "", _m_above_1_after_s_or_t if suffix == "ion" else _m_above_1)
    for suffix in (
        "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate",
        "iti", "ous", "ive", "ize",
    )
)  # fmt: skip

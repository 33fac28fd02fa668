"""Arabic-script text folded and its words lightly stemmed, as search engines read Arabic. Pure.

Arabic writes the article and some prepositions into the word (``البيانات``, "the data"; ``والبيانات``,
"and the data") and its plural and gender as suffixes (``بيانات``), and the same word may carry short-vowel
marks or not. FTS5's unicode61 cuts a word at those marks, and no form found another. This is the normaliser
and "light" stemmer of Larkey et al. (2002), as Lucene's Arabic analyzer has them: no dictionary, no roots,
so a broken plural (``فواتير``, the plural of ``فاتورة``) stays a word of its own.
"""

from __future__ import annotations

import re

ARABIC_LETTERS = "\u0620-\u064a\u066e-\u06d3"  # Arabic letters and those Persian and Urdu add (regex ranges)
_MARKS = re.compile("[\u064b-\u065f\u0670\u0640]")  # short vowels and other marks, and the tatweel (ـ)
# Alef forms, alef maqsura and teh marbuta; and Persian's and Urdu's yeh and kaf, which a keyboard may write
# either way (کتاب, كتاب: "book").
_FOLD = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ى": "ي", "ة": "ه", "ی": "ي", "ک": "ك"})
_PREFIXES = ("وال", "بال", "كال", "فال", "لل", "ال", "و")  # "and the", "with the", "like the", "so the", "for the"
_SUFFIXES = ("ها", "ان", "ات", "ون", "ين", "يه", "ه", "ي")  # after folding: ية is يه, ة is ه


def fold(text: str) -> str:
    """``text`` without short-vowel marks and tatweel, its alef forms, alef maqsura, teh marbuta and Persian
    yeh and kaf folded."""
    return _MARKS.sub("", text).translate(_FOLD)


def light_stem(word: str) -> str:
    """``word`` (folded) without one article or prefix and its suffixes, two letters kept at least."""
    for prefix in _PREFIXES:
        if word.startswith(prefix) and len(word) >= (4 if len(prefix) == 1 else len(prefix) + 2):
            word = word[len(prefix) :]
            break
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) >= len(suffix) + 2:
            word = word[: -len(suffix)]
    return word

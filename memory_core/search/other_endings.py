"""A query word no note holds, that notes hold with another ending: an inflection porter does not know. Pure.

FTS5's porter stemmer folds English endings only. German writes "Besprechung" and "Besprechungen", Dutch
"vergadering" and "vergaderingen", Turkish and Finnish add case endings to every noun ("rapor", "raporu",
"raporunu"; "sunucu", "sunucuya"), so a query in one form found nothing of a note in another. Such a word is
searched as the notes' words that start as it does and end otherwise, by a few letters. As with a compound
written the other way (:mod:`.compounds`), the notes attest the word, so the memory answers by the forms they
write. Not for a word of English's commonest: porter already gives its forms, and a memory that lacks it is as
often about another topic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice

from ..text.inflections import porter_stem
from ..text.terms import fold_accents, written_words
from ..text.word_frequencies import english_share
from .compounds import MAX_HEADS
from .near_words import LATIN, MAX_WORDS

MIN_STEM = 5  # letters of the shorter word: at 4 "plan" would find "plane", "plank" and "plant"
# Letters the longer word adds: "en" of "Besprechungen", "unu" of "raporunu", "ya" of "sunucuya". Two words that
# each end otherwise after what they share are as often two words ("melanoma" and "Melanie", "weighed" and
# "weight": SciFact's claims asked of LoCoMo's chats), so one must be the start of the other.
MAX_ENDING = 3


def takes(word: str) -> bool:
    """Whether ``word`` (a query term, lower-cased, its accents folded) is looked up with other endings: a word
    of :data:`MIN_STEM` letters or more of the Latin alphabet, not one of English's commonest."""
    return len(word) >= MIN_STEM and LATIN.fullmatch(word) is not None and not english_share(word)


def other_ending(word: str, term: str) -> bool:
    """Whether ``term`` is ``word`` with an ending added or taken off: one starts with the other, which has
    :data:`MIN_STEM` letters or more, and is at most :data:`MAX_ENDING` letters longer."""
    shorter, longer = sorted((word, term), key=len)
    return len(shorter) >= MIN_STEM and 0 < len(longer) - len(shorter) <= MAX_ENDING and longer.startswith(shorter)


def other_endings(
    missing: Sequence[str],
    starting: Callable[[str], Mapping[str, int]],
    count: Callable[[Sequence[str]], Mapping[str, int]],
    texts: Callable[[str], Iterable[str]],
    is_term: Callable[[str], bool],
) -> dict[str, tuple[str, ...]]:
    """For each word of ``missing`` (words no note holds) that :func:`takes`, the words of the notes with another
    ending (:func:`other_ending`), as the notes write them: the :data:`~.compounds.MAX_HEADS` that the most chunks
    hold. Words with none are left out.

    ``starting`` gives the index's terms that start with a word and how many chunks hold each, ``count`` how
    many hold each of some words; ``texts`` a few chunks that hold a term; ``is_term`` whether a word is a
    search term as it stands (no stop word)."""
    found: dict[str, tuple[str, ...]] = {}
    for word in list(dict.fromkeys(missing))[:MAX_WORDS]:
        folded = fold_accents(word)
        if not takes(folded):
            continue
        cut = [folded[:-letters] for letters in range(1, MAX_ENDING + 1) if len(folded) - letters >= MIN_STEM]
        held = {term: n for term, n in starting(folded).items() if other_ending(folded, term)}
        held |= {term: n for term, n in count(cut).items() if n}
        spelled = (
            _as_written(term, folded, texts(term)) for term in sorted(held, key=lambda term: (-held[term], term))
        )
        if forms := tuple(islice(dict.fromkeys(form for form in spelled if form and is_term(form)), MAX_HEADS)):
            found[word] = forms
    return found


def _as_written(term: str, folded: str, texts: Iterable[str]) -> str | None:
    """The word of ``texts`` that the index holds as ``term`` (its accents folded, porter's stem), lower-cased; None
    when they write none (the term is part of another word there)."""
    for seen in written_words(" ".join(texts)):
        plain = fold_accents(seen)
        if term in (plain, porter_stem(plain)) and other_ending(folded, plain):
            return seen
    return None

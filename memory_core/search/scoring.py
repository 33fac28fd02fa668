"""Keyword scores from term statistics: FTS5's BM25 IDF, rarity weights, coverage and query share. Pure functions.

Every store returns FTS5's ``bm25()`` (negative, lower is better) and how many chunks hold each term;
these turn both into the 0..1 figures ranking fuses, and choose the rare terms a search may run alone.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from ..stores.bm25 import IDF_FLOOR, K1, B, floored, idf
from ..text.segments import is_gram, katakana_words
from ..text.terms import index_key, index_stems, key_counts, phrase_count, stems, term_index_keys, term_keys
from ..text.word_frequencies import english_share

# A word of n Han or kana characters is n - 1 overlapping grams, each counted again wherever the word repeats,
# so FTS5's k1 lets a paragraph that repeats a few words outrank the one that holds the question's words.
# A lower saturation for grams, keyword only: JSQuAD nDCG@10 0.939 -> 0.9497, CMRC 0.993 -> 0.991; what the
# agent reads, answer read, JSQuAD 0.984 -> 0.987 and CMRC 0.934 -> 0.938 (0.2-1.2 measured:
# docs/benchmarks.md). Words of every other script keep FTS5's k1.
K1_GRAMS = 0.3

# A memory's own counts say little while it is small: in seven notes, "time" and "standup" are each in one,
# and "standup time" found the note that said "last time" as often as the one about the standup. So a term's
# coverage weight also asks how it would weigh if the memory held BACKGROUND_CHUNKS more chunks of
# BACKGROUND_WORDS words of everyday English (:mod:`..text.word_frequencies`), and takes the lesser
# (:func:`term_weight`). Beside a large memory 6,000 words barely count (CISI, SciFact: within 0.001 nDCG@10);
# beside a chat of 50-100 chunks they do (LoCoMo keyword nDCG@10 +0.002 to +0.003, other-topic probes
# answered with nothing 0.860 -> 0.885: docs/benchmarks.md). BM25 stays FTS5's own.
BACKGROUND_CHUNKS = 100
BACKGROUND_WORDS = 60

# Bigrams in a row that hold a katakana word for abstention however long the word (:func:`_answered`): four
# letters, a loanword of its own (データ is two bigrams, ミュージ three), where アップ of バックアップ is two.
KATAKANA_PART = 3


def rare_terms(terms: Sequence[str], counts: Mapping[str, int], total: int, limit: int) -> list[str] | None:
    """The terms worth a keyword search on their own, or None to search them all.

    FTS5's BM25 gives a term held by half the chunks or more an IDF of 1e-6, so such a term only orders
    chunks that hold nothing rarer. When the rarer terms are held by at least ``limit`` chunks, searching
    them alone returns the same top ``limit`` (up to ties within 1e-6) without scoring every chunk that
    says "data"; a store then checks that the rare search did fill ``limit`` rows.
    """
    rare = [term for term in terms if not floored(counts[term], total)]
    if rare and len(rare) < len(terms) and sum(counts[term] for term in rare) >= limit:
        return rare
    return None


def bm25_idf(rows: int, total: int) -> float:
    """FTS5's own IDF for a term that ``rows`` of ``total`` chunks hold; 0 from half the chunks up (FTS5: 1e-6)."""
    return 0.0 if floored(rows, total) else idf(rows, total)


def coverage_idf(rows: float, total: float) -> float:
    """An IDF that never reaches 0 (Lucene's): a word in most chunks weighs little, but not nothing."""
    return math.log(1.0 + (max(total, rows) - rows + 0.5) / (rows + 0.5))


def background_rows(term: str) -> float:
    """How many of the English background's chunks hold ``term`` (:data:`BACKGROUND_CHUNKS`): each of a chunk's
    :data:`BACKGROUND_WORDS` words is ``term`` at English's rate. 0 for a word English rarely writes."""
    return -BACKGROUND_CHUNKS * math.expm1(-BACKGROUND_WORDS * english_share(term))


def term_weight(term: str, rows: int, total: int) -> float:
    """A held term's coverage weight: its :func:`coverage_idf` among ``total`` chunks, ``rows`` of which hold it,
    lowered where the English background says it is more common than that.

    Each view is taken relative to a word held once (what the rarest weighs in it), and the lesser wins: the
    background can tell that "time" is common where seven notes cannot, but never that "gina", in every chunk
    of a chat, is rare. A term's weight is never above the memory's own."""
    own = coverage_idf(rows, total)
    rarest = coverage_idf(1, total + BACKGROUND_CHUNKS)
    with_english = coverage_idf(rows + background_rows(term), total + BACKGROUND_CHUNKS) / rarest
    return min(own, coverage_idf(1, total) * with_english)


@dataclass(frozen=True)
class TermWeights:
    """A query's terms weighed by how many chunks hold each: what keyword scores are built on."""

    keys: tuple[frozenset[str], ...]  # each term's match keys, as coverage matches it
    weights: tuple[float, ...]  # each term's term_weight; 0 for a term no chunk holds
    bm25_scale: float  # FTS5's IDF summed over the held terms: bm25 of a chunk with each once, average length
    missing: float = 0.0  # the terms no chunk holds, each weighed as the rarest: what no chunk can answer
    repeats: tuple[int, ...] = ()  # how often the query asks for each term (BM25's query term frequency)
    average_length: float = 0.0  # the candidates' mean length in terms: BM25's length normalisation
    common: tuple[bool, ...] = ()  # whether each term is in half the chunks or more (FTS5's IDF is 1e-6 there)
    idfs: tuple[float, ...] = ()  # each term's FTS5 IDF (0 for a common or missing term)
    in_python: tuple[bool, ...] = ()  # the terms whose BM25 is computed here rather than by FTS5
    saturation: tuple[float, ...] = ()  # each term's BM25 k1 when computed here
    # each term's index keys (:func:`..text.terms.term_index_keys`): whether a text holds it as the index does,
    # for abstention and for BM25 computed here
    indexed: tuple[frozenset[str], ...] = ()
    # the query's katakana words, each as the places of its bigrams (:func:`..text.segments.katakana_words`)
    words: tuple[tuple[int, ...], ...] = ()
    # each term's tokens when it is the phrase of words the query joins (:func:`..text.terms.joined_phrases`; else
    # empty): held only where they are written together; it ranks, while snippets weigh the query's words only
    phrases: tuple[tuple[str, ...], ...] = ()

    @cached_property
    def floored_rank(self) -> float:
        """The most FTS5's ``bm25()`` can give a chunk from the common terms alone (each at IDF ``IDF_FLOOR``)."""
        return IDF_FLOOR * (K1 + 1.0) * sum(n for n, common in zip(self.repeats, self.common, strict=True) if common)

    def by_key(self) -> dict[str, float]:
        """Each held term's weight under each of its match keys (the larger, where two terms share a key); a
        joined words' phrase leaves its words their own weights."""
        found: dict[str, float] = {}
        for keys, weight, phrase in zip(self.keys, self.weights, self.phrases, strict=True):
            if phrase:
                continue
            for key in keys:
                found[key] = max(found.get(key, 0.0), weight)
        return found


def weigh_terms(
    terms: Sequence[str],
    counts: Mapping[str, int],
    total: int,
    repeats: Mapping[str, int] | None = None,
    names: Collection[str] = (),
    phrases: Collection[str] = (),
) -> TermWeights:
    """Weights for ``terms`` from ``counts`` (how many of ``total`` chunks hold each: missing = none).

    ``repeats`` (how often the query asks for each term, default once) scale the BM25 figure, as they scale
    the ranking's BM25; coverage and abstention weigh each term once (weighing them too made 3 % more
    other-topic probes answered on LoCoMo, for no gain in ranking). A held term in ``names`` (one the notes
    write as a name: :func:`..text.names.written_as_names`) weighs as the rarest. These are abstention's weights:
    that every note names Dana says the memory is about her, while ranking must learn that her name tells no
    note from another. ``phrases``: the terms that are joined words' phrases (:attr:`TermWeights.phrases`)."""
    held = [counts.get(term, 0) for term in terms]
    times = [(repeats or {}).get(term, 1) for term in terms]
    common = tuple(rows > 0 and floored(rows, total) for rows in held)
    grams = tuple(map(is_gram, terms))  # with any gram, every term is scored here: a gram needs its own k1
    return TermWeights(
        tuple(map(term_keys, terms)),
        tuple(
            (coverage_idf(1, total) if term in names else term_weight(term, rows, total)) if rows else 0.0
            for term, rows in zip(terms, held, strict=True)
        ),
        sum(n * bm25_idf(rows, total) for rows, n in zip(held, times, strict=True) if rows),
        sum(coverage_idf(1, total) for rows in held if not rows) if total else 0.0,
        tuple(times),
        common=common,
        idfs=tuple(bm25_idf(rows, total) if rows else 0.0 for rows in held),
        in_python=tuple(any(grams) or term_common for term_common in common),
        saturation=tuple(K1_GRAMS if gram else K1 for gram in grams),
        indexed=tuple(map(term_index_keys, terms)),
        words=tuple(katakana_words(terms)),
        phrases=tuple(tuple(term.split()) if term in phrases else () for term in terms),
    )


def text_length(text: str) -> int:
    """How many keyword terms ``text`` is indexed by: BM25's document length."""
    return key_counts(text).total()


def term_coverage(weights: TermWeights, text: str) -> float:
    """The share of the query's term weight that ``text`` holds (each term once; plural forms match).

    By match keys, which take a word's other forms less often than the index does: coverage by index keys
    ranked a little worse in the runs that tried it (CISI nDCG@10 0.368 -> 0.364, LoCoMo ev@2k 0.681 ->
    0.678; docs/benchmarks.md)."""
    total = sum(weights.weights)
    if total <= 0:
        return 0.0
    present = stems(text)
    terms = zip(weights.keys, weights.weights, weights.phrases, strict=True)
    return sum(w for keys, w, phrase in terms if keys <= present and (not phrase or phrase_count(text, phrase))) / total


def answer_share(weights: TermWeights, texts: Iterable[str]) -> float:
    """The share of the whole query that ``texts`` answer together: like :func:`term_coverage`, but the words
    no chunk holds count too (as the rarest), so a query on another topic that shares a common word or two
    with the memory scores low (coverage leaves them out so that a typo does not lower every score). An
    answer of several short notes can answer a long question that none of them answers alone. Terms are
    held as the index holds them: "database" is answered by a note that says "databases"."""
    return _query_share(weights, weights.weights, texts)


def naming_share(weights: TermWeights, names: Iterable[str]) -> float:
    """The share of the whole query that ``names`` answer (the words which named a file, and a chunk of it),
    as :func:`answer_share`, but a word no chunk holds counts when they hold it, weighed as the rarest, since a
    name need not be written in its file: a chunk of yesterday's log answers "yesterday" whether or not it says so."""
    missing = sum(1 for weight in weights.weights if weight <= 0)
    return _query_share(weights, [weight if weight > 0 else weights.missing / missing for weight in weights.weights], names)


def _query_share(weights: TermWeights, held_weights: Sequence[float], texts: Iterable[str]) -> float:
    """The weight of the query's terms ``texts`` hold (each weighed as ``held_weights`` says) over the whole query's,
    the words no chunk holds counted as the rarest."""
    total = sum(weights.weights) + weights.missing
    held = _answered(weights, _indexed(texts))
    return sum(w for w, answered in zip(held_weights, held, strict=True) if answered) / total if total > 0 else 0.0


def held_terms(weights: TermWeights, texts: Iterable[str]) -> int:
    """How many of the query's terms ``texts`` hold between them, as the index holds them (each once,
    whatever its weight)."""
    return sum(_answered(weights, _indexed(texts)))


def _answered(weights: TermWeights, present: frozenset[str]) -> list[bool]:
    """Whether ``present`` (index keys) holds each of the query's terms, as the index holds them; a katakana
    word's bigrams only when it holds half of them or more (a misspelt letter costs two), or :data:`KATAKANA_PART`
    of them in a row: a part of a compound written as one run (ミュージック of ミュージックエンタテインメント).
    In a few notes about backups, アッ and ップ of バックアップ answered "アップルパイの作り方" (how to make an apple
    pie): two of the word's five bigrams, part of another word."""
    held = [keys <= present for keys in weights.indexed]
    for word in weights.words:
        flags = [held[at] for at in word]
        if 2 * sum(flags) < len(word) and _longest_run(flags) < KATAKANA_PART:
            for at in word:
                held[at] = False
    return held


def _longest_run(flags: Sequence[bool]) -> int:
    """The most ``True`` in a row in ``flags``."""
    longest = run = 0
    for flag in flags:
        run = run + 1 if flag else 0
        longest = max(longest, run)
    return longest


def _indexed(texts: Iterable[str]) -> frozenset[str]:
    return frozenset[str]().union(*map(index_stems, texts))


def bm25_strength(rank: float) -> float:
    """An FTS5 ``bm25()`` value (negative; lower is better) as ``s / (1 + s)`` of its strength ``s``:
    0..1, and still growing for the strongest matches (no cap)."""
    strength = -rank if rank < 0 else 0.0
    return strength / (1.0 + strength)


def bm25_share(rank: float, weights: TermWeights, text: str = "") -> float:
    """BM25 as a share of a chunk holding each query term once at average length (1 there; up to K1 + 1).

    FTS5's ``bm25()`` (``rank``: negative, lower is better) scores the terms it weighs well. Two kinds of
    term are scored here instead, from ``text`` (BM25's term frequency and length parts over the index keys,
    which take a word's inflected forms as FTS5's porter stems do; the candidates' mean length):
    - a term in half the chunks or more, to which FTS5 gives an IDF of 1e-6: in a small folder, where nearly
      every word is that common, it could not tell a note that repeats the query from one that mentions it
      once in passing. It weighs coverage's IDF (never 0);
    - every term of a query with CJK or Thai grams, at FTS5's IDF, each gram with the saturation
      :data:`K1_GRAMS` (FTS5's k1 is fixed); the grams are the index's own tokens, so the keys match exactly.
    Other terms are FTS5's. What FTS5 gives a chunk whose only matches are common terms (each at IDF
    :data:`~..stores.bm25.IDF_FLOOR`) is not counted: those terms are scored here, and a match of FTS5's
    alone there is a word of the same root ("facture" for "facturation"), not the term.
    """
    by_fts5 = not (weights.in_python and all(weights.in_python))
    held = -rank if by_fts5 and -rank > weights.floored_rank else 0.0
    total = weights.bm25_scale
    if text and any(weights.in_python):
        counts = key_counts(text)
        length = counts.total() / weights.average_length if weights.average_length > 0 else 1.0
        norm = 1.0 - B + B * length
        terms = zip(weights.indexed, weights.weights, weights.idfs, weights.repeats, weights.common, weights.in_python,
                    weights.saturation, weights.phrases, strict=True)  # fmt: skip
        for keys, weight, idf, times, common, here, k1, phrase in terms:
            if not here:
                continue
            if common:
                total += times * weight
            tf = phrase_count(text, phrase, index_key) if phrase else min((counts[key] for key in keys), default=0)
            if tf:
                held += times * (weight if common else idf) * tf * (k1 + 1.0) / (tf + k1 * norm)
    return held / total if total > 0 else 0.0


def soft_cap(share: float) -> float:
    """A share of the query as a score below 1: unchanged up to 0.5, then closing on 1 ever more slowly, so
    hits that answer the whole query still differ by how strongly they hold it (a cap at 1 tied them)."""
    if share <= 0.5:
        return share
    return 1.0 - 0.5 * math.exp(-2.0 * (share - 0.5))

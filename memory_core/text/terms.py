"""A query's search terms, the tokenizer both stores index with, and the keys coverage and snippets match by.

Terms come from :mod:`.segments`, which cuts every script the way the index holds it: English words,
identifier parts, CJK bigrams, Korean stems. Lower-cased; stop words dropped.
Stores quote each term in their own syntax, so no input is ever read as a query operator; scoring
weighs them (:mod:`..search.scoring`). Python-side matching compares keys of the tokens FTS5 would cut,
accents folded: *match keys* (crudely stemmed) for coverage and snippets, *index keys* (inflections folded as
the index's porter stemmer folds them) wherever Python decides what the index holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import chain

from .base_forms import base_forms
from .inflections import inflection_stem
from .segments import STOP, WEAK, WORD, WORD_MARKS, query_pieces, segmented
from .separators import TOKEN, cut_at_ascii_separators
from .stopwords import ENGLISH_STOPWORDS
from .value_kinds import value_kinds

MAX_TERMS = 64
# How every store cuts the text of :func:`.segments.index_text` into keyword terms: FTS5's porter stemmer over
# unicode61 folding, accents removed, the vowel signs of Indic and Southeast Asian scripts kept in their words (the
# PostgreSQL store runs SQLite's own tokenizer, so both rank alike). With the segmenter's version, in the index's
# identity: a change rebuilds the index.
FTS_TOKENIZER = f"porter unicode61 remove_diacritics 2 tokenchars {WORD_MARKS}"
TERMS_IDENTITY = f"{FTS_TOKENIZER}; segments 23"

_LETTERS = re.compile(r"[^\W\d_]+")  # a word as a text writes it, any script: its letters
_MARKED_TOKEN = re.compile(f"(?:[^\\W_]|[{WORD_MARKS}])+")  # ... with the marks the tokenizer takes as tokenchars
_WORD_MARK = re.compile(f"[{WORD_MARKS}]")
_SUFFIXES = ("ing", "ies", "ed", "es", "s")
_FOLDED_BELOW = "\u0530"  # accents fold on Latin, Greek and Cyrillic letters, as remove_diacritics does


MAX_REPEATS = 3  # a term asked more often than this weighs no more
MAX_PHRASES = 8  # joined words searched as phrases per query, at most

# Letters and digits joined by - . / : @ (and _) with no space: an identifier, a path, a host, a version, a
# number with its thousands ("pg-prod-01", "libs/auth/jwt.py", "v2.3.1", "IL-6", "5,000"). ASCII only: other
# scripts' compounds are :mod:`..search.compounds`' job.
_JOINED = re.compile(r"(?<!\w)[A-Za-z0-9]+(?:(?:[-./:@_]|(?<=[0-9]),(?=[0-9]))[A-Za-z0-9]+)+(?!\w)")
# What makes a joined run a name rather than a hyphenated word: a digit, or a joiner other than the hyphen. The
# parts of "pro-inflammatory" or "long-term" are words on their own; searched as a phrase beside them too, such
# a word outweighed the rest of the query (SciFact claims, titles only: nDCG@10 0.480 -> 0.470).
_NAME_MARK = re.compile(r"[0-9./:@]")


def query_terms(text: str) -> list[str]:
    """The distinct search terms of ``text``, lower-cased, without stop words (a query of stop words only,
    ``the a of``, has none: :func:`only_stop_words` tells it from one with no words at all)."""
    return list(term_repeats(text))


def term_repeats(text: str) -> dict[str, int]:
    """:func:`query_terms`, each with how often the query asks for it (at most :data:`MAX_REPEATS`): BM25's
    query term frequency. A long question names what it is about more than once ("retrieval" three times
    in a CISI query), and ranking by it gained CISI nDCG@10 0.334 -> 0.385 on plain FTS5 (titles only:
    0.230 -> 0.261), at most 0.002 either way on the other sets."""
    seen: dict[str, tuple[int, int]] = {}  # term -> (weight, times asked)
    for term, weight in query_pieces(text):
        best, times = seen.get(term, (STOP, 0))
        seen[term] = (min(weight, best), min(times + 1, MAX_REPEATS))
        if len(seen) >= MAX_TERMS * 2:
            break
    for wanted in (WORD, WEAK):
        if terms := {term: times for term, (weight, times) in seen.items() if weight == wanted}:
            return dict(list(terms.items())[:MAX_TERMS])
    return {}


def joined_phrases(text: str) -> list[str]:
    """The names the query joins without a space ("maple-zephyr-150", "jwt.py"), each as the phrase of the tokens
    the index holds for it: searched beside its words, it ranks the note that writes them together above one
    that holds them apart. Only runs with a word to search for (not "and/or", "e.g."); not a hyphenated word,
    nor snake_case alone (one term already)."""
    phrases: list[str] = []
    for match in _JOINED.finditer(unicodedata.normalize("NFKC", text)):
        run = match.group(0)
        if _NAME_MARK.search(run) is None or not any(w == WORD and len(piece) > 1 for piece, w in query_pieces(run)):
            continue
        if (phrase := " ".join(_tokens(segmented(run).lower()))) not in phrases:
            phrases.append(phrase)
    return phrases[:MAX_PHRASES]


def written_words(text: str) -> list[str]:
    """The words ``text`` writes, lower-cased, in order: its runs of letters, any script (no digits)."""
    return _LETTERS.findall(text.lower())


def only_stop_words(text: str) -> list[str]:
    """The first few words of a query made of stop words only (empty when it has another word, or none)."""
    pieces = dict(query_pieces(text))
    return [] if any(weight != STOP for weight in pieces.values()) else list(pieces)[:5]


def stem(term: str) -> str:
    """A crude English stem, enough to match 'backups' with 'backup' when counting coverage. A final "y" and
    the "i" of "ies" are both written "i", as porter writes them: "allergies", "allergy" -> "allergi". Never an
    English function word that the term is not: "notes" and "noted" were "not", "themes" was "them" (each keeps
    its word, less a plural's "s")."""
    cut = term
    for suffix in _SUFFIXES:
        if cut.endswith(suffix) and len(cut) - len(suffix) >= 3:
            cut = cut[: -len(suffix)] + ("i" if suffix == "ies" else "")
            break
    if cut != term and cut in ENGLISH_STOPWORDS:
        cut = term.removesuffix("s")
    return cut[:-1] + "i" if len(cut) > 3 and cut.endswith("y") else cut


KEYS_KEPT = 65_536  # tokens whose keys a key table remembers (then it starts again)


class _KeyTable:
    """A key function of lower-case tokens that remembers each token's key. A search takes the keys of some
    5,000 tokens of its candidates; read from a dict in one ``map`` they cost 42 µs a chunk against 57 µs
    through ``lru_cache`` (docs/benchmarks.md). Emptied at :data:`KEYS_KEPT` tokens: a memory's words are
    bounded, a stream of new text is not."""

    def __init__(self, compute: Callable[[str], str]) -> None:
        self._compute = compute
        self._keys: dict[str, str] = {}

    def __call__(self, token: str) -> str:
        key = self._keys.get(token)
        if key is None:
            if len(self._keys) >= KEYS_KEPT:
                self._keys.clear()
            key = self._keys[token] = self._compute(token)
        return key

    def of(self, tokens: Sequence[str]) -> list[str]:
        """The key of each of ``tokens``, in order."""
        try:
            return list(map(self._keys.__getitem__, tokens))
        except KeyError:  # a token not met yet
            return list(map(self, tokens))


def _match_key(token: str) -> str:
    return stem(fold_accents(token))


def _index_key(token: str) -> str:
    return inflection_stem(fold_accents(token))


match_key = _KeyTable(_match_key)  # a token as coverage and snippets compare it: accents folded, crudely stemmed
index_key = _KeyTable(_index_key)  # a token as the index matches it: accents folded, inflection removed (.inflections)


def phrase_count(text: str, phrase: Sequence[str], key: _KeyTable = match_key) -> int:
    """How often ``text`` writes the tokens of ``phrase`` one after another on a line, compared by match keys
    (or by ``key``), as FTS5 counts a phrase: coverage and BM25 computed here credit only the notes that write
    a name's words together."""
    wanted = key.of(phrase)
    size = len(wanted)
    found = 0
    for line in text.split("\n"):
        keys = key.of(_line_tokens(line))
        found += sum(1 for at in range(len(keys) - size + 1) if keys[at : at + size] == wanted)
    return found


def fold_accents(token: str) -> str:
    """``token`` (or any text) with its accents removed, as remove_diacritics does (Latin, Greek and Cyrillic letters)."""
    if token.isascii():
        return token
    kept: list[str] = []
    for char in unicodedata.normalize("NFD", token):
        if not (unicodedata.combining(char) and kept and kept[-1] < _FOLDED_BELOW):
            kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


def term_keys(term: str) -> frozenset[str]:
    """The match keys of a query term: a text holds the term when it holds all of them."""
    return frozenset(map(match_key, _tokens(term)))


def term_index_keys(term: str) -> frozenset[str]:
    """The index keys of a query term: the index holds the term in a text whose :func:`index_stems` hold them all."""
    return frozenset(map(index_key, _tokens(term)))


@lru_cache(maxsize=256)  # a query scores each candidate's text more than once (score, share, snippet)
def stems(text: str) -> frozenset[str]:
    """The match keys of the terms ``text`` is indexed by (a query term matches a text holding all of its keys)."""
    return frozenset(_keys(text))


@lru_cache(maxsize=256)
def index_stems(text: str) -> frozenset[str]:
    """The index keys of the terms ``text`` is indexed by: what the index holds, to Python."""
    return frozenset(_keys(text, index_key))


@lru_cache(maxsize=256)
def key_counts(text: str) -> Counter[str]:
    """How often ``text`` holds each index key (their sum: its length in terms), for BM25 scored in Python as
    FTS5 scores it. Apart from :func:`index_stems`: counting costs more, and only queries with terms that
    memdex scores itself (common ones, CJK grams: :func:`..search.scoring.bm25_share`) need it."""
    return Counter(_keys(text, index_key))


def _keys(text: str, key: _KeyTable = match_key) -> list[str]:
    """The key of each term ``text`` is indexed by, in order."""
    return key.of(_indexed_tokens(text))


@lru_cache(maxsize=1024)  # both kinds of key are taken of the same texts: segment each once
def _indexed_tokens(text: str) -> tuple[str, ...]:
    """The tokens the index cuts ``text`` into, lower-cased, line by line: no token spans a line break, so a
    chunk's tokens are its lines' (in another order where a line adds stems after it: only sets and counts
    are taken of them), and a snippet's lines, cut from a candidate's text, are segmented once, with it."""
    if "\n" not in text:
        return _line_tokens(text)
    return tuple(chain.from_iterable(map(_line_tokens, text.split("\n"))))


@lru_cache(maxsize=8192)  # the lines of a search's candidates (24 chunks of about 20 lines), with room
def _line_tokens(line: str) -> tuple[str, ...]:
    text = segmented(line)
    tokens = _tokens(text.lower())
    added = base_forms(tokens) + value_kinds(text)  # as index_text adds them (base forms from the tokens at hand)
    return (*tokens, *added) if added else tuple(tokens)


def _tokens(text: str) -> list[str]:
    """The tokens unicode61 cuts ``text`` into: runs of letters and digits (with a mark of
    :data:`.segments.WORD_MARKS`, the slower pattern that keeps the marks in their words).

    Python's regex scans are slow, so text is cut at its ASCII separators first
    (:func:`.separators.cut_at_ascii_separators`); only a piece with another letter in it (an accent, a dash
    ``—``, a CJK run) goes through the pattern."""
    if text.isascii():
        return cut_at_ascii_separators(text)
    if _WORD_MARK.search(text) is not None:
        return _MARKED_TOKEN.findall(text)
    tokens: list[str] = []
    for piece in cut_at_ascii_separators(text):
        if piece.isascii():
            tokens.append(piece)
        else:
            tokens += TOKEN.findall(piece)
    return tokens

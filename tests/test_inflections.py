"""memory_core.text.inflections: Python holds a word in a text exactly when the index's porter stemmer matches
it by an inflection, checked against a real SQLite FTS5 table."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from memdex.memory_core.text.inflections import inflection_stem
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import FTS_TOKENIZER, index_stems, query_terms, term_index_keys


@pytest.fixture
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize={FTS_TOKENIZER!r})")
    yield conn
    conn.close()


def index_finds(conn: sqlite3.Connection, word: str, text: str) -> bool:
    """Whether the index, holding only ``text``, finds it for ``word``."""
    conn.execute("DELETE FROM t")
    conn.execute("INSERT INTO t(text) VALUES (?)", (index_text(text),))
    return conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (f'"{word}"',)).fetchone()[0] == 1


def python_holds(word: str, text: str) -> bool:
    """Whether abstention and BM25 scored in Python take ``text`` to hold ``word``."""
    (term,) = query_terms(word)
    return term_index_keys(term) <= index_stems(text)


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("database", "We moved all databases to the new cluster."),
        ("databases", "One database is left."),
        ("invoice", "Sarah archived the old invoices."),
        ("decide", "Sarah decided on Monday."),
        ("deciding", "We decide today."),
        ("study", "Two studies agree."),
        ("studied", "The study was short."),
        ("planned", "The plan holds."),
        ("planning", "It was planned."),
        ("hoping", "We hope so."),
        ("receive", "We received the keys."),
        ("running", "She runs daily."),
        ("agreed", "They agree."),
        ("classes", "One class a week."),
        ("sauvegarde", "Les sauvegardes sont faites."),  # porter folds any Latin word's plural
        ("café", "Two cafes nearby."),  # accents fold first
    ],
)
def test_an_inflected_form_is_held_where_the_index_finds_it(fts: sqlite3.Connection, word: str, text: str) -> None:
    assert index_finds(fts, word, text)  # the premise: FTS5's porter stemmer matches the form
    assert python_holds(word, text)


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("dinner", "Sarah dined on Monday."),  # another word, not a form
        ("note", "It is not done."),  # the e of a short syllable stays
        ("hoping", "Hopping on one leg."),  # hope, hop
        ("bus", "It buses in."),
    ],
)
def test_a_word_that_is_not_a_form_is_not_held(fts: sqlite3.Connection, word: str, text: str) -> None:
    assert not index_finds(fts, word, text) and not python_holds(word, text)


def test_derived_words_stay_apart_though_porter_merges_them(fts: sqlite3.Connection) -> None:
    """Porter's later steps merge "informal" with "information"; abstention does not take one for the other."""
    assert index_finds(fts, "informal", "Information retrieval.")
    assert not python_holds("informal", "Information retrieval.")


def test_words_with_digits_or_other_letters_and_short_words_are_kept_whole() -> None:
    assert [inflection_stem(word) for word in ("h2s", "naïves", "встречи", "is", "us", "ss")] == [
        "h2s", "naïves", "встречи", "is", "us", "ss"
    ]  # fmt: skip

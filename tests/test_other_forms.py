"""A query word the index found only by porter's stem ("migration" of notes that say "Migrated") answers
nothing, as abstention goes by inflections; the warning names the word the notes write in its place."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.other_forms import forms_text, other_forms
from memdex.memory_core.text.inflections import porter_stem

MakeEngine = Callable[..., MemoryEngine]
KEYWORD = {"provider": "none"}
ROOT = Path(__file__).resolve().parents[1]


# a word for each of porter's rules, and the words where its versions differ ("assembly", "morphology", "eed")
RULES = {
    "relational", "conditional", "valenci", "hesitanci", "digitizer", "morphology", "assembly", "radically",
    "differently", "vileli", "analogously", "vietnamization", "predication", "operator", "feudalism",
    "decisiveness", "hopefulness", "callousness", "formality", "sensitivity", "sensibility", "triplicate",
    "formative", "formalize", "electricity", "electrical", "hopeful", "goodness", "revival", "allowance",
    "inference", "airliner", "gyroscopic", "adjustable", "defensible", "irritant", "replacement", "adjustment",
    "dependent", "adoption", "communion", "homologou", "communism", "activate", "angulariti", "homologous",
    "effective", "bowdlerize", "controll", "roll", "eed", "feed", "agreed", "caresses", "ponies", "ies", "sses", "cats",
}  # fmt: skip


def test_porter_stem_is_the_index_s_own_on_every_word_of_the_docs() -> None:
    """The hint is only right where the stem agrees with FTS5's porter tokenizer: checked on the thousands of
    English words the project's own docs write, and a word for each rule."""
    docs = [ROOT / "README.md", *ROOT.glob("docs/*.md")]
    words = sorted({word for path in docs for word in re.findall(r"\b[a-z]+\b", path.read_text().lower())} | RULES)
    assert len(words) > 2000
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='porter ascii')")
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", enumerate(words, start=1))
    fts5 = dict(conn.execute("SELECT doc, term FROM v").fetchall())
    conn.close()
    differ = [(word, fts5[i], porter_stem(word)) for i, word in enumerate(words, start=1) if fts5[i] != porter_stem(word)]
    assert differ == []


def test_the_form_the_found_notes_write_most_is_named() -> None:
    texts = ["Migrated the staging DB.", "The migrated tables were checked.", "A migrating flock."]
    assert other_forms(["migration"], texts) == {"migration": "migrated"}
    assert other_forms(["informal"], ["Information retrieval."]) == {"informal": "information"}


def test_a_word_the_notes_hold_as_the_index_holds_it_gets_nothing() -> None:
    assert other_forms(["migrated"], ["We migrated it."]) == {}  # the word itself
    assert other_forms(["databases"], ["One database is left."]) == {}  # an inflection: abstention takes it
    assert other_forms(["migration"], ["Moved the staging DB."]) == {}  # no word with its stem
    assert other_forms(["réunion", "h2o", "db"], ["réunions h2o db"]) == {}  # not porter's: accents, digits, short


def test_forms_text_names_each_word_and_the_notes_word() -> None:
    text = forms_text({"migration": "migrated"})
    assert '"migration" (the notes say "migrated")' in text and "search again" in text


@pytest.mark.both_stores
async def test_a_word_found_by_its_stem_alone_says_what_the_notes_write(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    write("memory/2026-03-07.md", "# 2026-03-07\n\n- Migrated the staging DB to PostgreSQL 17.\n")
    write("memory/2026-03-08.md", "# 2026-03-08\n\n- Caroline painted a sunrise over the lake.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        derived = await engine.search("migration")
        assert derived.results == []
        assert (derived.warning or "").startswith("nothing in memory matches this query; no note holds")
        assert '"migration" (the notes say "migrated")' in (derived.warning or "")
        again = await engine.search("migrated")  # the hint's word answers
        assert [hit.path for hit in again.results] == ["memory/2026-03-07.md"]
        assert "the notes say" not in (again.warning or "")
        other = await engine.search("quantum chromodynamics lattice")  # nothing found: no hint
        assert other.results == [] and "the notes say" not in (other.warning or "")


def test_a_query_that_lacks_other_words_too_gets_no_form() -> None:
    """A query on another topic: its own words are missing, and a form of one of them leads nowhere."""
    texts = ["Caroline took responsibility for the charity run."]
    assert other_forms(["depletion", "nitric", "responsible"], texts) == {}
    assert other_forms(["caroline", "responsible"], texts) == {"responsible": "responsibility"}


def test_two_query_words_of_one_stem_both_get_the_notes_word() -> None:
    assert other_forms(["migration", "migrations"], ["Migrated it."]) == {"migration": "migrated", "migrations": "migrated"}

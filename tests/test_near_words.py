"""A query word no note holds gets a hint: the word one edit away the notes hold, as they write it. Whether
memory answers stays what the query's own words decide (abstention is untouched); an answer is ranked with
the hint in the word's place."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.near_words import MAX_WORDS, correctable, hint_text, near_words, one_edit
from memdex.memory_core.text.terms import fold_accents

MakeEngine = Callable[..., MemoryEngine]
KEYWORD = {"provider": "none"}


def test_one_edit_holds_each_kind_of_typo_and_no_repeats() -> None:
    edits = one_edit("hikking")
    assert {"hiking", "hikkign", "hikxing", "hikkings"} <= set(edits)  # deletion, transposition, replacement, insertion
    assert len(edits) == len(set(edits)) and "hikking" not in edits


def test_only_latin_greek_and_cyrillic_words_of_six_letters_or_more_are_looked_up() -> None:
    assert correctable("destrss") and correctable("hiking")
    assert correctable("schlüsel") and correctable("réunoin") and correctable("straße") and correctable("mountainé")
    assert correctable("квартр") and correctable("καλημέρα")
    assert not correctable("hikes") and not correctable("rmoe") and not correctable("ab12cd") and not correctable("ключ")
    assert not correctable("東京タワーです") and not correctable("keyключ")  # another script, or two


def test_a_word_with_accents_gets_the_hint_the_notes_write_with_theirs() -> None:
    # the index folds accents: a count holds "schlussel" wherever the notes say "Schlüssel"
    count, texts, looked_up = _store({"schlussel": 2}, ["Der Schlüssel liegt unter der Matte.", "Schlüssel weg"])
    assert near_words(["schlüsel"], count, texts) == {"schlüsel": "schlüssel"}
    assert "schlussel" in looked_up and all(word.isascii() for word in looked_up)
    # a letter beyond the alphabet is edited as one of the word's own: "ß" moved back into place
    count, texts, looked_up = _store({"straße": 1}, ["die Straße"])
    assert near_words(["strasse"], count, texts) == {} and near_words(["strßae"], count, texts) == {"strßae": "straße"}


def test_a_greek_or_cyrillic_stem_gets_the_word_whose_stem_is_one_edit_away() -> None:
    # query terms of these scripts are stems: "квартр" of the misspelt "квартры", "квартир" of "квартиры"
    stems = {"квартиры": "квартир", "коврик": "коврик", "κλειδιά": "κλειδ"}
    count, texts, looked_up = _store({"квартир": 2, "κλειδ": 1}, ["Ключи от квартиры под ковриком.", "Τα κλειδιά εδώ."])
    term_of = lambda word: [stems[word]] if word in stems else []  # noqa: E731
    assert near_words(["квартр"], count, texts, term_of) == {"квартр": "квартиры"}
    assert all(set(word) <= set("абвгдежзиклмнопрстуфхцчшщъыьэюяђєѕіјљњћџґ") for word in looked_up)
    assert near_words(["κλειδο"], count, texts, term_of) == {"κλειδο": "κλειδιά"}  # "κλειδ" + a letter


def _store(words: Mapping[str, int], texts: Sequence[str]) -> tuple[Callable[..., dict[str, int]], Callable[[str], list[str]], list[str]]:
    """A stand-in store: chunk counts by a stem-like key (the first 5 letters), the texts that hold a word,
    and every word counted."""
    looked_up: list[str] = []

    def count(candidates: Sequence[str]) -> dict[str, int]:
        looked_up.extend(candidates)
        return {word: sum(n for known, n in words.items() if known[:5] == word[:5]) for word in candidates}

    return count, lambda word: [text for text in texts if word[:5] in fold_accents(text.lower())], looked_up


def test_the_hint_is_the_best_held_neighbour_as_the_notes_write_it() -> None:
    count, texts, _ = _store({"melanie": 4, "melody": 1}, ["Melanie went hiking.", "Melanie paints."])
    # "melani" and "melanie" count the same notes (one stem); the notes write "Melanie"
    assert near_words(["melane"], count, texts) == {"melane": "melanie"}


def test_no_hint_without_a_held_neighbour_or_for_words_it_does_not_take() -> None:
    count, texts, looked_up = _store({"garden": 3, "dancer": 2}, ["the garden", "the dancer"])
    assert near_words(["zebras", "rmoe"], count, texts) == {}
    assert not any(word.startswith(("rmo", "moe")) for word in looked_up)  # "rmoe" is too short
    assert near_words(["cancer"], count, texts) == {}  # "dancer" differs in the first letter: another word
    assert near_words(["gardne"], count, texts) == {"gardne": "garden"}


def test_no_hint_is_another_of_english_commonest_words() -> None:
    count, texts, _ = _store({"filed": 3, "centre": 2}, ["Filed ATL-212.", "the data centre"])
    assert near_words(["filled"], count, texts) == {}  # two words, not a typo of one
    assert near_words(["center"], count, texts) == {"center": "centre"}  # one word spelt two ways
    assert near_words(["fileed"], count, texts) == {"fileed": "filed"}  # a typo still gets its word
    count, texts, _ = _store({"photography": 2}, ["I love photography."])
    assert near_words(["photograph"], count, texts) == {"photograph": "photography"}  # a word and its kin


def test_at_most_a_few_words_are_looked_up_in_one_count() -> None:
    count, texts, looked_up = _store({}, [])
    words = [f"word{c}abc" for c in "abcdefgh"]
    assert near_words(words, count, texts) == {}
    assert set(looked_up) == {edit for word in words[:MAX_WORDS] for edit in one_edit(word) if edit[0] == "w"}


def test_hint_text_names_each_word_and_its_hint() -> None:
    text = hint_text({"destrss": "destress", "hikking": "hiking"})
    assert '"destrss" (did you mean "destress"?)' in text and '"hikking" (did you mean "hiking"?)' in text


@pytest.mark.both_stores
async def test_a_misspelt_search_says_which_word_found_nothing_and_what_the_notes_hold(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    write("memory/2026-03-07.md", "# 2026-03-07\n\n- Melanie goes hiking in the mountains to destress.\n")
    write("memory/2026-03-08.md", "# 2026-03-08\n\n- Caroline painted a sunrise over the lake, then went marching.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        typo = await engine.search("What does Melanie do to destrss?")
        assert '"destrss" (did you mean "destress"?)' in (typo.warning or "")
        fixed = await engine.search("What does Melanie do to destress?")
        assert [hit.path for hit in fixed.results][:1] == ["memory/2026-03-07.md"]
        assert "did you mean" not in (fixed.warning or "")
        other = await engine.search("quantum chromodynamics lattice")
        assert other.results == [] and "did you mean" not in (other.warning or "")
        assert "nothing in memory matches" in (other.warning or "")
        # a word English does not write is a typo of its hint, which answers for it
        near = await engine.search("mountians")
        assert [hit.path for hit in near.results] == ["memory/2026-03-07.md"]
        assert '"mountians" (did you mean "mountains"?)' in (near.warning or "")
        # an English word no note holds is as often another topic's: its hint answers nothing
        english = await engine.search("matching")
        assert english.results == [] and '"matching" (did you mean "marching"?)' in (english.warning or "")
        # two warnings read as two clauses, not one run-on sentence
        assert (english.warning or "").startswith("nothing in memory matches this query; no note holds")
        # "filled" and "filed" are two English words: no hint, and nothing ranked as "filed"
        write("memory/2026-03-09.md", "# 2026-03-09\n\n- Filed a ticket about the lake house booking.\n")
        await engine.sync()
        filled = await engine.search("Caroline filled the lake")
        assert "did you mean" not in (filled.warning or "")
        assert [hit.path for hit in filled.results][:1] == ["memory/2026-03-08.md"]


@pytest.mark.both_stores
async def test_a_term_longer_than_any_word_is_searched_as_written_and_not_looked_up(
    make_engine: MakeEngine, write: Callable[[str, str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query of one 2,000-letter term (a pasted key or blob) was looked up as a misspelling, a compound and
    another ending: about 100,000 strings of its length counted in the index, a cost that grows with the square
    of the term's length (at the tool's 8,000 characters: minutes and gigabytes). A word the notes hold beside
    it is still found, and the answer still says the term is held by no note, by its start."""
    write("MEMORY.md", "# Memory\n\n- The deploy token is rotated on Mondays.\n")
    blob = "q" * 2000
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        counted: list[str] = []
        term_counts = engine.index.ops.term_counts

        def counting(conn: object, words: Sequence[str]) -> Mapping[str, int]:
            counted.extend(words)
            return term_counts(conn, words)

        monkeypatch.setattr(engine.index.ops, "term_counts", counting)  # the store's module: put back after the test
        alone = await engine.search(blob)
        beside = await engine.search(f"rotated {blob}")
    assert len(counted) < 20 and all(len(word) <= 2001 for word in counted)
    assert alone.results == [] and "nothing in memory matches" in (alone.warning or "")
    assert [hit.path for hit in beside.results] == ["MEMORY.md"]
    assert beside.warning == f'no note holds "{"q" * 37}...": these results match the rest of the query'  # not 2,000 q's


async def test_an_answer_is_ranked_with_the_hint_in_place_of_the_misspelt_word(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """"destrss" found the notes that say "hiking" and "Melanie" in the order of those two words alone, and the
    note that says why she hikes came second; ranked as "destress", it is first."""
    write("memory/2026-03-07.md", "# 2026-03-07\n\n- Melanie loves hiking: Melanie went hiking twice in June.\n")
    write("memory/2026-03-08.md", "# 2026-03-08\n\n- Melanie goes hiking in the mountains to destress after work.\n")
    write("memory/2026-03-09.md", "# 2026-03-09\n\n- Caroline painted a sunrise over the lake.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        typo = await engine.search("Melanie hiking destrss")
        assert [hit.path for hit in typo.results][:2] == ["memory/2026-03-08.md", "memory/2026-03-07.md"]
        assert "destress" in typo.results[0].snippet
        assert '"destrss" (did you mean "destress"?): the results are ranked by that spelling' in (typo.warning or "")
        spelt = await engine.search("Melanie hiking destress")
        assert [hit.path for hit in spelt.results][:2] == [hit.path for hit in typo.results][:2]
        assert [round(hit.score, 6) for hit in spelt.results] == [round(hit.score, 6) for hit in typo.results]


@pytest.mark.both_stores
async def test_a_misspelt_word_with_accents_or_in_cyrillic_finds_the_note_that_writes_it_right(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    notes = {
        7: "Der Schlüssel liegt unter der Fußmatte.",
        8: "La réunion budgétaire est reportée à jeudi.",
        9: "Запасные ключи от квартиры у соседки.",
    }
    for day in range(7, 20):  # and other days' notes, so the IDFs are a memory's
        write(f"memory/2026-03-{day:02}.md", f"# 2026-03-{day:02}\n\n- {notes.get(day, f'Einkauf und Wetter, Tag {day}.')}\n")
    cases = {  # query: (its hint, the note it finds first)
        "Wo liegt der Schlüsel?": ("schlüssel", "memory/2026-03-07.md"),
        "quand est la réunoin budgétaire ?": ("réunion", "memory/2026-03-08.md"),
        "где ключи от квартры?": ("квартиры", "memory/2026-03-09.md"),
    }
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        answers = {query: await engine.search(query) for query in cases}
    for query, (hint, path) in cases.items():
        assert f'(did you mean "{hint}"?)' in (answers[query].warning or ""), (query, answers[query].warning)
        assert [hit.path for hit in answers[query].results][:1] == [path], query

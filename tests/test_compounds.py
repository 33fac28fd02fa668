"""A compound written one way in the query and the other in the notes: "Datenbankmigration" asked of notes
that say "Datenbank-Migration", "Haus Tür" of notes that say "Haustür", "healthcare" of "health care"."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.compounds import (
    MAX_CUT,
    MAX_HEADS,
    MAX_WORDS,
    MIN_PART,
    compound_heads,
    compound_tails,
    joined_words,
    missing_pairs,
    query_pairs,
    split_words,
    splittable,
)
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite import ops as sqlite_ops

MakeEngine = Callable[..., MemoryEngine]
KEYWORD = {"provider": "none"}
STOP = {"the", "der", "die"}


def _count(held: Mapping[str, int], asked: list[list[str]] | None = None) -> Callable[[Sequence[str]], dict[str, int]]:
    def count(words: Sequence[str]) -> dict[str, int]:
        if asked is not None:
            asked.append(list(words))
        return {word: held.get(word, 0) for word in words}

    return count


def _is_term(word: str) -> bool:
    return word not in STOP


def _texts(written: Mapping[str, str]) -> Callable[[str], list[str]]:
    return lambda phrase: [written[phrase]] if phrase in written else []


def test_a_word_is_cut_where_the_notes_write_its_two_parts_side_by_side() -> None:
    count = _count({"datenbank migration": 2, "daten bankmigration": 0, "health care": 5, "heal thcare": 0})
    texts = _texts({"datenbank migration": "Die Datenbank-Migrationen laufen.", "health care": "a new Health Care plan"})
    assert split_words(["datenbankmigration", "healthcare"], count, texts, _is_term) == {
        "datenbankmigration": "datenbank migration",
        "healthcare": "health care",
    }
    assert split_words(["zebras"], count, texts, _is_term) == {}  # no cut the notes hold


def test_a_cut_counts_only_where_a_note_writes_the_two_parts_as_a_compound() -> None:
    """The stores match stems and skip punctuation: "associ aed" is held by "associated AED"."""
    count = _count({"associ aed": 1, "haus tür": 2, "haust ür": 0, "book shelf": 3, "perform ane": 1})
    texts = _texts({
        "associ aed": "is associated AED use",
        "haus tür": "Die HAUS-TÜR klemmt",
        "book shelf": "I read a book. Shelf life is short.",  # a sentence ends between them
        "perform ane": "to perform anesthesia",  # the second part is another word's start
    })
    words = ["associaed", "haustür", "bookshelf", "performane"]
    assert split_words(words, count, texts, _is_term) == {"haustür": "haus tür"}


def test_of_the_cuts_the_notes_write_the_one_the_most_chunks_hold_wins() -> None:
    count = _count({"kinder garten": 1, "kind ergarten": 0, "kinde rgarten": 3, "kin dergarten": 5})
    texts = _texts({"kinder garten": "Kinder-Garten", "kinde rgarten": "Kinde Rgarten", "kin dergarten": "kind ergarten"})
    assert split_words(["kindergarten"], count, texts, _is_term) == {"kindergarten": "kinde rgarten"}


def test_a_part_that_is_a_stop_word_is_never_cut_off() -> None:
    count = _count({"the rapist": 4, "die bstahl": 1})
    texts = _texts({"the rapist": "the rapist", "die bstahl": "die bstahl"})
    assert split_words(["therapist", "diebstahl"], count, texts, _is_term) == {}


def test_only_words_of_letters_long_enough_for_two_parts_are_cut_and_at_most_a_few() -> None:
    assert splittable("haustür") and splittable("update")
    assert splittable("schlüsseldienst") and splittable("базаданных")
    assert not splittable("haus") and not splittable("covid19") and not splittable("e-mail")
    assert not splittable("데이터베이스를") and not splittable("ฐานข้อมูล")  # scripts cut into terms otherwise
    asked: list[list[str]] = []
    words = [f"{letter}aaaaaa" for letter in "bcdefgh"]
    split_words(words, _count({}, asked), _texts({}), _is_term)
    assert {phrase.replace(" ", "") for phrase in asked[0]} == set(words[:MAX_WORDS])


def test_two_words_side_by_side_are_joined_when_the_notes_write_them_as_one_and_one_is_missing() -> None:
    count = _count({"haustür": 3, "database": 7})
    pairs = [("haus", "tür"), ("data", "base"), ("tür", "data")]
    assert joined_words(pairs, ["haus", "tür"], count, _is_term) == {("haus", "tür"): "haustür"}
    # "data" and "base" are both held: the query's words are the notes' words already
    assert joined_words(pairs, [], count, _is_term) == {}
    assert joined_words([("데이터", "베이스")], ["데이터"], _count({"데이터베이스": 1}), _is_term) == {}
    assert joined_words([("th", "ere")], ["th", "ere"], _count({"there": 99}), lambda word: word != "there") == {}  # a stop word
    assert joined_words([("u", "s"), ("e", "mail")], ["u", "s", "e"], _count({"us": 9, "email": 2}), _is_term) == {("e", "mail"): "email"}
    # German joins some parts with an "s": "Rechnung Export" of "Rechnungsexport"; without it first, where both are
    linked = _count({"rechnungsexport": 1, "geburtstagsfeier": 2, "geburtstagfeier": 1})
    pairs = [("rechnung", "export"), ("geburtstag", "feier")]
    assert joined_words(pairs, ["rechnung", "export", "feier"], linked, _is_term) == {
        ("rechnung", "export"): "rechnungsexport", ("geburtstag", "feier"): "geburtstagfeier"
    }


def test_two_words_no_note_holds_are_paired_in_either_order_wherever_the_query_writes_them() -> None:
    """"Wann ist der Termin beim Zahnarzt?" found nothing in notes that say "Zahnarzttermin": the query names the
    compound's parts the other way round, with a word between."""
    pairs = missing_pairs(["termin", "zahnarzt"])
    assert pairs == [("termin", "zahnarzt"), ("zahnarzt", "termin")]
    found = joined_words(pairs, ["termin", "zahnarzt"], _count({"zahnarzttermin": 1}), _is_term)
    assert found == {("zahnarzt", "termin"): "zahnarzttermin"}
    assert missing_pairs(["termin"]) == [] and missing_pairs(["데이터", "베이스"]) == []
    assert len(missing_pairs([f"{letter}aaaa" for letter in "bcdefg"])) == MAX_WORDS * (MAX_WORDS - 1)


def test_the_pairs_of_a_query_are_its_terms_written_apart_or_with_a_hyphen() -> None:
    assert query_pairs("Wann war die Datenbank-Migration?") == [("datenbank", "migration")]
    assert query_pairs("the health care of the data base") == [("health", "care"), ("data", "base")]
    assert query_pairs("HAUS TÜR") == [("haus", "tür")]
    assert query_pairs("the") == [] and query_pairs("care care") == []
    # punctuation parts them: no pair
    assert query_pairs("a service center (e.g. SDC)") == [("service", "center")]
    assert query_pairs("the U.S. trip") == []


FILLER = "".join(f"- Notiz {n}: Einkauf, Wetter, Termine und Sonstiges aus der Woche {n}.\n" for n in range(1, 13))
NOTES = f"""# Notizen

{FILLER}- 2026-09-14: Datenbank-Migration auf PostgreSQL 17 für die Abrechnung beschlossen.
{FILLER}- Die Haustür klemmt, der Schlüsseldienst kommt am Montag.
{FILLER}"""  # a note longer than a snippet: the snippet is the lines that hold the compound


def _write_memory(write: Callable[[str, str], Path], daily: str) -> None:
    """MEMORY.md (:data:`NOTES`), a daily log of the lines ``daily``, and twelve other logs, so that the IDFs
    are a memory's and not one file's."""
    write("MEMORY.md", NOTES)
    write("memory/2026-03-07.md", f"# 2026-03-07\n\n{daily}")
    for day in range(8, 20):
        write(f"memory/2026-03-{day:02}.md", f"# 2026-03-{day:02}\n\n- Walked the dog, day {day}, and read the news.\n")


@pytest.mark.both_stores
async def test_a_compound_is_found_however_the_query_writes_it(make_engine: MakeEngine, write: Callable[[str, str], Path]) -> None:
    _write_memory(write, "- We moved to a new health care provider in March.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        for query, path, line in [
            ("Datenbankmigration", "MEMORY.md", "Datenbank-Migration"),
            ("Wann haben wir die Datenbankmigration beschlossen?", "MEMORY.md", "Datenbank-Migration"),
            ("Haus Tür", "MEMORY.md", "Haustür"),
            ("healthcare provider", "memory/2026-03-07.md", "health care"),
            ("Wer repariert die Tür vom Haus?", "MEMORY.md", "Haustür"),  # the parts the other way round, apart
        ]:
            answer = await engine.search(query, max_chars=300)
            assert [hit.path for hit in answer.results][:1] == [path], (query, answer.warning)
            assert line in answer.results[0].snippet, query  # the snippet shows the line the compound is on
            assert "did you mean" not in (answer.warning or "")
        # a word the notes hold neither whole nor in two parts side by side is still not found
        other = await engine.search("Steuererklärung")
        assert other.results == [] and "nothing in memory matches" in (other.warning or "")


def _starting(terms: Mapping[str, int], asked: list[str] | None = None) -> Callable[[str], dict[str, int]]:
    def starting(prefix: str) -> dict[str, int]:
        if asked is not None:
            asked.append(prefix)
        found = {term: n for term, n in terms.items() if term.startswith(prefix) and term != prefix}
        return dict(sorted(found.items(), key=lambda item: (-item[1], item[0])))

    return starting


def test_a_word_is_searched_as_the_notes_longer_words_that_begin_with_it() -> None:
    index = {"schlusseldienst": 3, "schlusselbund": 2, "schlusselfertig": 1, "schlusselbrett": 1, "autobahn": 1}
    words = {"dienst": 1, "bund": 4, "fertig": 2, "brett": 1, "bahn": 3}
    asked: list[str] = []
    heads = compound_heads(["schlüssel", "auto"], _starting(index, asked), _count(index | words), _is_term)
    assert heads == {"schlüssel": ("schlusseldienst", "schlusselbund", "schlusselbrett"), "auto": ("autobahn",)}
    assert asked == ["schlussel", "auto"]  # the index's terms are folded: the word is looked up folded
    assert len(heads["schlüssel"]) == MAX_HEADS


def test_a_longer_word_counts_only_when_its_rest_is_a_word_the_notes_hold() -> None:
    index = {"cardiac": 4, "cardboard": 1, "teacher": 2, "portion": 3, "notebook": 1, "hausarzt": 1, "haustur": 5}
    words = {"board": 2, "book": 1, "ion": 7, "tur": 3, "arzt": 1, "these": 9}  # no "iac" nor "er"
    count = _count(index | words)
    # "cardiac": "iac" is no word; "teacher": porter keeps "-er"; "portion": "ion" is shorter than MIN_REST
    assert compound_heads(["card", "teach", "port"], _starting(index), count, _is_term) == {"card": ("cardboard",)}
    assert compound_heads(["note", "haus"], _starting(index), count, _is_term) == {"note": ("notebook",), "haus": ("hausarzt",)}
    # a longer term the search then counts in no chunk (a stem FTS5 cuts again otherwise) is dropped
    assert compound_heads(["note"], _starting(index), _count(words), _is_term) == {}
    # nor is a rest that is a stop word a word ("book" + "these")
    assert compound_heads(["book"], _starting({"bookthese": 1}), _count({"bookthese": 1, "these": 9}), lambda w: w != "these") == {}


def test_a_longer_word_s_rest_may_follow_a_link_or_be_cut_by_porter_where_the_word_alone_is_not() -> None:
    """ "Datenbank" of "Datenbankmigration" (held "datenbankmigr"; "Migration" alone is held "migrat"), "Rechnung"
    of "Rechnungsexport", "Lieferanten" of "Lieferantenportal" ("lieferantenport"; "portal")."""
    index = {"datenbankmigr": 2, "rechnungsexport": 1, "lieferantenport": 1, "datenbanksmig": 1}
    words = {"migrat": 3, "export": 1, "portal": 2, "mig": 5}
    count = _count(index | words)
    # a word held as porter cut it is searched as a note writes it: memdex's own keys keep "-al" and "-ation"
    texts = _texts({"datenbankmigr": "Die DATENBANKMIGRATION läuft.", "lieferantenport": "Das Lieferantenportal: offline"})
    found = compound_heads(["datenbank", "rechnung", "lieferanten"], _starting(index), count, _is_term, texts)
    assert found == {
        "datenbank": ("datenbankmigration",), "rechnung": ("rechnungsexport",), "lieferanten": ("lieferantenportal",)
    }
    # one that no chunk writes (a stale count) is left out
    assert compound_heads(["datenbank"], _starting(index), count, _is_term) == {}
    # the rest as porter cuts it is looked up only when the notes hold it in no form as written
    assert compound_heads(["datenbank"], _starting(index), _count({"datenbankmigr": 2, "migr": 1}), _is_term) == {
        "datenbank": ("datenbankmigr",)
    }
    # a rest held in no form is no word: "migr" with "migrat" unheld, "smig" whose "mig" is shorter than MIN_REST
    assert compound_heads(["datenbank"], _starting(index), _count(index | {"mig": 5}), _is_term, texts) == {}


def test_only_words_of_letters_long_enough_are_looked_up_and_at_most_a_few() -> None:
    asked: list[str] = []
    index = {"carport": 1, "ifit1x": 1}
    compound_heads(["car", "ifit1", "gebäude", "a1b2"], _starting(index, asked), _count(index), _is_term)
    assert asked == ["gebaude"]
    asked.clear()
    compound_heads([f"wort{n:c}" for n in range(97, 97 + MAX_WORDS + 2)], _starting({}, asked), _count({}), _is_term)
    assert len(asked) == MAX_WORDS


@pytest.mark.both_stores
async def test_a_word_the_notes_hold_only_as_a_compounds_first_part_is_found(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    _write_memory(
        write,
        "- Watched the fireworks by the lake.\n- Work was busy, and I met a teacher.\n- Der Dienst am Wochenende ist geregelt.\n"
        "- Schätzung für den Rechnungsexport geschickt; der Export läuft nachts.\n"
        "- Das Lieferantenportal ist offline, das Portal der Bank nicht.\n",
    )
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        for query, path, line in [
            ("Schlüssel", "MEMORY.md", "Schlüsseldienst"),
            ("Wann kommt der Schlüssel?", "MEMORY.md", "Schlüsseldienst"),
            ("Datenbank", "MEMORY.md", "Datenbank-Migration"),  # written apart: the word itself
            ("fire", "memory/2026-03-07.md", "fireworks"),
            ("Rechnung Export", "memory/2026-03-07.md", "Rechnungsexport"),  # with a linking "s"
            ("Lieferanten", "memory/2026-03-07.md", "Lieferantenportal"),  # held "lieferantenport"; "Portal": "portal"
        ]:
            answer = await engine.search(query, max_chars=300)
            assert [hit.path for hit in answer.results][:1] == [path], (query, answer.warning)
            assert line in answer.results[0].snippet, query
        # the rest of a longer word must be a word the notes hold: an ending ("teacher") or a cut word is not
        for query in ("teach", "Schlüss"):
            other = await engine.search(query)
            assert other.results == [] and "nothing in memory matches" in (other.warning or ""), query


def _ending(terms: Mapping[str, int], asked: list[str] | None = None) -> Callable[[Sequence[str]], list[dict[str, int]]]:
    def ending(suffixes: Sequence[str]) -> list[dict[str, int]]:
        if asked is not None:
            asked.extend(suffixes)
        found = [{term: n for term, n in terms.items() if term.endswith(suffix) and term != suffix} for suffix in suffixes]
        return [dict(sorted(each.items(), key=lambda item: (-item[1], item[0]))) for each in found]

    return ending


# The index's terms are porter stems, which cut a compound's end where they keep the word's: the searched word
# is the first part and the whole query word, which the count (as the search counts, by stem) finds, and which
# a note must write.
STEMS = {"datenbankmigr": 2, "wohnungsschlussel": 3, "autoschlussel": 1, "geburtstagsfei": 1, "tresorschlussel": 1}
COMPOUNDS = {"datenbankmigration": 2, "wohnungsschlussel": 3, "autoschlussel": 1, "geburtstagsfeier": 1, "tresorschlussel": 1}
WRITTEN = {
    "datenbankmigration": "Die Datenbankmigrationen laufen.",
    "wohnungsschlussel": "Der WOHNUNGSSCHLÜSSEL liegt beim Nachbarn.",
    "autoschlussel": "Autoschlüssel: im Flur",
    "geburtstagsfeier": "Lenas Geburtstagsfeier ist am Samstag.",
    "tresorschlussel": "Tresorschlüssel verloren.",
}


def _tails(missing: list[str], index: Mapping[str, int], held: Mapping[str, int], written: Mapping[str, str] = WRITTEN,
           asked: list[str] | None = None) -> dict[str, tuple[str, ...]]:  # fmt: skip
    return compound_tails(missing, _ending(index, asked), _count(held), _texts(written), _is_term)


def test_a_word_is_searched_as_the_notes_longer_words_that_end_with_it() -> None:
    words = {"datenbank": 4, "wohnung": 2, "auto": 5, "geburtstag": 1, "tresor": 1}  # "wohnungs": a linking s
    asked: list[str] = []
    assert _tails(["migration", "schlüssel", "feier"], STEMS, COMPOUNDS | words, asked=asked) == {
        "migration": ("datenbankmigration",),
        "schlüssel": ("wohnungsschlussel", "autoschlussel", "tresorschlussel"),
        "feier": ("geburtstagsfeier",),
    }
    assert "migr" in asked and "schlussel" in asked  # folded, and cut as far as porter may cut a compound
    assert min(map(len, asked)) == MIN_PART and "migration"[: len("migration") - MAX_CUT - 1] not in asked


def test_a_longer_word_is_found_in_the_form_the_notes_inflect_it() -> None:
    """Porter keeps German endings: "Datenbankmigrationen" is held as it is written, and searched so."""
    index = {"datenbankmigrationen": 2, "geburtstagsfeiern": 1}
    held = index | {"datenbank": 3, "geburtstag": 1}
    written = {"datenbankmigrationen": "Die Datenbankmigrationen laufen.", "geburtstagsfeiern": "Zwei Geburtstagsfeiern."}
    assert _tails(["migration", "feier"], index, held, written) == {
        "migration": ("datenbankmigrationen",),
        "feier": ("geburtstagsfeiern",),
    }
    assert _tails(["migration"], index, held, {}) == {}  # held, but no note writes it


def test_a_longer_word_counts_only_when_its_first_part_is_a_word_the_notes_hold() -> None:
    index = {"deadlin": 2, "passport": 1, "generat": 4, "datenbankmigr": 1}
    words = {"dead": 3, "pass": 1}  # no "gene" of "generation", nor "datenbank"
    held = index | words | {"deadline": 2, "passport": 1, "generation": 4, "datenbankmigration": 1}
    written = {"deadline": "The deadline moved.", "passport": "Renew the passport.", "generation": "Next generation."}
    assert _tails(["line", "port", "ration", "migration"], index, held, written) == {"line": ("deadline",), "port": ("passport",)}
    # nor is a first part that is a stop word, or a stop word and an s, a word
    assert compound_tails(["these"], _ending({"thesthese": 1}), _count({"thesthese": 1, "thes": 1}),
                          _texts({"thesthese": "thesthese"}), lambda w: w != "thes") == {}  # fmt: skip
    # a longer word the search counts in no chunk is dropped
    assert _tails(["migration"], STEMS, {"datenbank": 4}) == {}


def test_a_longer_word_counts_only_where_a_note_writes_it() -> None:
    """Porter cuts "relationshipments" to "relationship": the search counts it, but "shipments" is no last part
    of any word the notes write. A note writes the compound with at most two letters more."""
    index = {"relationship": 5, "datenbankmigr": 1}
    held = {"relationship": 5, "relationshipments": 5, "relation": 3, "datenbank": 1, "datenbankmigration": 1}
    written = {"relationshipments": "Our relationship with the supplier.", "datenbankmigration": "die Datenbankmigrationsplanung"}
    assert _tails(["shipments", "migration"], index, held, written) == {}
    assert _tails(["migration"], index, held, {"datenbankmigration": "Datenbankmigration: Freitag"}) == {"migration": ("datenbankmigration",)}


def test_only_words_of_letters_long_enough_are_looked_up_at_the_end_and_at_most_a_few() -> None:
    asked: list[str] = []
    _tails(["tür", "ifit1", "vertrag", "less", "wise"], {}, {}, asked=asked)  # "homeless" is no kind of "less"
    assert asked and all("vertrag".startswith(suffix) or suffix.startswith("vertrag") for suffix in asked)
    asked.clear()
    _tails([f"wort{n:c}" for n in range(97, 97 + MAX_WORDS + 2)], {}, {}, asked=asked)
    assert len({suffix for suffix in asked if len(suffix) == 5}) == MAX_WORDS


@pytest.mark.both_stores
async def test_a_word_the_notes_hold_only_as_a_compounds_last_part_is_found(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """ "Migration" finds "Datenbankmigration", "Feier" finds "Geburtstagsfeier" (the first part and a linking s),
    "base" finds "database", "Besprechung" finds "Kundenbesprechungen", in notes that hold the first parts on their own; and a compound written after the
    first search is found too."""
    write("MEMORY.md", f"# Notizen\n\n{FILLER}- Die Datenbank ist langsam.\n- Lena feiert Geburtstag.\n- Die Kunden warten.\n{FILLER}")
    write("memory/2026-03-07.md", "# 2026-03-07\n\n- Die Geburtstagsfeier ist am Samstag.\n- Die Datenbankmigration ist für Freitag "
          "geplant.\n- Der Wohnungsschlüssel liegt beim Nachbarn.\n- The data team moved the database.\n"
          "- Zwei Kundenbesprechungen diese Woche.\n")  # fmt: skip
    for day in range(8, 20):
        write(f"memory/2026-03-{day:02}.md", f"# 2026-03-{day:02}\n\n- Walked the dog, day {day}, and read the news.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        for query, line in [
            ("Migration", "Datenbankmigration"),
            ("Wann ist die Migration?", "Datenbankmigration"),
            ("Feier", "Geburtstagsfeier"),
            ("base", "database"),
            ("Besprechung", "Kundenbesprechungen"),  # the compound inflected
        ]:
            answer = await engine.search(query, max_chars=300)
            assert [hit.path for hit in answer.results][:1] == ["memory/2026-03-07.md"], (query, answer.warning)
            assert line in answer.results[0].snippet, query
        # the first part must be a word the notes hold: "Schlüssel" of "Wohnungsschlüssel" is not found
        assert (await engine.search("Schlüssel")).results == []
        # a compound (here an umlaut plural) and its first part written since the last search are found by the next one
        assert (await engine.search("Vertrag")).results == []
        write("memory/2026-03-20.md", "# 2026-03-20\n\n- Die Arbeitsverträge sind unterschrieben.\n- Die Arbeit war lang.\n")
        await engine.sync()
        answer = await engine.search("Vertrag", max_chars=300)
        assert [hit.path for hit in answer.results][:1] == ["memory/2026-03-20.md"], answer.warning
        # a word that ends no longer word of the notes is still not found
        other = await engine.search("Steuererklärung")
        assert other.results == [] and "nothing in memory matches" in (other.warning or "")


async def test_a_readers_copy_of_the_terms_leaves_no_transaction_open_and_follows_the_writer(
    make_engine: MakeEngine, write: Callable[[str, str], Path], index_path: Path
) -> None:
    """SQLite's terms_ending reads a copy a reader connection keeps: it must not hold the reader's snapshot open
    (the WAL could not be checkpointed, and the reader would not see new notes), and it is made again after the
    writer's next commit."""
    write("MEMORY.md", "- Die Datenbankmigration ist geplant.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        reader = db.connect(index_path, readonly=True)
        try:
            assert sqlite_ops.terms_ending(reader, ["migr"], 5) == [{"datenbankmigr": 1}]  # porter stems
            assert not reader.in_transaction
            write("memory/2026-03-20.md", "# 2026-03-20\n\n- Die Produktmigration auch.\n")
            await engine.sync()
            assert set(sqlite_ops.terms_ending(reader, ["migr"], 5)[0]) == {"datenbankmigr", "produktmigr"}
            assert not reader.in_transaction
        finally:
            reader.close()

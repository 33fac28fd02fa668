"""An English word is found in any of its forms that porter alone cannot fold: an irregular verb's past ("bought",
"buy" -> "bui"), an irregular plural ("teeth"), a derived word ("allergic", "decision"), a British spelling
("colour"). The index adds the base form after such a form, and a query asks for the base form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import keyword_answer

from memdex.memory_core import MemoryEngine
from memdex.memory_core.text.base_forms import BASE_FORMS
from memdex.memory_core.text.inflections import porter_stem
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import index_stems, match_key, query_terms, term_index_keys

MakeEngine = Callable[..., MemoryEngine]


def test_a_line_adds_the_base_form_of_each_past_form_and_a_query_asks_for_it() -> None:
    assert index_text("- Audrey: we met Jon and I bought collars").split()[-2:] == ["meet", "buy"]
    assert index_text("— we met, then Thé: café").split()[-1] == "meet"  # not ASCII: the same
    assert index_text("she turned left and saw a rose") == "she turned left and saw a rose"  # other words too
    assert index_text("I was born in Ohio") == "I was born in Ohio"  # not "bear"
    assert query_terms("What did Audrey buy?") == query_terms("what has audrey bought") == ["audrey", "buy"]
    assert term_index_keys("buy") <= index_stems("I bought it")  # the Python side holds what the index holds
    assert all(form != base and " " not in base for form, base in BASE_FORMS.items())


def test_plurals_derived_words_and_british_spellings_add_their_base_form() -> None:
    assert index_text("Allergic to penicillin; two children").split()[-2:] == ["allergy", "child"]
    assert index_text("Favourite colour: green. Organised the decision log.").split()[-4:] == [
        "favorite", "color", "organize", "decide"
    ]
    assert query_terms("any allergies?") == ["allergies"]  # porter folds it with "allergy" itself
    assert query_terms("what was the decision about her teeth") == ["decide", "tooth"]
    assert query_terms("my favourite colour") == query_terms("my favorite color") == ["favorite", "color"]
    assert query_terms("when did grandad die?") == query_terms("grandad's death") == ["grandad", "die"]
    for query, note in [("allergies", "Allergic to cats"), ("injuries", "Ben injured his wrist"),
                        ("choice", "we chose the Brompton"), ("organized", "She organised it")]:
        (term,) = query_terms(query)
        assert term_index_keys(term) <= index_stems(note), query  # the Python side holds what the index holds
    assert match_key.of(["allergies", "allergy", "allergic"]) == ["allergi", "allergi", "allergic"]


def test_a_shortened_word_adds_its_full_form_unless_the_full_form_stems_as_another_word() -> None:
    assert index_text("Prod DB: pg-prod-01; Dr appt Thu").split()[-3:] == ["database", "doctor", "appointment"]
    assert query_terms("the production database") == query_terms("prod db") == ["prod", "database"]
    assert query_terms("what happened with the product?") == ["happened", "product"]  # "product" is no "prod"


def test_each_form_is_one_that_porter_keeps_apart_from_its_base() -> None:
    """An entry porter folds anyway would only add a term; a base that is itself a form would be asked for as
    another word than the index adds."""
    assert all(porter_stem(form) != porter_stem(base) for form, base in BASE_FORMS.items())
    assert not set(BASE_FORMS.values()) & BASE_FORMS.keys()


AUDREY = {
    "memory/2026-03-07.md": "# 2026-03-07\n\n- Audrey walked the dogs and brushed the dogs in the park.\n",
    "memory/2026-03-08.md": "# 2026-03-08\n\n- Audrey bought the dogs new collars.\n",
    "memory/2026-03-09.md": "# 2026-03-09\n\n- Caroline painted a sunrise over the lake.\n",
    "memory/2026-03-10.md": "# 2026-03-10\n\n- We met Jon at the pottery class.\n",
}
TOM = {
    "MEMORY.md": "# Memory\n\n- Allergic to penicillin. Favourite colour: dark green.\n- Chose the Brompton.\n",
    "memory/2026-11-30.md": "# 2026-11-30\n\n- Ben injured his wrist at football.\n- Tom fixed the car.\n",
    "memory/2026-12-02.md": "# 2026-12-02\n\n- Tom's color printer jammed; his favorite pen ran dry.\n",
}

DEV = {
    "MEMORY.md": "# Project memory\n\n- Prod DB: pg-prod-01, Postgres 16.\n- Product owner: Dana.\n",
    "memory/2026-12-01.md": "# 2026-12-01\n\n- Dr appt for Sam's flu jab moved to Thu 10:30.\n",
    "memory/2026-12-02.md": "# 2026-12-02\n\n- Moved the staging database to the new cluster.\n",
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("notes", "query", "found"),
    [
        # with "buy" held by no note, the note that says "dogs" twice came first
        (AUDREY, "What did Audrey buy for the dogs?", ["memory/2026-03-08.md", "memory/2026-03-07.md"]),
        (AUDREY, "when did we meet Jon?", ["memory/2026-03-10.md"]),
        (AUDREY, "who did we meet", ["memory/2026-03-10.md"]),
        # before, the log that says "Tom" came first, and the next two found nothing
        (TOM, "does Tom have any allergies?", ["MEMORY.md", "memory/2026-11-30.md", "memory/2026-12-02.md"]),
        (TOM, "what was our choice of bike?", ["MEMORY.md"]),
        (TOM, "any injuries?", ["memory/2026-11-30.md"]),
        (TOM, "favourite colour", ["MEMORY.md", "memory/2026-12-02.md"]),  # each note writes one spelling
        (DEV, "what's the production database host?", ["MEMORY.md", "memory/2026-12-02.md"]),  # before: 12-02 first
        (DEV, "when is the doctor appointment?", ["memory/2026-12-01.md"]),  # before: nothing
    ],
)
async def test_a_question_finds_the_note_that_writes_another_form_of_its_word(
    make_engine: MakeEngine, write: Callable[[str, str], Path], notes: dict[str, str], query: str, found: list[str]
) -> None:
    assert [hit.path for hit in (await keyword_answer(make_engine, write, notes, query)).results] == found

"""An English irregular verb is found in any of its forms: the index adds the base form after a past form, and a
query asks for the base form, which porter alone cannot fold ("bought", "buy" -> "bui")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import index_stems, query_terms, term_index_keys
from memdex.memory_core.text.verb_forms import BASE_FORMS

MakeEngine = Callable[..., MemoryEngine]


def test_a_line_adds_the_base_form_of_each_past_form_and_a_query_asks_for_it() -> None:
    assert index_text("- Audrey: we met Jon and I bought collars").split()[-2:] == ["meet", "buy"]
    assert index_text("— we met, then Thé: café").split()[-1] == "meet"  # not ASCII: the same
    assert index_text("she turned left and saw a rose") == "she turned left and saw a rose"  # other words too
    assert index_text("I was born in Ohio") == "I was born in Ohio"  # not "bear"
    assert query_terms("What did Audrey buy?") == query_terms("what has audrey bought") == ["audrey", "buy"]
    assert term_index_keys("buy") <= index_stems("I bought it")  # the Python side holds what the index holds
    assert all(form != base and " " not in base for form, base in BASE_FORMS.items())


@pytest.mark.both_stores
async def test_a_question_in_the_present_finds_the_note_in_the_past(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """With "buy" held by no note, the note that says "dogs" twice came first; the one that says "bought" answers."""
    write("memory/2026-03-07.md", "# 2026-03-07\n\n- Audrey walked the dogs and brushed the dogs in the park.\n")
    write("memory/2026-03-08.md", "# 2026-03-08\n\n- Audrey bought the dogs new collars.\n")
    write("memory/2026-03-09.md", "# 2026-03-09\n\n- Caroline painted a sunrise over the lake.\n")
    write("memory/2026-03-10.md", "# 2026-03-10\n\n- We met Jon at the pottery class.\n")
    async with make_engine(embedding={"provider": "none"}) as engine:
        await engine.sync()
        bought = await engine.search("What did Audrey buy for the dogs?")
        assert [hit.path for hit in bought.results][:1] == ["memory/2026-03-08.md"]
        met = await engine.search("when did we meet Jon?")
        assert [hit.path for hit in met.results] == ["memory/2026-03-10.md"]
        past = await engine.search("who did we meet")
        assert [hit.path for hit in past.results] == ["memory/2026-03-10.md"]

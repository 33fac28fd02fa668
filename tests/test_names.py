"""What counts as a name: a word the query and the notes both write with a capital (text/names.py)."""

from __future__ import annotations

from memdex.memory_core.text.names import capitalised_terms, capitalised_words, written_as_names

NOTES = [
    "- Dana pitched the seed round to two venture capital funds.",
    "- Capital plan: Dana hires two engineers; my cell phone died.",
    "Dana's offsite is in Berlin. Met DANA at the API review.",
]


def test_a_query_capitalises_words_only_beside_words_in_lower_case() -> None:
    assert capitalised_words("what is Dana's role?") == ["Dana"]
    assert capitalised_words("Dana role in the PostgreSQL move") == ["Dana", "PostgreSQL"]
    assert capitalised_words("the API for billing") == []  # an acronym
    assert capitalised_words("Dana Role Billing") == capitalised_words("WHAT IS DANA'S ROLE") == []  # case tells nothing
    assert capitalised_terms("What is Dana's role, and Lukas's?") == {"dana", "lukas"}  # "what" is a stop word


def test_a_name_is_a_word_the_notes_write_with_a_capital_nearly_every_time() -> None:
    """Once at a line's start does not make "capital" a name, nor a claim's "Stem Cell" the chat's "cell"."""
    assert written_as_names(["dana", "capital", "cell", "berlin"], NOTES) == {"dana", "berlin"}
    assert written_as_names(["lukas"], NOTES) == frozenset()  # no note writes it
    assert written_as_names([], NOTES) == frozenset()

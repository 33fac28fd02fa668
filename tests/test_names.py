"""What counts as a name: a word the notes write with a capital, once at least inside a sentence (text/names.py)."""

from __future__ import annotations

from memdex.memory_core.text.names import written_as_names

NOTES = [
    "- Dana pitched the seed round to two venture capital funds.\n- Fixed the invoice retry.",
    "- Capital plan: Dana hires two engineers; my cell phone died.\n- Fixed the login page.",
    "The offsite with Dana is in Berlin. Met DANA at the API review (in Berlin again).",
]


def test_a_name_is_written_with_a_capital_nearly_every_time_and_once_inside_a_sentence() -> None:
    """Not "capital", which starts a line once and is in lower case elsewhere, nor "Fixed", which starts every
    bullet it is in."""
    assert written_as_names(["dana", "capital", "cell", "berlin", "fixed"], NOTES) == {"dana", "berlin"}
    assert written_as_names(["lukas"], NOTES) == frozenset()  # no note writes it
    assert written_as_names(["caroline"], ["- **Caroline**: hi!\n- **Caroline**: bye."]) == {"caroline"}  # bold
    assert written_as_names(["乌龙", "2026"], ["乌龙茶 2026"]) == frozenset()  # no case, no name
    assert written_as_names([], NOTES) == frozenset()


def test_a_german_text_tells_no_name() -> None:
    """German writes every noun with a capital: "Team" in German notes is a noun, "Anna" in English ones a name."""
    german = ["- Das Team hat die Abrechnung gebaut.", "- Mit dem Team die Preise besprochen, und das Team war froh."]
    assert written_as_names(["team"], german) == frozenset()
    assert written_as_names(["anna", "team"], [*german, "- We met Anna about the pricing."]) == {"anna"}


def test_a_russian_name_is_found_in_every_form_its_stem_takes() -> None:
    """A Russian query term is a stem ("наташ" of "у Наташи"); the notes write "Наташа", "с Наташей"."""
    notes = ["- Наташа отвечает за биллинг.", "- Обсудили с Наташей резервные копии и роли."]
    assert written_as_names(["наташ", "рол"], notes) == {"наташ"}
    lower = ["- Мы говорили с Наташей.", "- потом наташа ушла.", "- и наташу не видели."]
    assert written_as_names(["наташ"], lower) == frozenset()  # two of its three forms in lower case

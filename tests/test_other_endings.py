"""A query word no note holds, that notes hold with another ending (German plurals, Turkish case endings), is
searched as the words the notes write; a typo still gets its hint, and English is left to porter."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.other_endings import other_ending, other_endings, takes

MakeEngine = Callable[..., MemoryEngine]
KEYWORD = {"provider": "none"}


def test_the_words_looked_up_are_long_enough_latin_and_not_english_commonest() -> None:
    assert takes("besprechung") and takes("rapor") and takes("schlussel")
    assert not takes("plan")  # too short: "plane", "plank", "plant"
    assert not takes("matching") and not takes("houses")  # English's commonest: porter's work
    assert not takes("встреча") and not takes("東京タワー")  # stemmed or segmented elsewhere


def test_another_ending_is_added_to_the_word_or_taken_off_it() -> None:
    assert other_ending("besprechung", "besprechungen") and other_ending("sunucuya", "sunucu")
    assert other_ending("rapor", "raporunu")
    assert not other_ending("rapor", "rapor")  # the word itself
    assert not other_ending("rapor", "raporlarımız")  # seven letters on
    assert not other_ending("raporlar", "raporunu")  # each ends otherwise after "rapor": as often two words,
    assert not other_ending("melanoma", "melanie") and not other_ending("weighed", "weight")  # as these are
    assert not other_ending("pland", "plan")  # the shorter word has four letters


def _index(
    terms: Mapping[str, int], texts: list[str]
) -> tuple[Callable[[str], dict[str, int]], Callable[[Sequence[str]], dict[str, int]], Callable[[str], list[str]]]:
    """A stand-in index: its terms that start with a word, with their chunk counts; the counts of some words; the
    texts that hold a term."""

    def starting(prefix: str) -> dict[str, int]:
        return {term: n for term, n in terms.items() if term.startswith(prefix) and term != prefix}

    def count(words: Sequence[str]) -> dict[str, int]:
        return {word: terms.get(word, 0) for word in words}

    return starting, count, lambda term: [text for text in texts if term in text.lower()]


def test_the_forms_are_those_the_most_chunks_hold_as_the_notes_write_them() -> None:
    starting, count, texts = _index(
        {"raporu": 3, "raporunu": 1, "raporlama": 2, "rapora": 0, "sunucu": 2},
        ["Maliyet raporu istedi.", "Raporunu gönderdim.", "Raporlama aracı bozuk.", "Ana sunucu çöktü."],
    )
    # "raporlama" ("reporting") is four letters on: another word
    assert other_endings(["rapor"], starting, count, texts, lambda word: True) == {"rapor": ("raporu", "raporunu")}
    assert other_endings(["rapor"], starting, count, texts, lambda word: word != "raporu") == {"rapor": ("raporunu",)}
    assert other_endings(["sunucuya"], starting, count, texts, lambda word: True) == {"sunucuya": ("sunucu",)}
    assert other_endings(["zebra", "plan", "houses"], starting, count, texts, lambda word: True) == {}


NOTES = {
    "MEMORY.md": "# Gedächtnis\n\n- Keine Besprechungen vor 10 Uhr.\n",
    "memory/2026-11-18.md": "# 2026-11-18\n\n- Maliyet raporunu Ayşe'ye gönderdim.\n- Disk dolunca ana sunucu çöktü.\n",
    "memory/2026-11-19.md": "# 2026-11-19\n\n- Ayşe ay sonundan önce maliyet raporu istedi.\n",
    "memory/2026-11-20.md": "# 2026-11-20\n\n- Lasttest: 450 Anfragen pro Sekunde.\n- Vitamin D levels checked.\n",
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("query", "paths", "warned"),
    [
        ("Besprechung", ["MEMORY.md"], False),  # German: the notes write the plural
        ("rapor", ["memory/2026-11-18.md", "memory/2026-11-19.md"], False),  # Turkish: raporunu, raporu
        ("Sunucuya ne oldu?", ["memory/2026-11-18.md"], False),  # "what happened to the server?": sunucu
        ("vitamn", ["memory/2026-11-20.md"], True),  # a typo: the hint, named in the warning
    ],
)
async def test_a_word_the_notes_write_with_another_ending_finds_them(
    make_engine: MakeEngine, tmp_path: Path, query: str, paths: list[str], warned: bool
) -> None:
    for rel, text in NOTES.items():
        (tmp_path / "ws" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "ws" / rel).write_text(text, encoding="utf-8")
    async with make_engine(workspace=tmp_path / "ws", embedding=KEYWORD) as engine:
        await engine.sync()
        answer = await engine.search(query)
    assert sorted(hit.path for hit in answer.results) == paths
    assert ("did you mean" in (answer.warning or "")) is warned, answer.warning

"""A weekday in another language: held and asked for as its English name (memory_core/text/weekdays.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import keyword_answer

from memdex.memory_core import MemoryEngine
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import index_stems, term_index_keys
from memdex.memory_core.text.weekdays import query_weekdays

MakeEngine = Callable[..., MemoryEngine]


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("Was habe ich am Freitag gemacht?", "Was habe ich am friday gemacht?"),
        ("Darf ich freitags deployen, nicht an Freitagen?", "Darf ich friday deployen, nicht an friday?"),
        ("que fais-je les samedis et les dimanches ?", "que fais-je les saturday et les sunday ?"),
        ("qu'ai-je fait vendredi ?", "qu'ai-je fait friday ?"),
        ("Viernes: ¿qué pasó?", "friday: ¿qué pasó?"),  # capitalised as the query's first word
        ("¿qué hice el miércoles o el miercoles?", "¿qué hice el wednesday o el wednesday?"),
        ("cosa ho fatto lunedì e martedi", "cosa ho fatto monday e tuesday"),
        ("wat deed ik op zondag", "wat deed ik op sunday"),
        ("что было в пятницу и во вторник?", "что было в friday и во tuesday?"),
        ("co zrobiłem w środę i w piątek?", "co zrobiłem w wednesday i w friday?"),  # Polish, in its cases
        ("Co jsem dělal ve středu a v pátek?", "Co jsem dělal ve wednesday a v friday?"),  # Czech
        ("Patek Philippe, Patek", "Patek Philippe, Patek"),  # unaccented Czech "pátek" is the watchmaker
        ("O que eu fiz na sexta-feira? E nas terças feiras?", "O que eu fiz na friday? E nas tuesday?"),  # Portuguese
        ("a segunda parte da feira", "a segunda parte da feira"),  # "second", and a fair
        ("星期五做了什么", " friday 做了什么"),
        ("上周日和礼拜天", "上 sunday 和 sunday "),
        ("金曜日に何をした", " friday に何をした"),
        ("월요일에 뭐 했어", " monday  뭐 했어"),
        # not these: a name, a week that is no Monday, a weekday inside a word, an English query
        ("ask Domingo and Sabato about it", "ask Domingo and Sabato about it"),
        ("每周一次的会议，这周一起去", "每周一次的会议，这周一起去"),
        ("周一鸣是谁？周一围呢？", "周一鸣是谁？周一围呢？"),  # 周 is a surname
        ("周一下午和周五的会", " monday 下午和 friday 的会"),
        ("Freitags-Runde, the mardigras", "Freitags-Runde, the mardigras"),
        ("what happened on Friday?", "what happened on Friday?"),
    ],
)
def test_a_query_asks_for_a_weekday_by_its_english_name(query: str, asked: str) -> None:
    assert query_weekdays(query) == asked


def test_the_index_adds_the_english_name_after_a_weekday_in_another_language() -> None:
    """The Python side counts what the index adds: a query's "friday" matches the note that writes "Freitag"."""
    lines = {
        "Freitag: Zahnarzt um 15 Uhr": "friday",
        "Kein Deployment an Freitagen": "friday",
        "в пятницу встреча": "friday",
        "星期五开会": "friday",
        "周一开会": "monday",
        "金曜日に会議": "friday",
        "일요일에 회의": "sunday",
        "el miércoles, dentista": "wednesday",
        "Nie wdrażamy w piątki.": "friday",
        "Schůzka v pondělí": "monday",
        "Sexta-feira: dentista às 16h": "friday",
        "Às quartas-feiras, inglês": "wednesday",
    }
    for line, day in lines.items():
        assert index_text(line).endswith(f" {day}"), line
        assert term_index_keys(day) <= index_stems(line), line
    assert index_text("Dentist at 15:00") == "Dentist at 15:00"
    assert index_text("a segunda parte da feira") == "a segunda parte da feira"  # no weekday: a second, a fair
    assert index_text("feira") == "feira"


MIXED = {  # one week of logs; the Wednesday's note writes its weekday in German
    **{f"memory/2026-12-0{day}.md": f"# 2026-12-0{day}\n\n- Worked on the billing export, part {day}.\n" for day in range(1, 6)},
    "MEMORY.md": "# Team\n\n- Jour fixe: jeden Mittwoch mit Dana.\n- Ask Domingo about the billing export.\n",
    "memory/2026-11-29.md": "# 2026-11-29\n\n- Quiet day: billing export paused.\n",  # a Sunday
}


@pytest.mark.both_stores
@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("was war am Freitag?", {"memory/2026-12-04.md"}),
        ("¿qué hice el viernes?", {"memory/2026-12-04.md"}),
        ("что было в пятницу?", {"memory/2026-12-04.md"}),
        ("星期五做了什么", {"memory/2026-12-04.md"}),
        ("金曜日に何をした", {"memory/2026-12-04.md"}),
        ("금요일에 뭐 했어", {"memory/2026-12-04.md"}),
        ("wednesday", {"memory/2026-12-02.md", "MEMORY.md"}),
        ("Mittwoch", {"memory/2026-12-02.md", "MEMORY.md"}),
        ("ask Domingo", {"MEMORY.md"}),
    ],
)
async def test_a_weekday_in_any_language_finds_that_days_notes(
    make_engine: MakeEngine, write: Callable[[str, str], Path], query: str, found: set[str]
) -> None:
    """Before, each question in another language than English found nothing, "wednesday" missed the note that
    writes "Mittwoch", and "Mittwoch" the log dated on a Wednesday."""
    hits = (await keyword_answer(make_engine, write, MIXED, query)).results
    assert {hit.path for hit in hits[: len(found)]} == found, [(hit.path, hit.score) for hit in hits]

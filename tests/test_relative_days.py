"""A query that names a day relative to today ("yesterday", "gestern", "昨日") names that day's log, as its date
would: the log's chunks rank first."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.search.relative_days import named_days

MakeEngine = Callable[..., MemoryEngine]
KEYWORD = {"provider": "none"}
DAY = dt.date(2026, 11, 20)


@pytest.mark.parametrize(
    ("query", "days_back", "words"),
    [
        ("What did I work on yesterday?", [1], ["yesterday"]),
        ("Today's standup", [0], ["Today"]),
        ("what happened the day before yesterday", [2], ["the day before yesterday"]),  # not also yesterday
        ("yesterday and today", [1, 0], ["yesterday", "today"]),
        ("Was habe ich gestern gemacht?", [1], ["gestern"]),
        ("Qu’est-ce que j’ai fait aujourd’hui ?", [0], ["aujourd'hui"]),  # a typographic apostrophe too
        ("¿Qué hice ayer?", [1], ["ayer"]),
        ("Что было вчера?", [1], ["вчера"]),
        ("昨日の会議", [1], ["昨日"]),
        ("一昨日の会議", [2], ["一昨日"]),
        ("昨天做了什么", [1], ["昨天"]),
        ("어제는 뭐 했어?", [1], ["어제는"]),  # with the particle written onto it
        ("what did I eat last night?", [1], ["last night"]),  # a part of the day names its day
        ("plans for tonight", [0], ["tonight"]),
        ("qu'ai-je mangé hier soir ?", [1], ["hier soir"]),  # "hier" alone is German "here"
        ("¿Qué cené anoche?", [1], ["anoche"]),
        ("gisteravond", [1], ["gisteravond"]),
        ("昨夜の夕食", [1], ["昨夜"]),
        ("昨晚吃了什么", [1], ["昨晚"]),
        ("어젯밤에 뭐 먹었어?", [1], ["어젯밤에"]),
        ("what did I do 2 days ago?", [2], ["2 days ago"]),  # a number of days ago: that day
        ("ten days ago", [10], ["ten days ago"]),
        ("Was war vor drei Tagen?", [3], ["vor drei Tagen"]),
        ("il y a 3 jours", [3], ["il y a 3 jours"]),
        ("¿Qué hice hace dos días?", [2], ["hace dos días"]),
        ("há 3 dias", [3], ["há 3 dias"]),
        ("due giorni fa", [2], ["due giorni fa"]),
        ("3 дня назад", [3], ["3 дня назад"]),
        ("3일 전에 뭐 했어?", [3], ["3일 전에"]),
        ("이틀 전", [2], ["이틀 전"]),
        ("三天前的会议", [3], ["三天前"]),
        ("３日前の会議", [3], ["３日前"]),  # full-width digits
    ],
)
def test_a_word_for_a_day_names_its_date(query: str, days_back: list[int], words: list[str]) -> None:
    days = [(DAY - dt.timedelta(days=n)).isoformat() for n in days_back]
    assert named_days(query, DAY) == list(zip(days, words, strict=True))


@pytest.mark.parametrize(
    "query", ["todays plan", "a layer of paint", "hier ist der Schlüssel", "以前天气很好", "on Friday", "date.today() bug", "today()"]
)
def test_other_words_and_ambiguous_ones_name_no_day(query: str) -> None:
    assert named_days(query, DAY) == []


@pytest.mark.parametrize(
    ("query", "first", "last", "words"),
    [  # DAY is Friday 20 November 2026
        ("what did we ship last week?", "2026-11-09", "2026-11-15", "last week"),  # the calendar week before, from Monday
        ("This week's standups", "2026-11-16", "2026-11-22", "This week"),
        ("budget last month", "2026-10-01", "2026-10-31", "last month"),
        ("this month", "2026-11-01", "2026-11-30", "this month"),
        ("Was war letzte Woche?", "2026-11-09", "2026-11-15", "letzte Woche"),
        ("¿qué hice la semana pasada?", "2026-11-09", "2026-11-15", "la semana pasada"),
        ("что было на прошлой неделе", "2026-11-09", "2026-11-15", "на прошлой неделе"),
        ("先週の会議", "2026-11-09", "2026-11-15", "先週"),
        ("上个月的预算", "2026-10-01", "2026-10-31", "上个月"),
        ("지난달 회의", "2026-10-01", "2026-10-31", "지난달"),
        ("이번 주에 뭐 했어?", "2026-11-16", "2026-11-22", "이번 주에"),  # the particle is no word of its own
        ("what changed in the past week?", "2026-11-14", "2026-11-20", "past week"),  # a span: the days up to today
        ("over the last two weeks", "2026-11-07", "2026-11-20", "last two weeks"),
        ("errors in the past month", "2026-10-22", "2026-11-20", "past month"),
        # a number of weeks or months ago: that calendar week or month (7 days ago is always in last week)
        ("what happened a week ago?", "2026-11-09", "2026-11-15", "a week ago"),
        ("what was I doing two weeks ago?", "2026-11-02", "2026-11-08", "two weeks ago"),
        ("3 months ago", "2026-08-01", "2026-08-31", "3 months ago"),
        ("vor einer Woche", "2026-11-09", "2026-11-15", "vor einer Woche"),
        ("il y a un mois", "2026-10-01", "2026-10-31", "il y a un mois"),
        ("una settimana fa", "2026-11-09", "2026-11-15", "una settimana fa"),
        ("twee weken geleden", "2026-11-02", "2026-11-08", "twee weken geleden"),
        ("неделю назад", "2026-11-09", "2026-11-15", "неделю назад"),
        ("2주 전", "2026-11-02", "2026-11-08", "2주 전"),
        ("一週間前の会議", "2026-11-09", "2026-11-15", "一週間前"),
        ("两周前", "2026-11-02", "2026-11-08", "两周前"),
        # a weekend: the Saturday and Sunday of that calendar week
        ("what did we do last weekend?", "2026-11-14", "2026-11-15", "last weekend"),
        ("this weekend", "2026-11-21", "2026-11-22", "this weekend"),
        ("le week-end dernier", "2026-11-14", "2026-11-15", "le week-end dernier"),
        ("上周末", "2026-11-14", "2026-11-15", "上周末"),
        ("지난 주말에", "2026-11-14", "2026-11-15", "지난 주말에"),
    ],
)
def test_a_word_for_a_week_or_month_names_each_of_its_days(query: str, first: str, last: str, words: str) -> None:
    named = named_days(query, DAY)
    days = [dt.date.fromisoformat(first) + dt.timedelta(days=n) for n in range(len(named))]
    assert named == [(day.isoformat(), words) for day in days] and named[-1][0] == last


@pytest.mark.parametrize(
    ("query", "day", "words"),
    [  # DAY is Friday 20 November 2026
        ("what did we decide last Friday?", "2026-11-13", "last Friday"),  # a week back, not today
        ("last monday's standup", "2026-11-16", "last monday"),
        ("last Sunday", "2026-11-15", "last Sunday"),
        ("Was war letzten Donnerstag?", "2026-11-19", "letzten Donnerstag"),
        ("qu'avons-nous décidé vendredi dernier ?", "2026-11-13", "vendredi dernier"),
        ("¿qué pasó el martes pasado?", "2026-11-17", "martes pasado"),
        ("o que aconteceu na segunda-feira passada?", "2026-11-16", "segunda-feira passada"),
        ("lunedì scorso", "2026-11-16", "lunedì scorso"),
        ("afgelopen woensdag", "2026-11-18", "afgelopen woensdag"),
        ("что было в прошлую пятницу?", "2026-11-13", "прошлую пятницу"),
        ("지난 금요일에 뭐 했어?", "2026-11-13", "지난 금요일에"),
        # Chinese and Japanese name that day of last week: on Friday, 上周三 is nine days back, not two
        ("上周三开会说了什么", "2026-11-11", "上周三"),
        ("上星期天", "2026-11-15", "上星期天"),
        ("先週の金曜日の会議", "2026-11-13", "先週の金曜日"),
        ("上周一开会", "2026-11-09", "上周一"),
        ("上週天做了什麼", "2026-11-15", "上週天"),  # traditional characters, named as the query writes them
    ],
)
def test_a_past_weekday_names_its_day(query: str, day: str, words: str) -> None:
    assert named_days(query, DAY) == [(day, words)]


@pytest.mark.parametrize("query", ["上周一起吃饭", "上周一次都没去"])  # "together", "once": the week, not its Monday
def test_a_chinese_one_that_starts_a_word_names_the_week_not_its_monday(query: str) -> None:
    assert [word for _, word in named_days(query, DAY)] == ["上周"] * 7


@pytest.mark.parametrize(
    ("query", "first", "last"),
    [("what did we decide last month?", "2026-12-01", "2026-12-31"), ("two months ago", "2026-11-01", "2026-11-30"),
     ("13 months ago", "2025-12-01", "2025-12-31")],
)
def test_a_month_back_from_january_is_in_the_year_before(query: str, first: str, last: str) -> None:
    named = named_days(query, dt.date(2027, 1, 3))
    assert (named[0][0], named[-1][0], len(named)) == (first, last, dt.date.fromisoformat(last).day)


@pytest.mark.parametrize(
    "query",
    ["the last week of March", "this month of the year", "lastweek", "the last Friday of the month",
     "the last 30 days of the year", "a few days ago", "3 days", "an hour ago", "vor 3 Jahren",
     "12月3日前に", "11월 3일 전에"],  # "before the 3rd", not "3 days ago"
)
def test_a_week_or_a_number_of_something_else_names_no_days(query: str) -> None:
    assert named_days(query, DAY) == []


@pytest.mark.both_stores
async def test_last_week_s_logs_rank_first_the_one_that_answers_the_rest_of_the_query_first(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """ "what did Priya say last week?" ranked the notes that say "week" or "last" anywhere; last week's log that
    mentions Priya is what it asks for. A named log that also answers the rest of the query kept its keyword score,
    below a note that holds "Priya" and "week"."""
    write("MEMORY.md", "# Memory\n\n- Rent is paid each month; the last payment went out on time.\n- Priya runs pricing.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        monday = engine.today() - dt.timedelta(days=engine.today().weekday() + 7)
        days = [(monday + dt.timedelta(days=n)).isoformat() for n in (1, 3)]
        write(f"memory/{days[0]}.md", f"# {days[0]}\n\n- Packed the boxes for the move.\n")
        write(f"memory/{days[1]}.md", f"# {days[1]}\n\n- Priya said the annual plan discount is not visible enough.\n")
        write("memory/2020-01-06.md", "# 2020-01-06\n\n- Priya joined; we meet once a week.\n")
        await engine.sync()
        asked = await engine.search("what did Priya say last week?")
        assert [hit.path for hit in asked.results][:2] == [f"memory/{days[1]}.md", "memory/2020-01-06.md"]
        assert asked.results[0].score > asked.results[1].score  # it answers the whole query, the other Priya and "week"
        week = await engine.search("what happened last week?")
        assert {hit.path for hit in week.results[:2]} == {f"memory/{day}.md" for day in days}
        spanish = await engine.search("¿qué dijo Priya la semana pasada?")
        assert spanish.results[0].path == f"memory/{days[1]}.md"
        assert "pasada" not in (spanish.warning or "") and "semana" not in (spanish.warning or "")
        for day in days:
            (Path(engine.settings.workspace) / f"memory/{day}.md").unlink()
        await engine.sync()
        gone = await engine.search("what did Priya say last week?")
        assert 'there is no daily log for "last week"' in (gone.warning or "")


@pytest.mark.both_stores
async def test_a_number_of_days_or_weeks_ago_and_last_weekend_name_their_logs(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """"what was I doing two weeks ago?" ranked a note that says "for two weeks" first, "what did I do 9 days ago?"
    one that says "two days", and "last weekend" one that says "weekend": no day was named."""
    write("MEMORY.md", "# Memory\n\n- Physio: no running for two weeks, then rest two days after a long run.\n"
                       "- Weekend plans go in the shared calendar.\n")  # fmt: skip
    async with make_engine(embedding=KEYWORD) as engine:
        today = engine.today()
        days_ago = (today - dt.timedelta(days=9)).isoformat()
        weeks_ago = (today - dt.timedelta(days=today.weekday() + 12)).isoformat()  # Wednesday, two weeks back
        weekend = (today - dt.timedelta(days=today.weekday() + 1)).isoformat()  # last Sunday
        write(f"memory/{days_ago}.md", "- Moved the backups to pgBackRest.\n")
        write(f"memory/{weeks_ago}.md", "- Reviewed the invoice renderer.\n")
        write(f"memory/{weekend}.md", "- Hiked the ridge trail with Sam.\n")
        await engine.sync()
        for query, day in [
            ("what did I do 9 days ago?", days_ago),
            ("¿Qué hice hace nueve días?", days_ago),
            ("what was I doing two weeks ago?", weeks_ago),
            ("what did we do last weekend?", weekend),
        ]:
            asked = await engine.search(query)
            assert [hit.path for hit in asked.results][:1] == [f"memory/{day}.md"], query
        missing = await engine.search("what did I do 40 days ago?")
        assert f'there is no daily log for "40 days ago" ({today - dt.timedelta(days=40)})' in (missing.warning or "")


@pytest.mark.both_stores
async def test_a_week_s_logs_come_first_chunk_by_first_chunk(make_engine: MakeEngine, write: Callable[[str, str], Path]) -> None:
    """ "What did I do last week?" of long logs gave the first chunks of last Monday's log alone, the first day's
    whole log before the next day's first line; each day's first chunk now comes before any day's second."""
    async with make_engine(embedding=KEYWORD, chunking={"tokens": 64, "overlap": 0}) as engine:
        monday = engine.today() - dt.timedelta(days=engine.today().weekday() + 7)
        days = [(monday + dt.timedelta(days=n)).isoformat() for n in range(5)]
        for day in days:
            lines = "".join(f"- {day}: routine item {n}, tidied the desk and read the news.\n" for n in range(12))
            write(f"memory/{day}.md", f"# {day}\n\n{lines}")
        await engine.sync()
        hits = (await engine.search("what did I do last week?", max_results=5)).results
    assert [hit.path for hit in hits] == [f"memory/{day}.md" for day in days]
    assert all(hit.chunk_start_line == 1 for hit in hits)


@pytest.mark.both_stores
async def test_a_chinese_week_word_with_a_function_word_in_it_names_the_week(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """"这周做了什么？" ("what did I do this week?") got nothing: "这" is a function word, so "这周" is no term, and the
    pair "周做" across its edge was all the query held, so the week word carried none of it and named no log."""
    write("MEMORY.md", "# 记忆\n\n- 对青霉素过敏。\n")
    async with make_engine(embedding=KEYWORD) as engine:
        today = engine.today().isoformat()  # in this week and this month
        write(f"memory/{today}.md", "- 双十二活动页开发中，接口文档还没给。\n")
        write("memory/2020-01-06.md", "- 修复了样式问题。\n")
        await engine.sync()
        for query in ("这周做了什么？", "这个月有什么安排？"):
            hits = (await engine.search(query)).results
            assert [hit.path for hit in hits][:1] == [f"memory/{today}.md"], query
            assert hits[0].score >= 0.5, query


@pytest.mark.both_stores
async def test_yesterday_s_log_ranks_first_for_a_question_about_yesterday(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    write("MEMORY.md", "# Memory\n\n- Work on the billing service goes through Dana.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        today = engine.today()
        day = {n: (today - dt.timedelta(days=n)).isoformat() for n in (0, 1, 2)}
        write(f"memory/{day[2]}.md", f"# {day[2]}\n\n- Reviewed the invoice renderer.\n")
        write(f"memory/{day[1]}.md", f"# {day[1]}\n\n- Moved the backups to pgBackRest.\n")
        write(f"memory/{day[0]}.md", f"# {day[0]}\n\n- Planned the load test.\n")
        await engine.sync()
        asked = await engine.search("What did I work on yesterday?")
        assert [hit.path for hit in asked.results][:1] == [f"memory/{day[1]}.md"]
        assert asked.results[0].score >= 0.5  # the log answers "yesterday", the half of the query that is rarest
        assert "daily log" not in (asked.warning or "")
        assert [hit.path for hit in (await engine.search("Was war gestern?")).results][:1] == [f"memory/{day[1]}.md"]
        assert [hit.path for hit in (await engine.search("今日の予定")).results][:1] == [f"memory/{day[0]}.md"]
        # the rest of the query still chooses among the named log's chunks, and the other hits follow
        both = await engine.search("what about the backups yesterday and the renderer")
        assert [hit.path for hit in both.results][:2] == [f"memory/{day[1]}.md", f"memory/{day[2]}.md"]
        # a passing "today's" in a long question names no log: the question is searched as it is
        long = await engine.search("standard methods of finding invoice renderer reviews in today's libraries")
        assert [hit.path for hit in long.results][:1] == [f"memory/{day[2]}.md"]
        # a day with no log names nothing: the query is searched as it is
        older = await engine.search("What did I do the day before yesterday?")
        assert [hit.path for hit in older.results][:1] == [f"memory/{day[2]}.md"]
        (Path(engine.settings.workspace) / f"memory/{day[2]}.md").unlink()
        await engine.sync()
        gone = await engine.search("What did I do the day before yesterday?")
        assert all(hit.path != f"memory/{day[2]}.md" for hit in gone.results)
        assert f'there is no daily log for "the day before yesterday" ({day[2]})' in (gone.warning or "")


@pytest.mark.both_stores
async def test_a_day_the_query_names_with_no_log_is_named_in_the_warning(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """"what happened on 2026-03-07?" with no log that day was answered by whatever held "2026" or "07", or by
    "nothing in memory matches": the caller could not tell that the memory has no log for the day at all."""
    write("memory/2026-03-05.md", "# 2026-03-05\n\n- Rotated the 07 backup keys for 2026.\n")
    async with make_engine(embedding=KEYWORD) as engine:
        await engine.sync()
        logged = await engine.search("what happened on 2026-03-05?")
        iso = await engine.search("what happened on 2026-03-07?")
        written = await engine.search("what happened on March 7, 2026?")
        both = await engine.search("backup keys on 2026-03-05 and 2026-03-07")
    assert [hit.path for hit in logged.results] == ["memory/2026-03-05.md"] and logged.warning is None
    assert 'there is no daily log for "2026-03-07"' in (iso.warning or "")
    assert 'there is no daily log for "March 7, 2026" (2026-03-07)' in (written.warning or ""), written.warning
    assert (both.warning or "").count("daily log") == 1 and '"2026-03-07"' in (both.warning or "")


@pytest.mark.both_stores
async def test_the_chunks_of_a_named_log_stay_in_the_order_of_what_they_answer(
    make_engine: MakeEngine, write: Callable[[str, str], Path]
) -> None:
    """Each chunk of yesterday's log answers "yesterday"; the one that also says more of what was asked comes first,
    though it comes later in the log."""
    async with make_engine(embedding=KEYWORD, chunking={"tokens": 64, "overlap": 0}) as engine:
        day = (engine.today() - dt.timedelta(days=1)).isoformat()
        filler = "".join(f"- Routine item {n}: tidied the desk and read the news.\n" for n in range(8))
        text = f"# {day}\n\n- A proposal for the offsite.\n{filler}- The quarterly pricing proposal went out to Dana.\n"
        write(f"memory/{day}.md", text)
        write("memory/2020-01-01.md", "# 2020-01-01\n\n- Nothing about it.\n")
        for n in range(4):  # other days, so that "proposal" and "pricing" are rare words
            write(f"memory/2020-02-0{n + 1}.md", f"# 2020-02-0{n + 1}\n\n- Cleaned the garage, day {n}.\n")
        await engine.sync()
        hits = (await engine.search("the quarterly pricing proposal yesterday")).results
        assert [hit.path for hit in hits][:2] == [f"memory/{day}.md"] * 2
        assert "pricing proposal" in hits[0].snippet and "offsite" in hits[1].snippet
        assert hits[0].score > hits[1].score

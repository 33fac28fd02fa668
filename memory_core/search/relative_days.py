"""The days a query names relative to today ("yesterday", "last week", "gestern", "先週"): daily logs' dates. Pure.

A daily log is named by its date (:mod:`.named_files`: ``2026-01-15`` ranks that day's log first), and an agent
asks "what did we do yesterday?" or "what happened last week?" as often as it writes the dates. Only words that
mean the same days in every language that writes them are taken: French "hier" is German "here", Chinese "前天"
("the day before yesterday") is also the end of "以前" and the start of "天气", so neither names a day. A weekday
alone ("on Friday") is left out: a past or a coming Friday, and a deploy that runs every Friday, read alike; "last
Friday" is the latest Friday before today.

A week is a calendar week from Monday (ISO 8601), a month a calendar month: "last week" on a Sunday is the week
before the one that ends that day, "this week" and "this month" run from their first day to their last.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import unicodedata

# how many days back each word names; phrases before the words they contain ("day before yesterday")
DAYS_BACK: dict[str, int] = {
    "the day before yesterday": 2, "day before yesterday": 2, "yesterday": 1, "today": 0,
    "vorgestern": 2, "gestern": 1, "heute": 0,  # German
    "avant-hier": 2, "aujourd'hui": 0,  # French
    "anteayer": 2, "ayer": 1, "hoy": 0,  # Spanish
    "anteontem": 2, "ontem": 1, "hoje": 0,  # Portuguese
    "l'altro ieri": 2, "ieri": 1, "oggi": 0,  # Italian
    "eergisteren": 2, "gisteren": 1, "vandaag": 0,  # Dutch
    "позавчера": 2, "вчера": 1, "сегодня": 0,  # Russian
    "그저께": 2, "어제": 1, "오늘": 0,  # Korean (a particle may follow: 어제는)
    "一昨日": 2, "昨日": 1, "今日": 0,  # Japanese
    "昨天": 1, "今天": 0,  # Chinese
}  # fmt: skip
# the weeks and months each phrase names: (unit, how many back); "last week of March" names no week
PERIODS: dict[str, tuple[str, int]] = {
    "last week": ("week", 1), "this week": ("week", 0), "last month": ("month", 1), "this month": ("month", 0),
    "letzte woche": ("week", 1), "vergangene woche": ("week", 1), "diese woche": ("week", 0),  # German
    "letzten monat": ("month", 1), "vergangenen monat": ("month", 1), "diesen monat": ("month", 0),
    "la semaine dernière": ("week", 1), "cette semaine": ("week", 0),  # French
    "le mois dernier": ("month", 1), "ce mois-ci": ("month", 0),
    "la semana pasada": ("week", 1), "esta semana": ("week", 0), "el mes pasado": ("month", 1),  # Spanish
    "este mes": ("month", 0),  # and Portuguese, with "esta semana"
    "semana passada": ("week", 1), "mês passado": ("month", 1),  # Portuguese
    "settimana scorsa": ("week", 1), "questa settimana": ("week", 0),  # Italian
    "mese scorso": ("month", 1), "questo mese": ("month", 0),
    "vorige week": ("week", 1), "deze week": ("week", 0), "vorige maand": ("month", 1), "deze maand": ("month", 0),
    "на прошлой неделе": ("week", 1), "на этой неделе": ("week", 0),  # Russian
    "в прошлом месяце": ("month", 1), "в этом месяце": ("month", 0),
    "지난주": ("week", 1), "지난 주": ("week", 1), "이번 주": ("week", 0), "이번주": ("week", 0),  # Korean
    "지난달": ("month", 1), "지난 달": ("month", 1), "이번 달": ("month", 0), "이번달": ("month", 0),
    "先週": ("week", 1), "今週": ("week", 0), "先月": ("month", 1), "今月": ("month", 0),  # Japanese
    "上周": ("week", 1), "上週": ("week", 1), "上个星期": ("week", 1), "上個星期": ("week", 1),  # Chinese
    "这周": ("week", 0), "這週": ("week", 0), "本周": ("week", 0), "本週": ("week", 0),
    "上个月": ("month", 1), "上個月": ("month", 1), "这个月": ("month", 0), "這個月": ("month", 0), "本月": ("month", 0),
}  # fmt: skip
# The days up to today that a span names, today among them ("what changed in the past week?")
PERIODS |= {
    f"{word} {span}": ("days", days)
    for word in ("past", "last")
    for span, days in (("7 days", 7), ("2 weeks", 14), ("two weeks", 14), ("30 days", 30))
} | {"past week": ("days", 7), "past month": ("days", 30)}
# A weekday with "last" names the latest such day before today ("last Friday"); on its own it names none
_LAST_WEEKDAY = {  # each language's phrase, and its weekdays from Monday
    "last {}": "monday tuesday wednesday thursday friday saturday sunday",
    "letzten {}": "montag dienstag mittwoch donnerstag freitag samstag sonntag",  # German
    "{} dernier": "lundi mardi mercredi jeudi vendredi samedi dimanche",  # French
    "{} pasado": "lunes martes miércoles jueves viernes sábado domingo",  # Spanish
    "{} scorso": "lunedì martedì mercoledì giovedì venerdì sabato domenica",  # Italian
    "afgelopen {}": "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",  # Dutch
    "vorige {}": "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
    "{}-feira passada": "segunda terça quarta quinta sexta",  # Portuguese, and its weekend below
}
# Russian declines "last" with the weekday's gender; Korean writes "지난" before it
_LAST_WEEKDAY_WRITTEN = {
    "sábado passado": 5, "domingo passado": 6,  # Portuguese
    "прошлый понедельник": 0, "прошлый вторник": 1, "прошлую среду": 2, "прошлый четверг": 3,  # Russian
    "прошлую пятницу": 4, "прошлую субботу": 5, "прошлое воскресенье": 6,
    "지난 월요일": 0, "지난 화요일": 1, "지난 수요일": 2, "지난 목요일": 3, "지난 금요일": 4, "지난 토요일": 5,  # Korean
    "지난 일요일": 6,
}  # fmt: skip
# Chinese and Japanese name a weekday of last week, Monday to Sunday (上周五: the Friday of the week before this one)
_OF_LAST_WEEK = {
    "上周{}": "一 二 三 四 五 六 日", "上週{}": "一 二 三 四 五 六 日", "上星期{}": "一 二 三 四 五 六 日",
    "先週の{}曜日": "月 火 水 木 金 土 日", "先週{}曜日": "月 火 水 木 金 土 日",
}  # fmt: skip
PERIODS |= (
    {phrase.format(day): ("weekday", number) for phrase, days in _LAST_WEEKDAY.items() for number, day in enumerate(days.split())}
    | {phrase: ("weekday", number) for phrase, number in _LAST_WEEKDAY_WRITTEN.items()}
    | {
        phrase.format(day): ("day of last week", number)
        for phrase, days in _OF_LAST_WEEK.items()
        for number, day in enumerate(days.split())
    }
    | {"上周天": ("day of last week", 6), "上星期天": ("day of last week", 6)}
)
# Words of scripts written with spaces stand alone; Han, kana and Hangul words are found inside the query's runs, a
# Korean word with the particle written onto it (어제는, "이번 주에"), so that the particle is no word of its own.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")
_WORDS = sorted([*DAYS_BACK, *PERIODS], key=len, reverse=True)  # the longest first: a phrase before its words
# "一" (Monday in 上周一) starts words too: 上周一起 is "last week, together", 上周一次 "once last week"
_NOT_AFTER_ONE = "(?![起次些下直样般共定点切个])"
_PATTERN = re.compile(
    # a word of a spaced script only at a word's start, not after a dot ("date.today()"), nor before "of" ("the last
    # week of March"); the others anywhere in a run of their script. Each side's condition first, so most places
    # try none of the words.
    r"(?<![\w.])(?:"
    + "|".join(re.escape(word) for word in _WORDS if not _UNSPACED.search(word))
    + r")(?![\w(]| of\b| de\b)|(?=[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])(?:"
    + "|".join(
        re.escape(word) + ("[\uac00-\ud7af]*" if _HANGUL.search(word) else _NOT_AFTER_ONE if word.endswith("一") else "")
        for word in _WORDS
        if _UNSPACED.search(word)
    )
    + ")",
    re.IGNORECASE,
)


def named_days(text: str, today: dt.date) -> list[tuple[str, str]]:
    """Each day (``YYYY-MM-DD``) ``text`` names relative to ``today``, with the words that name it as written; a
    week or a month gives each of its days with the same words."""
    query = unicodedata.normalize("NFC", text).replace("’", "'")
    named: list[tuple[str, str]] = []
    for match in _PATTERN.finditer(query):
        written = match.group(0).lower()
        word = next(word for word in _WORDS if written.startswith(word))  # a Korean particle after it
        days = [today - dt.timedelta(days=DAYS_BACK[word])] if word in DAYS_BACK else _period(*PERIODS[word], today)
        named += [(day.isoformat(), match.group(0)) for day in days]
    return named


def _period(unit: str, back: int, today: dt.date) -> list[dt.date]:
    """The days of the calendar week (from Monday) or month ``back`` of them before the one ``today`` is in; for a
    weekday (``back`` 0 for Monday), the latest one before ``today``, or the one of last week; for a span, the
    ``back`` days up to ``today``."""
    if unit == "days":
        return [today - dt.timedelta(days=n) for n in range(back - 1, -1, -1)]
    if unit == "weekday":
        return [today - dt.timedelta(days=(today.weekday() - back - 1) % 7 + 1)]
    if unit == "day of last week":
        return [today - dt.timedelta(days=today.weekday() + 7 - back)]
    if unit == "week":
        monday = today - dt.timedelta(days=today.weekday() + 7 * back)
        return [monday + dt.timedelta(days=n) for n in range(7)]
    month = today.month - back
    year, month = (today.year, month) if month >= 1 else (today.year - 1, month + 12)
    return [dt.date(year, month, day) for day in range(1, calendar.monthrange(year, month)[1] + 1)]

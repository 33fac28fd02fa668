"""The days a query names relative to today ("yesterday", "last week", "gestern", "先週"): daily logs' dates. Pure.

A daily log is named by its date (:mod:`.named_files`: ``2026-01-15`` ranks that day's log first), and an agent
asks "what did we do yesterday?" or "what happened last week?" as often as it writes the dates. Only words that
mean the same days in every language that writes them are taken: French "hier" is German "here", Chinese "前天"
("the day before yesterday") is also the end of "以前" and the start of "天气", so neither names a day. A weekday
alone ("on Friday") names no log: a past or a coming Friday, and a deploy that runs every Friday, read alike (the
index holds each date's weekday, so keyword search finds every Friday's log, the newest first:
:func:`.recency.names_a_weekday`); "last Friday" is the latest Friday before today.

A week is a calendar week from Monday (ISO 8601), a month a calendar month: "last week" on a Sunday is the week
before the one that ends that day, "this week" and "this month" run from their first day to their last. "3 days
ago" is that day; "two weeks ago" and "a month ago" that calendar week and month; a weekend its Saturday and Sunday.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
import unicodedata

from ..text.han_forms import simplified
from ..text.weekdays import ENGLISH, FEIRA, HAN_DAYS, KANJI_DAYS, NAMES
from ..textutil import either

# how many days back each word names; phrases before the words they contain ("day before yesterday")
DAYS_BACK: dict[str, int] = {
    "the day before yesterday": 2, "day before yesterday": 2, "yesterday": 1, "today": 0,
    "last night": 1, "tonight": 0, "this morning": 0, "this afternoon": 0, "this evening": 0,
    "vorgestern": 2, "gestern": 1, "heute": 0,  # German ("gestern Abend", "heute Morgen": the day word names it)
    "avant-hier": 2, "aujourd'hui": 0, "hier soir": 1, "hier matin": 1, "ce matin": 0, "ce soir": 0,  # French
    "anteayer": 2, "ayer": 1, "hoy": 0, "anoche": 1, "esta mañana": 0, "esta noche": 0,  # Spanish
    "anteontem": 2, "ontem": 1, "hoje": 0, "esta manhã": 0,  # Portuguese
    "l'altro ieri": 2, "ieri": 1, "oggi": 0, "stamattina": 0, "stasera": 0,  # Italian
    "eergisteren": 2, "gisteren": 1, "vandaag": 0, "gisteravond": 1, "vanmorgen": 0, "vanochtend": 0,  # Dutch
    "vanavond": 0,
    "позавчера": 2, "вчера": 1, "сегодня": 0,  # Russian
    "그저께": 2, "어제": 1, "오늘": 0, "어젯밤": 1,  # Korean (a particle may follow: 어제는)
    "一昨日": 2, "昨日": 1, "今日": 0, "昨夜": 1, "昨晩": 1, "今朝": 0, "今夜": 0, "今晩": 0,  # Japanese
    "昨天": 1, "今天": 0, "昨晚": 1, "今晚": 0, "今早": 0,  # Chinese
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
    "上周": ("week", 1), "上个星期": ("week", 1), "这周": ("week", 0), "本周": ("week", 0),  # Chinese (.han_forms: 上週)
    "上个月": ("month", 1), "这个月": ("month", 0), "本月": ("month", 0),
}  # fmt: skip
# The days up to today that a span names, today among them ("what changed in the past week?")
PERIODS |= {
    f"{word} {span}": ("days", days)
    for word in ("past", "last")
    for span, days in (("7 days", 7), ("2 weeks", 14), ("two weeks", 14), ("30 days", 30))
} | {"past week": ("days", 7), "past month": ("days", 30)}
# A weekday with "last" names the latest such day before today ("last Friday"); on its own it names none
_LAST_WEEKDAY = {  # each language's phrase, and its weekdays from Monday
    "last {}": " ".join(ENGLISH),
    "letzten {}": NAMES["de"],
    "{} dernier": NAMES["fr"],
    "{} pasado": NAMES["es"],
    "{} scorso": NAMES["it"],
    "afgelopen {}": NAMES["nl"],
    "vorige {}": NAMES["nl"],
    "{}-feira passada": FEIRA,  # Portuguese, and its weekend below
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
    "上周{}": " ".join(HAN_DAYS), "上星期{}": " ".join(HAN_DAYS),
    "先週の{}曜日": " ".join(KANJI_DAYS), "先週{}曜日": " ".join(KANJI_DAYS),
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
# A weekend is the Saturday and Sunday of a calendar week: "last weekend" on a Sunday is the one before this one
_WEEKENDS = {
    1: "last weekend|past weekend|letztes wochenende|letzten wochenende|vergangenes wochenende|vergangenen wochenende|"
    "le week-end dernier|le weekend dernier|el fin de semana pasado|fim de semana passado|lo scorso fine settimana|"
    "il fine settimana scorso|lo scorso weekend|il weekend scorso|afgelopen weekend|vorig weekend|"
    "на прошлых выходных|в прошлые выходные|지난 주말|지난주말|先週末|上周末|上个周末",
    0: "this weekend|dieses wochenende|diesem wochenende|ce week-end|ce weekend|este fin de semana|este fim de semana|"
    "neste fim de semana|questo fine settimana|questo weekend|dit weekend|на этих выходных|в эти выходные|이번 주말|"
    "이번주말|今週末|这周末|本周末|这个周末",
}
PERIODS |= {phrase: ("weekend", back) for back, phrases in _WEEKENDS.items() for phrase in phrases.split("|")}
# "A week ago" without its number, where a language drops it
PERIODS |= {"неделю назад": ("week", 1), "месяц назад": ("month", 1), "일주일 전": ("week", 1), "일주일전": ("week", 1),
            "한 달 전": ("month", 1), "한달 전": ("month", 1), "두 달 전": ("month", 2)}  # fmt: skip
DAYS_BACK |= {"이틀 전": 2, "사흘 전": 3}
# Han written as a query is matched: folded (:mod:`..text.han_forms`), so 上週 and 這個週末 are 上周 and 这个周末
DAYS_BACK = {simplified(word): back for word, back in DAYS_BACK.items()}
PERIODS = {simplified(phrase): period for phrase, period in PERIODS.items()}
# "3 days ago", "vor zwei Wochen", "a month ago", "三天前", "2주 전": the day so many days back, or the calendar week
# or month so many back (7 days ago is always in last week). The number is digits or a word; Chinese, Japanese and
# Korean write it onto the unit, with digits or a Han numeral.
_NUMBERS = {
    word: number
    for number, words in enumerate(
        ("", "a an one un une una uno um uma een ein eine einer einem один одну", "two deux dos dois duas due twee zwei два две",
         "three trois tres três tre drie drei три", "four quatre cuatro quatro quattro vier четыре",
         "five cinq cinco cinque vijf fünf пять", "six seis sei zes sechs шесть", "seven sept siete sete sette zeven sieben семь",
         "eight huit ocho oito otto acht восемь", "nine neuf nueve nove negen neun девять",
         "ten dix diez dez dieci tien zehn десять")
    )
    for word in words.split()
}  # fmt: skip
_HAN_NUMBERS = {han: number for number, han in enumerate("〇一二三四五六七八九十")} | {"两": 2}
_UNITS = {  # (spaced words, words written onto the number) of each unit
    "month": ("months month monaten monat mois meses mês mes mesi mese maanden maand месяцев месяца месяц",
              "个月 か月 ヶ月 カ月 ヵ月 개월 달"),
    "week": ("weeks week wochen woche semaines semaine semanas semana settimane settimana weken недель недели неделю",
             "个星期 星期 週間 周 주"),
    "day": ("days day tagen tag jours jour días día dias dia giorni giorno dagen dag дней дня день", "天 日 일"),
}  # fmt: skip
_UNIT_OF = {simplified(word): unit for unit, kinds in _UNITS.items() for words in kinds for word in words.split()}


_NUMBER = r"(?:\d{1,3}|" + either(_NUMBERS) + ")"
_HAN_DIGITS = "".join(_HAN_NUMBERS)
_HAN_NUMBER = rf"(?:\d{{1,3}}|[{_HAN_DIGITS}])"
_SPACED_UNIT = either(word for unit in _UNITS.values() for word in unit[0].split())
_HAN_UNIT = either(simplified(word) for unit in _UNITS.values() for word in unit[1].split() if not _HANGUL.match(word))
_HANGUL_UNIT = either(word for unit in _UNITS.values() for word in unit[1].split() if _HANGUL.match(word))
_SPACED_AGO = (  # "ago" after the number and unit, or before them
    rf"(?<![\w.])(?:(?:vor|il y a|hace|há) {_NUMBER} {_SPACED_UNIT}|{_NUMBER} {_SPACED_UNIT} (?:ago|atrás|fa|geleden|назад))"
    r"(?![\w(])"
)
_WRITTEN_ON_AGO = (  # the unit written onto the number, and "ago" onto both (3日前 is not part of 12月3日前, "before the 3rd")
    rf"(?=[\d{_HAN_DIGITS}])(?:(?<![\d{_HAN_DIGITS}月]){_HAN_NUMBER}{_HAN_UNIT}前"
    rf"|(?<![\d월])(?<!월 )\d{{1,3}} ?{_HANGUL_UNIT} ?전[\uac00-\ud7af]*)"
)
_AGO_WORD = re.compile(r"(?<!\w)(?:ago|atrás|fa|geleden|назад|vor|il y a|hace|há)(?!\w)", re.IGNORECASE)
_NUMBER_AND_UNIT = re.compile(  # the two inside what the patterns' ``ago`` group matched
    rf"(?<![^\W\d_])({_NUMBER}|{_HAN_NUMBER}) ?({either(_UNIT_OF)})", re.IGNORECASE
)
_WORDS = sorted([*DAYS_BACK, *PERIODS], key=len, reverse=True)  # the longest first: a phrase before its words
# "一" (Monday in 上周一) starts words too: 上周一起 is "last week, together", 上周一次 "once last week"
_NOT_AFTER_ONE = "(?![起次些下直样般共定点切个])"
_WORDS_PATTERN = (
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
    + ")"
)
# A number of days, weeks or months ago first; a spaced one is looked for only in a query with a word for "ago"
# (trying every number word at every word's start would more than double the pattern's cost)
_PATTERN = re.compile(rf"(?P<ago>{_WRITTEN_ON_AGO})|{_WORDS_PATTERN}", re.IGNORECASE)
_PATTERN_SPACED_AGO = re.compile(rf"(?P<ago>{_SPACED_AGO}|{_WRITTEN_ON_AGO})|{_WORDS_PATTERN}", re.IGNORECASE)


def named_days(text: str, today: dt.date) -> list[tuple[str, str]]:
    """Each day (``YYYY-MM-DD``) ``text`` names relative to ``today``, with the words that name it as written; a
    week or a month gives each of its days with the same words."""
    as_written = unicodedata.normalize("NFC", text).replace("’", "'")
    query = simplified(as_written)  # one character for one: a match's place is the same in both
    named: list[tuple[str, str]] = []
    for match in (_PATTERN_SPACED_AGO if _AGO_WORD.search(query) else _PATTERN).finditer(query):
        written = match.group(0).lower()
        if match.group("ago"):
            days = _ago(written, today)
        else:
            word = next(word for word in _WORDS if written.startswith(word))  # a Korean particle after it
            days = _period(*(("day", DAYS_BACK[word]) if word in DAYS_BACK else PERIODS[word]), today)
        named += [(day.isoformat(), as_written[match.start() : match.end()]) for day in days]
    return named


def _ago(written: str, today: dt.date) -> list[dt.date]:
    """The day, or each day of the calendar week or month, that a number of them ago names (``written``, as the
    patterns' ``ago`` group matched it)."""
    number, unit = _NUMBER_AND_UNIT.search(written).groups()  # type: ignore[union-attr]  # the group holds both
    back = int(number) if number.isdigit() else _NUMBERS.get(number, _HAN_NUMBERS.get(number, 0))
    return _period(_UNIT_OF[unit], back, today)


def _period(unit: str, back: int, today: dt.date) -> list[dt.date]:
    """The days of the calendar week (from Monday), weekend or month ``back`` of them before the one ``today`` is in;
    for a day, the one ``back`` days before ``today``; for a weekday (``back`` 0 for Monday), the latest one before
    ``today``, or the one of last week; for a span, the ``back`` days up to ``today``."""
    if unit == "day":
        return [today - dt.timedelta(days=back)]
    if unit == "days":
        return [today - dt.timedelta(days=n) for n in range(back - 1, -1, -1)]
    if unit == "weekday":
        return [today - dt.timedelta(days=(today.weekday() - back - 1) % 7 + 1)]
    if unit == "day of last week":
        return [today - dt.timedelta(days=today.weekday() + 7 - back)]
    monday = today - dt.timedelta(days=today.weekday() + 7 * back)
    if unit in ("week", "weekend"):
        return [monday + dt.timedelta(days=n) for n in (range(7) if unit == "week" else (5, 6))]
    year, month = divmod(today.year * 12 + today.month - 1 - back, 12)
    return [dt.date(year, month + 1, day) for day in range(1, calendar.monthrange(year, month + 1)[1] + 1)]

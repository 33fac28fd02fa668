"""The days a query names relative to today ("yesterday", "today", "gestern", "昨日"): a daily log's date. Pure.

A daily log is named by its date (:mod:`.named_files`: ``2026-01-15`` ranks that day's log first), and an agent
asks "what did we do yesterday?" as often as it writes the date. Only words that mean one day in every language
that writes them are taken: French "hier" is German "here", Chinese "前天" ("the day before yesterday") is also
the end of "以前" and the start of "天气", so neither names a day. Weekdays ("on Friday") and weeks are left out:
a past or a coming Friday, and a deploy that runs every Friday, read alike.
"""

from __future__ import annotations

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
# Words of scripts written with spaces stand alone; Han, kana and Hangul words are found inside the query's runs.
_UNSPACED = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_PATTERN = re.compile(
    "|".join(
        re.escape(word) if _UNSPACED.search(word) else rf"(?<![\w.]){re.escape(word)}(?![\w(])"  # not "date.today()"
        for word in sorted(DAYS_BACK, key=len, reverse=True)  # the longest first: a phrase before its words
    ),
    re.IGNORECASE,
)

def named_days(text: str, today: dt.date) -> list[tuple[str, str]]:
    """Each day (``YYYY-MM-DD``) ``text`` names relative to ``today``, with the word that names it as written."""
    query = unicodedata.normalize("NFC", text).replace("’", "'")
    return [
        ((today - dt.timedelta(days=DAYS_BACK[match.group(0).lower()])).isoformat(), match.group(0))
        for match in _PATTERN.finditer(query)
    ]

"""The days a query names by a date written as people write it: "October 13, 2023", "13 October", "19. November",
"19 de noviembre de 2026", "2026年11月19日", "11월 19일", "19.11.2026", "11/19/2026". Pure.

A daily log is named by its ISO date (:mod:`.named_files`), and a question names a day in words or in its
locale's numbers as often ("what did Dana say on November 19?"). A date without its year names that day in each
year up to today (those with a log are named): memory is asked about its past. A month with its year ("December
2023", "2023年12月") names each of its days. What names nothing: a month alone ("in June": June is also a name, May
a verb, and a month comes every year), and numbers without a year ("3/4", "1.5": fractions and decimals read
alike). A date written with slashes is read both ways, day first and month first, when both are dates
("3/4/2026": 3 April or 4 March).
"""

from __future__ import annotations

import calendar
import contextlib
import datetime as dt
import re
import unicodedata

from ..text.terms import fold_accents
from ..textutil import either

_MONTHS: dict[int, str] = {
    1: "january jan januar jänner janvier enero janeiro gennaio januari январь января январе",
    2: "february feb februar février febrero fevereiro febbraio februari февраль февраля феврале",
    3: "march mar märz mars marzo março maart март марта марте",
    4: "april apr avril abril aprile апрель апреля апреле",
    5: "may mai mayo maio maggio mei май мая мае",
    6: "june jun juni juin junio junho giugno июнь июня июне",
    7: "july jul juli juillet julio julho luglio июль июля июле",
    8: "august aug août agosto augustus август августа августе",
    9: "september sep sept septembre septiembre setiembre setembro settembre сентябрь сентября сентябре",
    10: "october oct oktober okt octobre octubre outubro ottobre октябрь октября октябре",
    11: "november nov novembre noviembre novembro ноябрь ноября ноябре",
    12: "december dec dezember dez décembre diciembre dezembro dicembre декабрь декабря декабре",
}
YEARS_BACK = 30  # a date without its year names that day in each of these years: the ones with a log are named
# each name as written and without its accents ("fevrier", "marz", "aout")
MONTH = {form: month for month, names in _MONTHS.items() for name in names.split() for form in (name, fold_accents(name))}
_MONTH_NAME = rf"(?P<name>{either(MONTH)})\.?(?!\w)"
_DAY = r"(?P<day>\d{1,2})"
_YEAR = r"(?P<year>\d{4})(?!\d)"
_OF = r"(?:(?:of|de)\s+)?"  # "13th of October", "19 de noviembre de 2026"
# English "may" after a number is a verb more often than a month ("step 3 may fail"): "3 May" then ends a clause
_NOT_A_VERB = r"(?:(?<!may)|(?<=may)(?=\s*(?:[,.;:!?)]|$)))"
_WORD_START = r"(?<![\w.,/-])"  # not inside a word or a number
_NUMBER_START = r"(?<![\d.,/\-A-Za-z_])"  # not inside a number or a Latin word: "会議は2026/11/19", "在11月19日"
_DIGIT = re.compile(r"\d")
# Each form of a date: a month's name with a day (and maybe a year), with its year alone, or numbers with a year.
_FORMS = [
    re.compile(start + pattern, re.IGNORECASE)
    for start, pattern in (
        (_WORD_START, rf"{_DAY}(?:\.|st|nd|rd|th|er|º|ª)?\s+{_OF}{_MONTH_NAME}(?:,?\s+{_OF}{_YEAR})?{_NOT_A_VERB}"),  # 13 Oct
        (_WORD_START, rf"{_MONTH_NAME}\s+{_DAY}(?:st|nd|rd|th)?(?![\w:])(?:,?\s+{_YEAR})?"),  # October 13, 2023; not 5:30
        (_WORD_START, rf"{_MONTH_NAME},?\s+{_OF}{_YEAR}"),  # December 2023
        (_NUMBER_START, r"(?:(?P<year>\d{4})\s*[年년]\s*)?(?P<month>\d{1,2})\s*[月월]\s*(?P<day>\d{1,2})\s*[日号號일]"),
        (_NUMBER_START, r"(?P<year>\d{4})\s*[年년]\s*(?P<month>\d{1,2})\s*[月월](?!\s*\d)"),  # 2023年12月
        (_NUMBER_START, r"(?P<year>\d{4})[/.](?P<month>\d{1,2})[/.](?P<day>\d{1,2})(?![\d/]|\.\d)"),  # 2026/11/19
        (_NUMBER_START, r"(?P<day>\d{1,2})\.\s?(?P<month>\d{1,2})\.\s?(?P<year>\d{4})(?!\d|\.\d)"),  # 19.11.2026
        (_NUMBER_START, r"(?P<first>\d{1,2})[/-](?P<second>\d{1,2})[/-](?P<year>\d{4}|\d{2})(?![\d/-]|\.\d)"),  # 11/19/26
    )
]


def written_dates(text: str, today: dt.date) -> list[tuple[str, str]]:
    """Each day (``YYYY-MM-DD``) ``text`` names by a written date, with the date as written, in order; a month
    with its year gives each of its days with the same words."""
    if not _DIGIT.search(text):  # every form holds a number: most queries are done here
        return []
    query = unicodedata.normalize("NFC", text)
    found: list[tuple[int, int, list[dt.date]]] = []
    for form in _FORMS:
        found += [(match.start(), match.end(), _days(match.groupdict(), today)) for match in form.finditer(query)]
    named: list[tuple[str, str]] = []
    end = 0
    # the earliest, then the longest, wins: "31 February 2026" is no day, and not February either
    for start, stop, days in sorted(found, key=lambda f: (f[0], -f[1])):
        if start >= end:
            named += [(day.isoformat(), query[start:stop]) for day in days]
            end = stop
    return named


def _days(groups: dict[str, str | None], today: dt.date) -> list[dt.date]:
    """The days one match names: none when its numbers are no date."""
    found = {key: value for key, value in groups.items() if value}
    year = int(found["year"]) if "year" in found else None
    if year is not None and year < 100:
        year += 2000  # 11/19/26
    if "first" in found:  # 3/4/2026: day first or month first, each when it is a date
        first, second = int(found["first"]), int(found["second"])
        return [day for m, d in dict.fromkeys([(second, first), (first, second)]) for day in _day(year, m, d, today)]
    month = MONTH[found["name"].lower()] if "name" in found else int(found["month"])
    if "day" not in found:  # a month of a year
        if year is None or not 1 <= month <= 12:
            return []
        return [dt.date(year, month, d) for d in range(1, calendar.monthrange(year, month)[1] + 1)]
    return _day(year, month, int(found["day"]), today)


def _day(year: int | None, month: int, day: int, today: dt.date) -> list[dt.date]:
    """The day, or none when it is no date; without its year, that day of each of the last :data:`YEARS_BACK`
    years, up to ``today``."""
    years = [year] if year is not None else range(today.year, today.year - YEARS_BACK, -1)
    days = []
    for candidate in years:
        with contextlib.suppress(ValueError):  # 29 February of a common year, 31 April
            days.append(dt.date(candidate, month, day))
    return [date for date in days if year is not None or date <= today]

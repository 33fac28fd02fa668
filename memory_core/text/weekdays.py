"""A weekday in any language keyword search reads, held and asked for as its English name. Pure.

The index adds the English weekday after a line that writes an ISO date (:mod:`.value_kinds`), so "what did I do
on Friday?" finds every Friday's log; but "was habe ich am Freitag gemacht?", "¿qué hice el viernes?",
"星期五做了什么" and "金曜日に何をした?" found nothing. So the index adds the English name after a weekday written
in German, French, Spanish, Portuguese, Italian, Dutch, Polish, Czech, Russian, Chinese, Japanese or Korean too
(:data:`FORMS`, with the base forms: :mod:`.base_forms`), and a query asks for such a weekday by its English name
(:func:`query_weekdays`): either way of writing a weekday finds both.

Portuguese's "segunda-feira" is two words ("segunda" alone is also "second"): only the pair is a weekday. Left out:
Russian "среда" and "среды" (also "environment"), Japanese 期日 ("due date", the end of Chinese 星期日; 星期天 and 周日
are Sunday's), and shortenings ("Fri" is Swedish "free", "Sat" and "Wed" are English words). In a query, a weekday
of a language that writes weekdays in lower case, capitalised after the query's first word, is a name ("ask
Domingo"), asked as it is.
"""

from __future__ import annotations

import re

from ..textutil import either

ENGLISH = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
# Each language's weekdays, Monday first (:mod:`..search.relative_days` reads "last Friday" in them too)
NAMES = {
    "de": "montag dienstag mittwoch donnerstag freitag samstag sonntag",
    "fr": "lundi mardi mercredi jeudi vendredi samedi dimanche",
    "es": "lunes martes miércoles jueves viernes sábado domingo",
    "it": "lunedì martedì mercoledì giovedì venerdì sabato domenica",
    "nl": "maandag dinsdag woensdag donderdag vrijdag zaterdag zondag",
    "pl": "poniedziałek wtorek środa czwartek piątek sobota niedziela",
    "cs": "pondělí úterý středa čtvrtek pátek sobota neděle",
}
# More of each day's forms, Monday first: German's "on Fridays" and plurals (not "Montage", also "assemblies"),
# French, Spanish and Italian plurals, words typed without their accent, German's other Saturday, Russian's, Polish's
# and Czech's cases (not Czech "patek" unaccented: Patek Philippe);
# and the pieces the index cuts Chinese, Japanese and Korean weekdays into that name the day (星期五: 星期, 期五)
_MORE_FORMS = """
montags lundis lunedi понедельник понедельника понедельнику понедельником понедельнике 周一 週一 期一 拜一 月曜 월요일
    poniedziałku poniedziałki poniedzialek pondeli;
dienstags dienstage dienstagen mardis martedi вторник вторника вторнику вторником вторнике 周二 週二 期二 拜二 火曜 화요일
    wtorku wtorki utery;
mittwochs mittwoche mittwochen mercredis miercoles mercoledi среду 周三 週三 期三 拜三 水曜 수요일 środę środy środzie sroda
    srode středu středy streda stredu;
donnerstags donnerstage donnerstagen jeudis giovedi четверг четверга четвергу четвергом четверге 周四 週四 期四 拜四 木曜
    목요일 czwartku czwartki čtvrtku ctvrtek ctvrtku;
freitags freitage freitagen vendredis venerdi пятница пятницу пятницы пятнице пятницей 周五 週五 期五 拜五 金曜 금요일 piątku
    piątki piatek piatku pátku;
samstags samstage samstagen sonnabends samedis sábados sabados sabado sabati sonnabend суббота субботу субботы
    субботе субботой 周六 週六 期六 拜六 土曜 토요일 sobotę soboty sobocie sobote sobotu;
sonntags sonntage sonntagen dimanches domingos domeniche воскресенье воскресенья воскресенью воскресеньем 周日 週日
    期天 拜日 拜天 日曜 일요일 niedzielę niedzieli niedziele neděli nedele nedeli
"""
# Portuguese names Monday to Friday by a number and "feira" ("sexta-feira", "sextas-feiras"); the number alone is
# also an ordinal ("segunda": "second"), so only the pair names the day
FEIRA = "segunda terça quarta quinta sexta"  # Monday to Friday (:mod:`..search.relative_days`: "sexta-feira passada")
FEIRA_DAYS = {word: ENGLISH[day] for day, word in enumerate(FEIRA.split())} | {"terca": "tuesday"}  # and unaccented
FEIRAS = frozenset({"feira", "feiras"})
_DAY_FORMS = [[names.split()[day] for names in NAMES.values()] + more.split() for day, more in enumerate(_MORE_FORMS.split(";"))]
FORMS = {form: ENGLISH[day] for day, forms in enumerate(_DAY_FORMS) for form in forms}
"""Each form a note may write a weekday in (a token the index cuts, lower case), with its English name."""

# A weekday the query writes: a word of a spaced script, or a Chinese, Japanese or Korean weekday whole. Chinese 周X
# is also a name (周 is a surname: 周一鸣, 周一围) and starts "once a week" (每周一次) or "together" (这周一起): it is
# a weekday where the query goes on with no Han character, or with one a weekday is followed by (a time of day, a
# particle, a pronoun, a common verb: 周一上午, 周一下午, 周五的会, 周三我, 周日去).
HAN_DAYS = "一二三四五六日"  # Chinese writes the weekdays after 星期 or 周, Monday first (星期天 is Sunday too)
KANJI_DAYS = "月火水木金土日"  # Japanese writes them before 曜日
_HANGUL_DAYS = "월화수목금토일"  # Korean before 요일
_AFTER_WEEKDAY = "上早晚中的了在去要有和开開做见見前后後到是会會还還就都又再我你他她们們"
_SPACED = [form for form in FORMS if max(form) < "\u3040"]  # Latin, Greek and Cyrillic forms
_QUERY_WEEKDAY = re.compile(
    rf"(?<![\w-])(?:(?P<word>{either(_SPACED)})|(?P<feira>{either(FEIRA_DAYS)})s?[- ]feiras?)(?![\w-])"
    rf"|(?:星期|礼拜|禮拜)(?P<han>[{HAN_DAYS}天])|[周週](?P<week>[{HAN_DAYS}])(?:(?![\u3400-\u9fff])|(?=[{_AFTER_WEEKDAY}]|下午))"
    rf"|(?P<kanji>[{KANJI_DAYS}])曜日?|(?P<hangul>[{_HANGUL_DAYS}])요일[\uac00-\ud7af]*",  # with its particle
    re.IGNORECASE,
)
_GERMAN = (*NAMES["de"].split(), "sonnabend")  # German writes its weekdays with a capital
_FIRST_LETTER = re.compile(r"[^\W\d_]")
_LOWER_CASE = frozenset(form for form in _SPACED if not form.startswith(_GERMAN))


def query_weekdays(query: str) -> str:
    """``query`` with each weekday it writes in another language written as its English name: "am Freitag" -> "am
    friday", "星期五做了什么" -> " friday 做了什么"."""
    first = _FIRST_LETTER.search(query)
    return _QUERY_WEEKDAY.sub(lambda found: _english(found, first.start() if first else 0), query)


def _english(found: re.Match[str], first: int) -> str:
    written = found.group(0)
    if word := found.group("word"):
        is_name = word[0].isupper() and found.start() > first and word.lower() in _LOWER_CASE
        return written if is_name else FORMS[word.lower()]
    if day := found.group("feira"):
        return FEIRA_DAYS[day.lower()]
    if day := found.group("han") or found.group("week"):
        return f" {ENGLISH[HAN_DAYS.index(day) if day != '天' else 6]} "  # 日 and 天 are both Sunday
    if day := found.group("kanji"):
        return f" {ENGLISH[KANJI_DAYS.index(day)]} "
    return f" {ENGLISH[_HANGUL_DAYS.index(found.group('hangul'))]} "

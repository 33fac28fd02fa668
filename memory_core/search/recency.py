"""The words with which a query asks for the newest of what it names ("what's the latest on the pricing
project?", "when did I last see the physio?", "上次开会说了什么"). Pure.

Such a query is answered by the newest daily log that holds its subject, not by the one that holds it most often:
its dated notes are ranked as temporal decay ranks them, counted back from the newest dated candidate
(:func:`.ranking.rank_keyword`). The words that ask so are not searched: notes seldom say "latest" of themselves,
and "zuletzt" or "最新" would be named as words the memory lacks. "Recently" and "lately" are not such words: "what
did Melanie paint recently?" asks for a painting, whenever the memory says it was recent, and LoCoMo's chats ask
so of their own days.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from ..text.weekdays import ENGLISH

_LATEST = re.compile(
    r"(?<!\w)(?:"
    r"latest|newest|most recent(?:ly)?|last time"  # English, and "last" of "when did I last", not of "when was the last"
    r"|when (?:did|was|were|has|have|had) (?:\w+ ){1,4}(?<!the )(?P<last>last)"
    r"|zuletzt|neuesten?|neuester|neuestes|das letzte mal|letztes mal"  # German
    r"|la dernière fois|le plus récent|la plus récente|les plus récents|les plus récentes|dernières nouvelles"  # French
    r"|la última vez|lo último|lo más reciente|más recientes?"  # Spanish
    r"|a última vez|mais recentes?"  # Portuguese
    r"|l'ultima volta|più recenti?"  # Italian
    r"|de laatste keer|meest recente|nieuwste"  # Dutch
    r"|в последний раз|последний раз|последние новости"  # Russian
    r")(?!\w)"
    r"|最新|上次|上一次|最近一次|前回|최신|지난번",  # Chinese, Japanese, Korean
    re.IGNORECASE,
)


def without_latest(text: str) -> str | None:
    """What ``text`` searches for when it asks for the newest of what it names: the query without the words that
    ask so (of "when did I last see the physio?" only "last"); None when it asks nothing of the kind."""
    query = unicodedata.normalize("NFC", text).replace("’", "'")
    cuts = [match.span("last") if match.group("last") else match.span() for match in _LATEST.finditer(query)]
    if not cuts:
        return None
    starts, ends = [0, *(end for _, end in cuts)], [*(start for start, _ in cuts), len(query)]
    return " ".join(query[start:end] for start, end in zip(starts, ends, strict=True))


def names_a_weekday(terms: Iterable[str]) -> bool:
    """Whether a query's terms name a weekday ("what did I do on Friday?", "am Freitag", "星期五" are all searched
    as ``friday``: :mod:`..text.weekdays`). Such a query asks for the latest such day, as "last Friday" does, but
    names no log (:mod:`.relative_days`): the newest Friday's log ranks before the older ones that hold as much of
    it, unless the query names a day itself ("the Monday before July 24": the searcher asks). A plural ("what do we
    do on Fridays?") asks for every Friday, and is searched as it is."""
    return not _WEEKDAYS.isdisjoint(terms)


_WEEKDAYS = frozenset(ENGLISH)

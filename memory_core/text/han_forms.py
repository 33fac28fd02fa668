"""Traditional Chinese characters folded into their simplified forms, in the index and in queries. Pure.

A memory may hold Chinese in both forms: notes typed in Taiwan or Hong Kong (資料庫, 會議), others pasted from
the mainland web or written by an agent that answers in simplified characters (数据库, 会议). FTS5 holds the two
forms as unrelated characters, so "會議" did not find "会议", and a query's traditional question words (什麼,
為什麼) were not cut off as the simplified ones are. As search engines do, memdex writes each traditional
character as its simplified form (OpenCC's table, ``han_forms.txt`` beside this module) wherever it cuts text
into terms, as it folds Latin accents; snippets show the text as written. Japanese kanji that are also
traditional forms (東, 機) fold alike in notes and queries.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files


@cache
def _table() -> dict[int, str]:
    """Each traditional character's code point -> its simplified form, read once."""
    text = files(__package__).joinpath("han_forms.txt").read_text(encoding="utf-8")
    pairs = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    return {ord(traditional): simple for traditional, simple in pairs}


def simplified(text: str) -> str:
    """``text`` with every traditional Chinese character written as its simplified form (会 for 會)."""
    return text.translate(_table())

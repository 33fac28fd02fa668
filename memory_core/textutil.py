"""Small text helpers shared by the chunker, the reader, the search results and refusals of arguments."""

from __future__ import annotations

import codecs
import hashlib
import re
from collections.abc import Iterable


def either(words: Iterable[str]) -> str:
    """A regular-expression group that matches any of ``words`` as written, the longest first (so a phrase is tried
    before a word it starts with)."""
    return "(?:" + "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)) + ")"


def split_lines(text: str) -> list[str]:
    """Split text into lines the way editors number them: on ``\\n``, dropping a trailing ``\\r``.

    A final newline does not start an extra line, so ``"a\\nb\\n"`` has two lines.
    """
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def is_unicode(text: str) -> bool:
    """Whether ``text`` is Unicode text, which UTF-8 can write. Python holds bytes that were not UTF-8 (in a file
    name, a command-line argument) as lone surrogates, which no file, index row or JSON answer can carry."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def with_replacements(text: str) -> str:
    """``text`` with each lone surrogate written as U+FFFD, as a bad byte of a file is: JSON may escape one (half an
    emoji that a JavaScript writer cut in two), and no index row can hold it."""
    return text if is_unicode(text) else _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def is_utf16(data: bytes) -> bool:
    """Whether a file's bytes start with a UTF-16 byte-order mark: a Markdown file saved by Windows PowerShell 5's
    ``>`` or ``Out-File``, or as Notepad's "Unicode"."""
    return data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))


def decode_text(data: bytes) -> str:
    """A memory file's bytes (or its UTF-8 bytes from a line start) as text: UTF-8, a bad byte as U+FFFD, and
    without the byte-order mark some Windows editors put first, which is no character of the notes. A whole
    file that starts with a UTF-16 byte-order mark is read as UTF-16."""
    if is_utf16(data):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace").removeprefix("\ufeff")


def sha256_hex(data: str | bytes) -> str:
    """Hex SHA-256 of bytes, or of a string's UTF-8 encoding."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def clip(text: str, limit: int) -> str:
    """Cut text to at most ``limit`` characters (code points, so no surrogate pair is split)."""
    return text if len(text) <= limit else text[:limit]


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: a refused argument quoted back, never at its full size."""
    return shortened(repr(value), limit)


def shortened(text: str, limit: int = 40) -> str:
    """``text`` cut to ``limit`` characters, ``...`` marking the cut."""
    return text if len(text) <= limit else f"{text[: limit - 3]}..."

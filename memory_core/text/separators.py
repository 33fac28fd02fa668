"""unicode61's tokens: its pattern, and its cut at ASCII separators in one pass over the UTF-8 bytes. Pure.

Python's regex scans are slow; turning every ASCII byte but a letter or digit into a space and splitting at spaces
gives unicode61's tokens of ASCII text 2.6 times as fast as a token pattern (docs/benchmarks.md).
"""

from __future__ import annotations

import re

TOKEN = re.compile(r"[^\W_]+")  # unicode61's tokens: letters and digits (a combining mark separates, as there)

# every ASCII byte but a letter or digit, as a space (the bytes of other characters, 128 and up, kept)
_ASCII_SEPARATORS_TO_SPACE = bytes(byte if byte >= 128 or chr(byte).isalnum() else ord(" ") for byte in range(256))


def cut_at_ascii_separators(text: str) -> list[str]:
    """``text`` cut at every ASCII character but a letter or a digit: unicode61's tokens when ``text`` is ASCII;
    a piece may hold other characters otherwise (an accent, a dash ``—``, a CJK run)."""
    return text.encode().translate(_ASCII_SEPARATORS_TO_SPACE).decode().split()

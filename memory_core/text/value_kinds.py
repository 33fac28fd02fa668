"""The kind of value a line writes without naming it: a web address, an email address, an IP address. Pure.

"Grafana: https://grafana.internal.acme.io" answers "what's the Grafana URL?", "Dana Ruiz <dana@acme.io>" answers
"what's Dana's email?", and "NAS at 192.168.1.20" answers "what's the IP of the NAS?", but none of them says "URL",
"email" or "IP": keyword search ranked first any other note on Grafana, Dana or the NAS. The index adds the kind's
words after a line that writes such a value (as :mod:`.base_forms` adds a word's base form), so the question finds
the note that holds the value. Phone numbers are left out: written as digits with spaces, dots or dashes, they read
as dates, times, prices and ticket numbers as often.
"""

from __future__ import annotations

import re

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://\w")
_EMAIL = re.compile(r"\w@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_IPV4 = re.compile(r"\d(?<![\d.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?!\d|\.\d)")  # a sentence may end after it
_DOTTED = re.compile(r"\.\d{1,3}\.\d")  # what an IP address holds: a tenth of the time of _IPV4's scan
_URL_WORDS = ("url", "link", "website")


def value_kinds(line: str) -> list[str]:
    """The words that name the kinds of value ``line`` writes (each kind once): ``["email"]`` for a line with an
    email address. A search takes them of every line of its candidates: a cheap test comes first."""
    kinds: list[str] = []
    if "://" in line and _URL.search(line):
        kinds += _URL_WORDS
    if "@" in line and _EMAIL.search(line):
        kinds.append("email")
    if _DOTTED.search(line) and _IPV4.search(line):
        kinds.append("ip")
    return kinds


def with_value_kinds(text: str) -> str:
    """``text`` with the :func:`value_kinds` of each of its lines after it: the index's term counts, as
    :func:`value_kinds` gives them line by line to the Python side."""
    if "://" not in text and "@" not in text and _DOTTED.search(text) is None:  # most chunks: no line to look at
        return text
    added = [word for line in text.split("\n") for word in value_kinds(line)]
    return f"{text} {' '.join(added)}" if added else text

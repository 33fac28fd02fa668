"""Robustness variants of an evaluation set: the same judgements on another shape of data. Pure functions.

* ``full``   - the set as loaded.
* ``titles`` - each document cut to its title: ``# title``, a blank line, the title again as the body (a
  stand-in for short memory notes and one-line facts). A document without a title keeps its first
  non-blank body line instead. Not applicable to chat sets (LoCoMo): a session file's first line is its
  date heading, and its turns are already one-line notes.
* ``q3``     - each query cut to its first 3 content words: memdex's own terms (``terms.query_terms``:
  lower-cased, distinct, its stop words dropped). Chinese and Japanese have no spaces and memdex no
  dictionary, so there a "word" is two characters: the query's Han/kana text with ``segments``' CJK stop
  words cut out, kept to its first 6 characters (the runs joined by spaces).
* ``typo``   - one word of each query misspelled: its longest content word (the first of equal length)
  gets two adjacent inner letters swapped, or one inner letter dropped (seeded by the query id, so every
  run asks the same). In Chinese and Japanese the same happens to the longest content run (characters
  swapped or one dropped): no spelling there, and a homophone slip would need a dictionary.

Only the queries or the documents change; the relevant documents (and LoCoMo's evidence lines) stay as
they are, so every figure is judged exactly like the set's ``full`` one.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from memdex.memory_core.text.segments import CJK_STOPWORDS
from memdex.memory_core.text.separators import TOKEN
from memdex.memory_core.text.terms import query_terms

if TYPE_CHECKING:
    from bench.quality import Query, Suite

VARIANTS = ("full", "titles", "q3", "typo")
QUERY_WORDS = 3  # q3: content words kept
CJK_WORD_CHARS = 2  # q3: characters per "word" in Chinese and Japanese

# A run of Han or kana characters (the scripts written without spaces between words).
CJK_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3005\u3041-\u3096\u309d\u309e\u30a1-\u30fa\u30fc-\u30ff]+")
_CJK_STOP = re.compile("|".join(map(re.escape, CJK_STOPWORDS)))
_LETTERS = re.compile(r"[^\W\d_]+")


def parse_variants(specs: Sequence[str]) -> list[str]:
    """Variant names from repeatable, comma-separated ``--variant`` values (default ``full``); duplicates
    dropped. Raises ValueError naming the choices for an unknown one."""
    names = [name.strip() for spec in specs or ["full"] for name in spec.split(",") if name.strip()]
    if unknown := [name for name in names if name not in VARIANTS]:
        raise ValueError(f"unknown variant(s) {', '.join(unknown)}: use {', '.join(VARIANTS)}")
    return list(dict.fromkeys(names))


def title_note(text: str) -> str:
    """A ``# title`` note cut to its title (the title again as the body); untitled: its first body line."""
    lines = [line.strip() for line in text.splitlines()]
    title = lines[0].removeprefix("#").strip() if lines and lines[0].startswith("#") else ""
    if not title:
        title = next((line for line in lines if line and line != "#"), "")
    return f"# {title}\n\n{title}\n"


def _content_cjk(text: str) -> list[str]:
    """The query's Han/kana runs, cut at CJK stop words, in order."""
    return [piece for run in CJK_RUN.findall(text) for piece in _CJK_STOP.split(run) if piece]


def first_words(text: str, count: int = QUERY_WORDS) -> str:
    """The first ``count`` content words of a query (CJK: its first ``count`` two-character "words")."""
    runs = _content_cjk(text)
    if runs:
        kept, left = [], count * CJK_WORD_CHARS
        for run in runs:
            if left > 0:
                kept.append(run[:left])
                left -= len(kept[-1])
        return " ".join(kept)
    written = _as_written(text)
    return " ".join(written.get(term, term) for term in query_terms(text)[:count]) or text  # stop words only: as asked


def _as_written(text: str) -> dict[str, str]:
    """The query's search terms that it does not write as they are ("find" of "found", a Russian stem), each
    with the word that gives it: a variant's query keeps the words as asked, whatever memdex searches them as."""
    words = [word.lower() for word in TOKEN.findall(text)]
    return {term: word for word in reversed(words) for term in query_terms(word) if term not in words}


def misspell_word(word: str, rng: random.Random) -> str:
    """``word`` with two adjacent inner characters swapped or one inner character dropped (3+ characters;
    shorter words come back whole). Never returns ``word`` unchanged when it has 3+ characters."""
    if len(word) < 3:
        return word
    at = rng.randrange(1, len(word) - 1)  # an inner position: the first and last characters stay
    if rng.random() < 0.5 and at + 2 < len(word) and word[at] != word[at + 1]:  # both inner
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    return word[:at] + word[at + 1 :]


def misspell(text: str, seed: str) -> str:
    """``text`` with its longest content word misspelled (:func:`misspell_word`); CJK: its longest content run."""
    rng = random.Random(seed)
    if runs := _content_cjk(text):
        target = max(runs, key=len)
    else:
        written = _as_written(text)
        content = set(query_terms(text)) - written.keys() | set(written.values())
        words = [w for w in _LETTERS.findall(text) if w.lower() in content] or _LETTERS.findall(text)
        if not words:
            return text
        target = max(words, key=len)
    return text.replace(target, misspell_word(target, rng), 1)


def apply_variant(suite: Suite, variant: str) -> Suite | None:
    """``suite`` as ``variant`` (None when it does not apply: ``titles`` of a chat set).

    Its name gets ``+variant`` (the report's label) and its published references go (they are the full set's);
    ``titles`` also gets its own cache folder (other files), while ``q3`` and ``typo`` keep the set's
    workspace and index, since only their queries differ.
    """
    if variant == "full":
        return suite
    suite = replace(suite, references=[], notes=[*suite.notes, f"variant {variant}: see bench/variants.py"])
    if variant == "titles":
        if suite.level != "document":
            return None
        workspaces = [replace(ws, files={p: title_note(t) for p, t in ws.files.items()}) for ws in suite.workspaces]
        return replace(suite, name=f"{suite.name}+titles", cache=f"{suite.folder}-titles", workspaces=workspaces)
    def asked(query: Query) -> Query:
        return replace(query, text=first_words(query.text) if variant == "q3" else misspell(query.text, query.qid))

    workspaces = [replace(ws, queries=[asked(q) for q in ws.queries]) for ws in suite.workspaces]
    return replace(suite, name=f"{suite.name}+{variant}", cache=suite.folder, workspaces=workspaces)

"""A compound the query and the notes write differently: one word in one, two in the other. Pure.

German, Dutch and the Nordic languages write a compound as one word ("Datenbankmigration") and also with a
hyphen or apart ("Datenbank-Migration"); English does both too ("healthcare", "health care"). The index
holds words as they are written, so a query that wrote a compound the other way found nothing. Two cases are
looked up, from the query's words and the notes' own:

* a query word no note holds, that notes write as two words side by side (:func:`split_words`);
* two query words written apart or with a hyphen, one of which no note holds, that notes write as one word
  (:func:`query_pairs`, :func:`joined_words`), or two that no note holds, in either order (:func:`missing_pairs`);
* a query word no note holds on its own, that notes hold as the first part of longer words: "Schlüssel" of
  "Schlüsseldienst" (:func:`compound_heads`), or as the last: "Migration" of "Datenbankmigration"
  (:func:`compound_tails`).

Unlike a misspelling's hint (:mod:`.near_words`), the notes attest what the query asked, so the memory
answers by the words they write.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import islice

from ..text.inflections import porter_stem
from ..text.segments import WORD, query_pieces
from ..text.terms import MAX_TERMS, fold_accents

MIN_PART = 3  # letters in each part of a word cut in two ("Haus" + "tür", "data" + "base")
MAX_WORDS = 3  # words cut per query, at most: each costs a phrase count per place it can be cut
MIN_JOINED = 5  # letters in two words joined into one: shorter joins are mostly short words ("u s" is no "us")
MIN_HEAD = 4  # letters in a query word looked up as the first part of the notes' words ("Auto" of "Autobahn")
# Letters in the rest of such a word. At 3, English endings the stemmer keeps passed as words a scientific memory
# holds on their own: SciFact's "port" was searched as "portion" ("ion"), "portend" ("end") and "portrai" ("rai").
# At 4 a compound's short last part is lost with them ("Tür" of "Haustür").
MIN_REST = 4
MAX_HEADS = 3  # the notes' words a query word is searched as, at most: those the most chunks hold
# Letters of a word's end that the index's porter stems may cut from a compound and not from the word alone,
# at most: "Datenbankmigration" is held as "datenbankmigr", "Migration" as "migrat". Porter's longest suffixes
# ("ational", "ization") are seven letters.
MAX_CUT = 7
# English endings that are words too: a word that ends in one is no kind of it ("homeless", "relationship",
# "otherwise"), so they are not looked up as a compound's last part.
ENDINGS = frozenset({"able", "hood", "less", "ness", "ship", "ships", "ward", "wards", "wise"})
# The endings German and Dutch nouns take that porter keeps: a compound's last part inflected ("Migrationen")
INFLECTIONS = ("e", "en", "er", "es", "n", "s")
LINKS = ("s",)  # what German, Dutch and the Nordic languages may put between a compound's parts ("Geburtstagsfeier")
HEAD_TERMS = 30  # the index's terms read per word looked up, the most held first
# The endings porter's fourth step cuts from a word of two syllables or more and keeps on a shorter one, as written
# ("ation" stems to "at" first): a compound's last part may be held without them ("datenbankmigr", "lieferantenport")
# where the word alone keeps them ("migrat", "portal").
PORTER_CUTS = ("ation", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ism", "ity", "ive", "ize", "ous")
MAX_CUT_LOOKUPS = 10  # the longer words, the most held first, whose rest is looked up as porter cuts it
_ALPHABETS_END = "\u0530"  # Latin, Greek and Cyrillic letters come before it
_APART = r"[ \t\-\u2010\u2011]+"  # how a compound's parts are written apart: spaces or a hyphen
_ENDING = r"[^\W\d_]{0,2}"  # an inflection a compound's last part may take in the notes ("Migrationen", "cares")

Count = Callable[[Sequence[str]], Mapping[str, int]]


def alphabetic(word: str) -> bool:
    """Whether ``word`` is letters of the Latin, Greek or Cyrillic alphabet only, the scripts that write words
    apart and compounds either way (CJK, Thai and Korean runs are cut into terms otherwise: :mod:`..text.segments`)."""
    return word.isalpha() and max(word) < _ALPHABETS_END


def splittable(term: str) -> bool:
    """Whether ``term`` is a word that may be a compound: :func:`alphabetic`, long enough for two parts."""
    return len(term) >= 2 * MIN_PART and alphabetic(term)


def split_words(
    missing: Sequence[str], count: Count, texts: Callable[[str], Iterable[str]], is_term: Callable[[str], bool]
) -> dict[str, str]:
    """For each word of ``missing`` (words no note holds) that notes write as two words side by side, the phrase
    of those two words: of the cuts the notes write so, the one the most chunks hold. Words with no such cut are
    left out. A phrase is a search term of its own, as an identifier's parts are ("memory_core"): the stores
    match it as one, so "bookshelf" asked of "a book shelf" weighs as one term and not as "book" and "shelf".

    ``count`` says how many chunks hold each of some phrases (a phrase is its words with a space between,
    as the stores match a quoted phrase: "Datenbank-Migration" holds ``datenbank migration``); ``texts`` gives
    a few chunks that hold one. The stores match stems and skip punctuation, so a cut counts only where a
    chunk writes it as a compound: "associaed" is no "associ aed" in "associated AED", "bookshelf" no "book
    shelf" in "a book. Shelf", "performane" no "perform ane" in "perform anesthesia". ``is_term`` says
    whether a part is a search term on its own (not a stop word: "therapist" is never "the rapist").
    """
    words = [word for word in dict.fromkeys(missing) if splittable(word)][:MAX_WORDS]
    cuts = {
        word: [(word[:i], word[i:]) for i in range(MIN_PART, len(word) - MIN_PART + 1) if is_term(word[:i]) and is_term(word[i:])]
        for word in words
    }
    phrases = [f"{head} {tail}" for parts in cuts.values() for head, tail in parts]
    held = count(phrases) if phrases else {}
    found: dict[str, str] = {}
    for word, parts in cuts.items():
        ranked = sorted((part for part in parts if held.get(" ".join(part), 0) > 0), key=lambda part: -held[" ".join(part)])
        if written := next((part for part in ranked if _writes(texts(" ".join(part)), part)), None):
            found[word] = " ".join(written)
    return found


def _writes(texts: Iterable[str], parts: tuple[str, str]) -> bool:
    """Whether one of ``texts`` writes ``parts`` as two words apart or with a hyphen, the first as it stands and
    the second with at most two more letters ("Datenbank-Migrationen", "health cares")."""
    written = _apart(*parts, ending=_ENDING)
    return any(written.search(_plain(text)) for text in texts)


def _apart(head: str, tail: str, ending: str = "") -> re.Pattern[str]:
    """The two words written apart or with a hyphen, whole (``tail`` followed by ``ending``), in :func:`_plain` text."""
    return _whole(f"{re.escape(fold_accents(head))}{_APART}{re.escape(fold_accents(tail))}{ending}")


def _whole(pattern: str) -> re.Pattern[str]:
    """``pattern`` matched only as a whole word: no letter or digit right before or after it."""
    return re.compile(rf"(?<![^\W_]){pattern}(?![^\W_])")


def _plain(text: str) -> str:
    """``text`` lower-cased, accents folded, as query terms are compared with it."""
    return fold_accents(unicodedata.normalize("NFKC", text).lower())


def query_pairs(text: str) -> list[tuple[str, str]]:
    """The query's terms written apart or with a hyphen, with nothing else between ("Haus Tür", "E-Mail"):
    the pairs a note may write as one word. Not "center (e.g." nor "U.S.", whose letters punctuation parts."""
    pieces = [term if weight == WORD else None for term, weight in islice(query_pieces(text), MAX_TERMS * 2)]
    plain = _plain(text)
    return [
        (head, tail)
        for head, tail in zip(pieces, pieces[1:])
        if head and tail and head != tail and _apart(head, tail).search(plain)
    ]


def missing_pairs(missing: Sequence[str]) -> list[tuple[str, str]]:
    """Two query words no note holds, in either order, wherever the query writes them: a compound's parts as a
    question names them, the other way round and apart ("Termin beim Zahnarzt" of "Zahnarzttermin"). Of the first
    :data:`MAX_WORDS` such words in the Latin, Greek or Cyrillic alphabets."""
    words = [word for word in dict.fromkeys(missing) if alphabetic(word)][:MAX_WORDS]
    return [(head, tail) for head in words for tail in words if head != tail]


def joined_words(
    pairs: Iterable[tuple[str, str]], missing: Sequence[str], count: Count, is_term: Callable[[str], bool]
) -> dict[tuple[str, str], str]:
    """For each pair of query words side by side (``pairs``, in order), one of them in ``missing``, that notes
    write as one word: that word, of :data:`MIN_JOINED` letters or more ("E-Mail" of "email"), or with a linking
    "s" between (:data:`LINKS`: "Rechnung Export" of "Rechnungsexport"). ``count`` says
    how many chunks hold each of some words; ``is_term``, as for :func:`split_words`, keeps out a stop word."""
    lacking = set(missing)
    joins = {
        head + link + tail: (head, tail)
        for head, tail in pairs
        for link in ("", *LINKS)
        if (head in lacking or tail in lacking) and len(head + tail) >= MIN_JOINED and alphabetic(head + tail) and is_term(head + link + tail)
    }
    held = count(list(joins)) if joins else {}
    found: dict[tuple[str, str], str] = {}
    for word, pair in joins.items():  # written without a link first
        if held.get(word, 0) > 0:
            found.setdefault(pair, word)
    return found


def compound_heads(
    missing: Sequence[str],
    starting: Callable[[str], Mapping[str, int]],
    count: Count,
    is_term: Callable[[str], bool],
    texts: Callable[[str], Iterable[str]] = lambda term: (),
) -> dict[str, tuple[str, ...]]:
    """For each word of ``missing`` (words no note holds) that notes hold as the first part of longer words, the
    :data:`MAX_HEADS` of those words the most chunks hold: "Schlüssel" is searched as "Schlüsseldienst" and
    "Schlüsselbund", "Auto" as "Autobahn". Words with none are left out.

    The notes are the dictionary: a longer word counts only when its rest, of :data:`MIN_REST` letters or more,
    is a word they hold on its own ("Dienst", "Bahn"), so "card" is not "cardiac", "part" not "partnership", and
    "teach" not "teacher" (the index's terms are porter stems, which keep "-er"). The rest may start with a
    linking "s" ("Rechnungsexport": "Export") and may be cut shorter than the word alone is held
    (:func:`_rest_forms`: "Datenbankmigration" is held as "datenbankmigr", "Migration" as "migrat"). Such a
    word is searched as a note writes it (``texts`` gives a few chunks that hold a term), since memdex's own keys
    take no derivational ending off ("lieferantenportal", held "lieferantenport"); one no chunk writes is left out.

    ``starting`` gives the index's terms that begin with a word, with how many chunks hold each (the most held
    first); ``count`` counts some terms as the search does; ``is_term``, as for :func:`split_words`, keeps out
    stop words. Only words of :data:`MIN_HEAD` letters or more in the Latin, Greek or Cyrillic alphabets are
    looked up, at most :data:`MAX_WORDS`."""
    words = [word for word in dict.fromkeys(missing) if len(word) >= MIN_HEAD and alphabetic(word)][:MAX_WORDS]
    longer: dict[str, list[tuple[str, str]]] = {}  # word -> its longer terms, each with its rest
    for word in words:
        prefix = fold_accents(word)
        longer[word] = [
            (term, term[len(prefix) :])
            for term in starting(prefix)
            if len(term) >= len(prefix) + MIN_REST and alphabetic(term) and is_term(term)
        ]
    pairs = [pair for found in longer.values() for pair in found]
    asked = list(dict.fromkeys(part for term, rest in pairs for part in (term, *_rest_forms(rest, cut=False))))
    held = dict(count(asked)) if asked else {}
    # the rests held in no form as written, looked up as porter cuts them, for the longer words the most held
    uncut = [rest for term, rest in pairs if held.get(term, 0) > 0 and not _rest_held(rest, held, is_term)]
    cut = {rest: _rest_forms(rest) for rest in uncut[:MAX_CUT_LOOKUPS]}
    if unasked := list(dict.fromkeys(form for forms in cut.values() for form in forms if form not in held)):
        held |= count(unasked)
    found: dict[str, tuple[str, ...]] = {}
    for word, terms in longer.items():
        chosen: dict[str, None] = {}  # in order, once each
        for term, rest in terms:
            if len(chosen) == MAX_HEADS:
                break
            if held.get(term, 0) <= 0:
                continue
            if _rest_held(rest, held, is_term):
                chosen[term] = None
            elif any(held.get(form, 0) > 0 and is_term(form) for form in cut.get(rest) or _rest_forms(rest)):
                if written := _written_word(texts(term), term[: len(term) - len(rest)]):  # held as porter cut it
                    chosen[written] = None
        if chosen:
            found[word] = tuple(chosen)
    return found


def _written_word(texts: Iterable[str], start: str) -> str | None:
    """The first word of ``texts`` (folded, lower-cased) that starts with ``start`` and goes on: how the notes write
    a compound whose first part is ``start``."""
    pattern = _whole(re.escape(start) + r"[^\W\d_]+")
    return next((found.group(0) for text in texts if (found := pattern.search(_plain(text)))), None)


def _rest_forms(rest: str, *, cut: bool = True) -> list[str]:
    """The words the notes may hold on their own for ``rest``, a compound's term after its first part: itself,
    itself without a linking "s" ("sexport" of "rechnungsexport"), and (``cut``) the words porter cuts to it only
    at the end of a longer word (:data:`PORTER_CUTS`: "migr" of "datenbankmigr" is "migrat" alone)."""
    forms = [rest, *(rest[len(link) :] for link in LINKS if rest.startswith(link) and len(rest) - len(link) >= MIN_REST)]
    if cut:
        forms += [porter_stem(form + ending) for form in list(forms) for ending in PORTER_CUTS]
    return [form for form in dict.fromkeys(forms) if len(form) >= MIN_REST]


def _rest_held(rest: str, held: Mapping[str, int], is_term: Callable[[str], bool]) -> bool:
    """Whether the notes hold ``rest`` on its own as written, or without a linking "s" (:func:`_rest_forms`), a search
    term (no stop word)."""
    return any(held.get(form, 0) > 0 and is_term(form) for form in _rest_forms(rest, cut=False))


def compound_tails(
    missing: Sequence[str],
    ending: Callable[[Sequence[str]], Sequence[Mapping[str, int]]],
    count: Count,
    texts: Callable[[str], Iterable[str]],
    is_term: Callable[[str], bool],
) -> dict[str, tuple[str, ...]]:
    """For each word of ``missing`` (words no note holds) that notes hold as the last part of longer words, the
    :data:`MAX_HEADS` of those words the most chunks hold: "Migration" is searched as "Datenbankmigration",
    "Schlüssel" as "Wohnungsschlüssel". In German the last part is the word a compound is a kind of. Words with
    none are left out.

    The notes are the dictionary, as for :func:`compound_heads`: the part before the word, of :data:`MIN_HEAD`
    letters or more, is a word they hold on its own, or is that word and a linking "s" ("Geburtstag" of
    "Geburtstagsfeier"); "base" is "database" only in notes that say "data".

    ``ending`` gives, for each of some endings, the index's terms that end so, with how many chunks hold each
    (the most held first). The index holds porter stems, which may cut a compound's end where they keep the word's
    ("datenbankmigr", "migrat") or keep an ending the word lacks ("datenbankmigrationen"), so the terms that
    end as :func:`_word_ends` says are read. A term counts only when the notes write the word it may stand for,
    its first part followed by the whole query word (and at most two letters more), or the inflected form as
    it is held: ``texts`` gives a few chunks that hold a word as the search does, by its stem,
    which is not enough, since porter cuts "relationshipments" to "relationship" ("shipments" is no last part
    of it). ``count`` counts words as the search does; ``is_term`` keeps out stop words. Words are looked up as
    for :func:`compound_heads`, but for the English endings that are words too (:data:`ENDINGS`)."""
    looked_up = [word for word in dict.fromkeys(missing) if len(word) >= MIN_HEAD and alphabetic(word)]
    words = [word for word in looked_up if fold_accents(word) not in ENDINGS][:MAX_WORDS]
    parts: dict[str, dict[str, str]] = {}  # word -> each longer word the notes may hold -> its first part
    for word in words:
        whole = fold_accents(word)
        parts[word] = {}
        ends = _word_ends(whole)
        for end, terms in zip(ends, ending(ends), strict=True):
            for term in terms:
                head = term[: -len(end)]
                if len(head) >= MIN_HEAD and alphabetic(head) and is_term(head):  # the inflected form as held, or the word
                    parts[word].setdefault(term if end.startswith(whole) else head + whole, head)
    # each first part -> the words the notes may hold on their own for it: itself, and itself without a link
    alone = {
        head: [head, *(head[: -len(link)] for link in LINKS if head.endswith(link) and len(head) - len(link) >= MIN_HEAD)]
        for found in parts.values()
        for head in found.values()
    }
    asked = list(dict.fromkeys(form for forms in alone.values() for form in forms if is_term(form)))
    held = count(asked) if asked else {}
    longer = list(dict.fromkeys(
        word for found in parts.values() for word, head in found.items() if any(held.get(form, 0) > 0 for form in alone[head])
    ))  # fmt: skip
    held_longer = count(longer) if longer else {}
    written = {term for term in longer if held_longer.get(term, 0) > 0 and _writes_word(texts(term), term)}
    found = {word: sorted(written.intersection(terms), key=lambda term: (-held_longer[term], term)) for word, terms in parts.items()}
    return {word: tuple(terms[:MAX_HEADS]) for word, terms in found.items() if terms}


def _word_ends(word: str) -> list[str]:
    """How the index's terms may end where a compound ends with ``word``: the word's first letters, as porter cuts
    them (down to :data:`MAX_CUT` fewer, at least :data:`MIN_PART`), or the word and an ending porter keeps
    (:data:`INFLECTIONS`: "Datenbankmigrationen")."""
    cut = [word[:end] for end in range(len(word), max(MIN_PART, len(word) - MAX_CUT) - 1, -1)]
    return cut + [word + inflection for inflection in INFLECTIONS]


def _writes_word(texts: Iterable[str], word: str) -> bool:
    """Whether one of ``texts`` writes ``word`` (folded) as a word of its own, with at most two more letters."""
    written = _whole(re.escape(word) + _ENDING)
    return any(written.search(_plain(text)) for text in texts)

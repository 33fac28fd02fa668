"""Answering a query: check its arguments, run the keyword and vector sides together, fuse them."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal

import anyio

from ..config_sections import QuerySettings, RerankSettings
from ..embeddings.base import check_vectors
from ..embeddings.embedder import Embedder
from ..embeddings.languages import reads_query
from ..errors import EmbeddingError, InputError, as_memdex_error
from ..limits import MAX_ANSWER_CHARS, MAX_CANDIDATES, MAX_QUERY_CHARS, MAX_RESULTS, MIN_ANSWER_CHARS
from ..models import Explanation, IndexStatus, SearchAnswer
from ..stores.base import IndexOwner, StoreOps
from ..stores.bm25 import floored
from ..stores.filters import SearchFilter
from ..stores.records import FILES_VERSION, ChunkRow
from ..text.chunking import only_headings
from ..text.names import written_as_names
from ..text.segments import is_gram, query_acronym_marks
from ..text.stopwords import is_function_word
from ..text.terms import (
    MAX_REPEATS,
    joined_phrases,
    only_stop_words,
    query_terms,
    term_index_keys,
    term_repeats,
    written_words,
)
from ..text.word_frequencies import english_share
from ..textutil import shortened
from .compounds import (
    HEAD_TERMS,
    Count,
    compound_heads,
    compound_tails,
    joined_words,
    missing_pairs,
    query_pairs,
    split_words,
)
from .keyword import keyword_candidates
from .named_files import NameIndex, iso_dates
from .near_words import hint_text, near_words
from .other_endings import other_endings
from .other_forms import forms_text, other_forms
from .ranking import Ranked, keyword_score, rank_hybrid, rank_keyword
from .recency import names_a_weekday, without_latest
from .relative_days import named_days
from .rerank import Reranker, open_reranker, rerank_order
from .scoring import TermWeights, naming_share, soft_cap, weigh_terms
from .snippets import Window, fit, to_hit
from .written_dates import written_dates

MAX_UNHELD = 5  # the query's words no note holds named in a warning, at most
# A query term longer than this is no word (a pasted key or blob): it is searched as written, and not looked up as
# a compound, a misspelling or another ending, which cost the square of its length (one 8,000-letter word: minutes).
MAX_WORD_CHARS = 64


@dataclass(frozen=True)
class SearchRequest:
    """One search, its arguments checked: the query text, how many hits, the score bar, the budget,
    the filter and whether to explain."""

    text: str
    limit: int
    threshold: float
    max_chars: int
    where: SearchFilter | None = None
    explain: bool = False


@dataclass
class _Candidates:
    """What the two sides (and the named files) found for one query."""

    keyword: list[ChunkRow] = field(default_factory=list)
    vector: list[ChunkRow] = field(default_factory=list)
    named: list[ChunkRow] = field(default_factory=list)
    naming: list[str] = field(default_factory=list)  # the query's words that named those files
    hints: dict[str, str] = field(default_factory=dict)  # query words no note holds -> what the notes hold instead
    # query words outside English's commonest that no note holds in any form, with no hint: named in a warning
    # (a question's "use" or "happen" would be named as often as not; a CJK gram, such as 控告 of 监控告警, is no word)
    unheld: list[str] = field(default_factory=list)
    unlogged: dict[str, list[str]] = field(default_factory=dict)  # the query's words for days with no log -> the days
    terms: list[str] = field(default_factory=list)  # the terms the keyword side ranked by
    asked: TermWeights | None = None  # the words abstention weighs, when it weighs them otherwise than ranking (hints, names)
    query_vector: list[float] | None = None
    from_ram: bool = True
    hashes: dict[str, str] = field(default_factory=dict)  # the keyword and named candidates' files -> hash as indexed


@dataclass(frozen=True)
class Searched:
    """A search's answer; whether the vector side had to use sqlite-vec (the RAM copy of the vectors is not in
    step: reload it); and the content hash, as indexed, of the files that its keyword and named candidates come
    from, read with them (so an answer from those needs no lookup of its own for memory_edit's hashes)."""

    answer: SearchAnswer
    from_ram: bool
    hashes: dict[str, str]


class Searcher:
    """Hybrid search over one index: keyword-only until the index's vectors belong to the running provider.

    The stages: the keyword side (BM25 and the terms' rarity), the vector side and the files the
    query names run side by side; fusion; the optional reranker; the cut to ``maxResults`` with
    named files first; then each hit's best lines within the answer's budget.
    """

    def __init__(
        self,
        query: QuerySettings,
        query_timeout: float,
        index: IndexOwner,
        embedder: Embedder,
        rerank: RerankSettings,
    ) -> None:
        self.query = query
        self.query_timeout = query_timeout
        self.index = index
        self.embedder = embedder
        self.rerank = rerank
        self.reranker: Reranker | None = None
        self._names: tuple[str | None, NameIndex] = ("", NameIndex([]))  # per files version: named-file lookups

    def open(self) -> None:
        """Start the reranker's client, when one is configured."""
        self.reranker = open_reranker(self.rerank)

    async def aclose(self) -> None:
        reranker, self.reranker = self.reranker, None
        if reranker is not None:
            await reranker.aclose()

    def request(
        self,
        text: str,
        max_results: int | None,
        min_score: float | None,
        max_chars: int | None,
        *,
        where: SearchFilter | None = None,
        explain: bool = False,
    ) -> SearchRequest:
        """The search to run, with this searcher's defaults filled in, or InputError naming a bad argument."""
        if len(text) > MAX_QUERY_CHARS:
            raise InputError(
                f"query is {len(text):,} characters; memory_search takes at most {MAX_QUERY_CHARS:,} characters: "
                "search with the key words or a short question"
            )
        limit = self.query.max_results if max_results is None else max_results
        if not 1 <= limit <= MAX_RESULTS:
            raise InputError(f"maxResults must be between 1 and {MAX_RESULTS} (got {limit})")
        threshold = self.query.min_score if min_score is None else min_score
        if not 0.0 <= threshold <= 1.0:
            raise InputError(f"minScore must be between 0 and 1 (got {threshold})")
        budget = self.query.max_chars if max_chars is None else max_chars
        if not MIN_ANSWER_CHARS <= budget <= MAX_ANSWER_CHARS:
            raise InputError(f"maxChars must be between {MIN_ANSWER_CHARS} and {MAX_ANSWER_CHARS} (got {budget})")
        return SearchRequest(text, limit, threshold, budget, None if where is None or where.empty else where, explain)

    async def search(self, request: SearchRequest, status: IndexStatus, *, vectors: bool, today: dt.date) -> Searched:
        """Rank chunks for the request and cut their snippets to its budget."""
        q = self.query
        limit = request.limit
        depth = limit if self.reranker is None else max(limit, self.rerank.candidates)  # how many fused candidates to keep
        candidates = min(MAX_CANDIDATES, depth * q.candidate_multiplier)
        rest = without_latest(request.text)  # None: the query does not ask for the newest
        repeats = (term_repeats(rest) if rest is not None else {}) or term_repeats(request.text)  # "latest?" as it is
        terms = list(repeats)
        warnings = _index_warnings(status)
        found, weights = await self._candidates(request, repeats, candidates, status.chunks, vectors, warnings, today)
        # a weekday asks for the latest such day, unless the query names a day itself ("the Monday before July 24")
        latest = rest is not None or (names_a_weekday(terms) and not found.naming and not found.unlogged)
        ranked: list[Ranked]
        if found.query_vector is None:
            if not terms:
                warnings.append(_no_terms(request.text))
            ranked = rank_keyword(found.keyword, weights, depth, q, today, found.asked, latest=latest)
            mode: Literal["hybrid", "keyword"] = "keyword"
        else:
            ranked = rank_hybrid(
                found.keyword, found.vector, weights, depth, request.threshold, q, today, found.asked, latest=latest
            )
            mode = "hybrid"
        reranked: dict[int, int] = {}
        if self.reranker is not None and ranked:
            ranked, reranked = await self._reranked(self.reranker, request.text, ranked, warnings)
        named = {row.id for row in found.named}
        ranked = await self._read_on(_named_first(ranked, found.named, weights, found.naming)[:limit])
        chosen, left_out = fit(
            ranked, found.terms, request.max_chars, q.snippet_chars, memory_weights=weights.by_key(), explain=request.explain
        )
        if request.explain:
            places = _Places(found, named, reranked)
            hits = [to_hit(item, window, places.explain(item, window)) for item, window in chosen]
        else:
            hits = [to_hit(item, window) for item, window in chosen]
        if left_out:
            warnings.append(
                f"{left_out} more result(s) left out to keep within maxChars={request.max_chars} and the size of one "
                "tool result; raise maxChars, ask for fewer results, or read around a hit with memory_get"
            )
        if not hits and terms and status.chunks:
            warnings.append("nothing in memory matches this query" + (" within the filter" if request.where else ""))
            if forms := other_forms(terms, (row.text for row in found.keyword)):
                warnings.append(forms_text(forms))
        if found.hints:
            written = dict(zip(_as_written(list(found.hints), request.text), found.hints.values(), strict=True))
            warnings.append(hint_text(written, ranked=bool(hits)))
        if hits and found.unheld:
            warnings.append(_unheld_text(_as_written(found.unheld, request.text), mode))
        if found.unlogged:
            warnings.append(_unlogged_text(found.unlogged))
        provider = self.embedder.provider
        answer = SearchAnswer(
            results=hits, mode=mode, provider=provider.id if provider else None,
            model=provider.model if provider else None, warning="; ".join(warnings) or None,
            left_out=left_out, index_status=status,
        )
        return Searched(answer, found.from_ram, found.hashes)

    async def _candidates(
        self,
        request: SearchRequest,
        repeats: dict[str, int],
        k: int,
        chunks: int,
        vectors: bool,
        warnings: list[str],
        today: dt.date,
    ) -> tuple[_Candidates, TermWeights]:
        """Run the keyword side (the query's terms, each as often as it is asked: ``repeats``), the vector side
        and the named-file lookup side by side.

        A query word no note holds, with a word one edit away that notes hold (its hint, :mod:`.near_words`),
        is ranked as that word: "destrss" finds the notes that say "destress" first. Such a word answers as its
        hint too, unless it is one of English's commonest (:mod:`..text.word_frequencies`): a common English word
        the memory lacks is as often another topic's ("matching" asked of notes about marching), so whether the
        memory answers is decided with it missing (``found.asked``), and such a query gets nothing.
        """
        found = _Candidates()
        terms = list(repeats)
        weights = weigh_terms(terms, {}, 0)
        where = request.where

        def keyword_lookups(conn: Any) -> TermWeights:
            """The keyword side and the named files, into ``found``; the weights the keyword side ranked by."""
            ops = self.index.ops
            counts = ops.term_counts(conn, terms) if terms else {}

            def count(words: Sequence[str]) -> dict[str, int]:  # kept: each word the lookups count is counted once
                new = ops.term_counts(conn, words)
                counts.update(new)
                return new

            missing = [term for term in terms if not counts[term]]
            word_like = [term for term in missing if len(term) <= MAX_WORD_CHARS]  # the rest is looked up as written
            written = self._compounds(conn, request.text, terms, word_like, count) if word_like and chunks else {}
            unheld = [term for term in word_like if term not in written]
            hints = self._near_words(conn, unheld, count) if unheld and chunks else {}
            if chunks and (rest := [term for term in unheld if term not in hints]):  # no typo: another ending?
                written |= self._other_endings(conn, terms, rest, count)
            if chunks:
                found.unheld = [
                    term for term in missing
                    if term not in written and term not in hints and not english_share(term) and not is_gram(term)
                    and not is_function_word(term)
                ]  # fmt: skip
            if chunks and (marks := {w: mark for w, mark in query_acronym_marks(request.text).items() if w in repeats}):
                # an acronym that reads as a word ("IT", "US"), asked in capitals: as the notes write it in capitals,
                # where they do; "it" and "us" would rank every note that says them
                held_marks = count(list(marks.values()))
                written |= {word: (mark,) for word, mark in marks.items() if held_marks[mark]}
            held = _repeated({term: written.get(term, (term,)) for term in terms}, repeats)  # as the notes write it
            found.hints = hints

            def hinted(words: Collection[str]) -> dict[str, int]:
                """The query's terms, each of ``words`` in its hint's place as the search term it is (a Greek or
                Cyrillic word's stem)."""
                return _repeated({term: (query_terms(hints[term])[0] if term in words else term,) for term in held}, held)

            ranked_as = hinted(hints)
            found.terms = list(ranked_as)
            # the words the query joins ("pg-prod-01"), also as the phrase the notes may write: ranking alone
            joined = [phrase for phrase in joined_phrases(request.text) if phrase not in ranked_as]
            phrases = [phrase for phrase, rows in count(joined).items() if rows] if joined and chunks else []
            searched = ranked_as | dict.fromkeys(phrases, 1)
            alongside = None if vectors else self.index.alongside  # a vector side has the other core
            found.keyword, ranked_by = keyword_candidates(
                ops, conn, list(searched), k, chunks, where, searched, counts, alongside, phrases
            )
            # Abstention takes a word outside English's commonest ("destrss") for a typo of its hint; a common
            # English word no note holds is as often another topic's ("cancer" asked of a chat about a dancer):
            # it stays missing. A name the notes hold weighs there as the rarest (:func:`.scoring.weigh_terms`).
            typos = [term for term in hints if not english_share(term)]
            # Only a name in half the chunks or more weighs little enough to matter; the first candidates tell it.
            common = [term for term in ranked_as if counts.get(term) and floored(counts[term], chunks)]
            names = written_as_names(common, (row.text for row in found.keyword[: request.limit]))
            if len(typos) < len(hints) or names or phrases:
                asked_as = hinted(typos)
                if uncounted := [term for term in asked_as if term not in counts]:
                    count(uncounted)
                found.asked = weigh_terms(list(asked_as), counts, chunks, asked_as, names)
            words = weigh_terms(list(ranked_as), counts, chunks, ranked_as) if phrases else ranked_by  # no phrase names
            found.named, found.naming, found.unlogged = self._named_chunks(
                conn, request.text, repeats, k, chunks, where, today, words
            )
            if found.unheld and (dating := term_repeats(" ".join([*found.naming, *found.unlogged]))):
                found.unheld = [term for term in found.unheld if term not in dating]  # "pasada" of "la semana pasada"
            files = {row.path for row in (*found.keyword, *found.named) if row.source == "memory"}
            found.hashes = ops.file_hashes(conn, sorted(files)) if files else {}
            return ranked_by

        async def keyword_side() -> None:  # one trip to a reader for the lookups
            nonlocal weights
            weights = await self.index.read(keyword_lookups)

        async def vector_side() -> None:
            found.query_vector = await self._query_vector(request.text, warnings)
            if found.query_vector is not None:
                found.vector, found.from_ram = await self.index.nearest(found.query_vector, k, where)

        try:
            async with anyio.create_task_group() as tg:  # the sides run side by side
                tg.start_soon(keyword_side)
                if vectors:
                    tg.start_soon(vector_side)
        except BaseExceptionGroup as group:  # callers catch StoreError (an IndexCorrupt repairs), not a group
            error = as_memdex_error(group)
            if error is None:
                raise
            raise error from group
        return found, weights

    async def _read_on(self, ranked: list[Ranked]) -> list[Ranked]:
        """Hits whose chunk is only headings, each read on into the chunk right after it, which they head.

        A heading over a paragraph longer than a chunk ends up a chunk of its own, and such a hit tells the
        agent nothing but its title (8 % of the hits at the defaults on CMRC and on SciFact, whose notes are a
        title over one long paragraph). When the chunk it heads is a hit too, the two are one hit, at the
        better place of the two.
        """
        heads = {(item.row.path, item.row.end_line + 1): item for item in ranked if only_headings(item.row.text.split("\n"))}
        if not heads:
            return ranked
        hits = {(item.row.path, item.row.start_line): item for item in ranked}
        missing = sorted(place for place in heads if place not in hits)
        fetched = await self.index.read(self.index.ops.chunks_starting, missing) if missing else []
        after = {(row.path, row.start_line): row for row in fetched} | {p: hits[p].row for p in heads if p in hits}
        shown: dict[int, ChunkRow] = {}  # the item that shows a heading and what it heads -> their joined row
        dropped: set[int] = set()
        for place, head in heads.items():
            if (row := after.get(place)) is None:
                continue
            joined = replace(head.row, end_line=row.end_line, text=f"{head.row.text}\n{row.text}")
            other = hits.get(place)
            first, second = (head, other) if other is None or ranked.index(head) < ranked.index(other) else (other, head)
            shown[first.row.id] = joined
            if second is not None:
                dropped.add(second.row.id)
        return [replace(item, row=shown.get(item.row.id, item.row)) for item in ranked if item.row.id not in dropped]

    def _compounds(self, conn: Any, text: str, terms: list[str], missing: list[str], count: Count) -> dict[str, tuple[str, ...]]:
        """The query's words that notes write as one compound the other way, or hold only as a compound's first
        or last part (:mod:`.compounds`), each with the words the notes write in its place (the second of two words
        joined into one: none), on a reader thread; ``count`` counts words for the caller, who keeps the counts.
        A word the query asks already, in any form, is not asked again (:func:`_unasked`)."""
        ops, texts = self.index.ops, partial(_texts, self.index.ops, conn)
        written: dict[str, tuple[str, ...]] = {}
        pairs = list(dict.fromkeys([*query_pairs(text), *missing_pairs(missing)]))
        for (head, tail), word in joined_words(pairs, missing, count, _is_term).items():
            if head not in written and tail not in written:
                written[head], written[tail] = (word,), ()
        left = [term for term in missing if term not in written]
        split = split_words(left, count, texts, _is_term)
        written |= {term: (phrase,) for term, phrase in split.items()}
        left = [term for term in left if term not in split]
        heads = compound_heads(left, partial(ops.terms_starting, conn, limit=HEAD_TERMS), count, _is_term, texts)
        left = [term for term in left if term not in heads]
        ending = partial(ops.terms_ending, conn, limit=HEAD_TERMS)
        written |= heads | compound_tails(left, ending, count, texts, _is_term)
        return _unasked(written, terms)

    def _other_endings(self, conn: Any, terms: list[str], missing: list[str], count: Count) -> dict[str, tuple[str, ...]]:
        """The query's words that notes hold only with another ending (:mod:`.other_endings`), each with the words
        the notes write in its place, on a reader thread; ``count`` counts them for the caller."""
        ops = self.index.ops
        starting, texts = partial(ops.terms_starting, conn, limit=HEAD_TERMS), partial(_texts, ops, conn)
        endings = other_endings(missing, starting, count, texts, _is_term)
        if endings:
            count([word for words in endings.values() for word in words])
        return _unasked(endings, terms)

    def _near_words(self, conn: Any, missing: list[str], count: Count) -> dict[str, str]:
        """Words the notes hold one edit away from the query's words no note holds (on a reader thread)."""
        hints = near_words(missing, count, partial(_texts, self.index.ops, conn), query_terms)
        return {word: near for word, near in hints.items() if len(query_terms(near)) == 1}  # one term, no stop word

    def _named_chunks(
        self,
        conn: Any,
        text: str,
        repeats: dict[str, int],
        k: int,
        chunks: int,
        where: SearchFilter | None,
        today: dt.date,
        weights: TermWeights,
    ) -> tuple[list[ChunkRow], list[str], dict[str, list[str]]]:
        """Up to ``k`` chunks of the files ``text`` names (on a reader thread; names are indexed per file set),
        a daily log by its date, by its date as people write it ("November 19": :mod:`.written_dates`) or by a
        word for a day relative to ``today`` ("yesterday": :mod:`.relative_days`).

        The best chunks of those files for the rest of the query, by BM25 as the keyword side ranks (a long
        file's first ``k`` chunks may not hold them). When they hold none of it, or the query is only names
        ("2026-01-15", "what did MEMORY say"), the files' first chunks in line order. Also the query's words
        that named them, and those that name only days with no log, each with its days.

        Those words name their logs only when they are ``min_share`` of the query or more (by ``weights``, the
        query's words as ranking weighs them): "yesterday" in "what did I work on yesterday?" does, "today's" in a long
        question on "the standard method of finding information in today's libraries" does not.
        """
        ops = self.index.ops
        version = ops.read_meta(conn, FILES_VERSION)
        if self._names[0] != version:
            self._names = (version, NameIndex(ops.file_paths(conn)))
        files = self._names[1]
        days = [*named_days(text, today), *written_dates(text, today)]
        words = list(dict.fromkeys(word for _, word in days))
        straddling = _straddling(text, words, repeats) if words else []
        if days and naming_share(weights, [*words, *straddling]) < self.query.min_share:
            days = []
        dated = [*days, *((day, day) for day in iso_dates(text))]
        unlogged = _unlogged(dated, files.log_days) if dated else {}
        paths, names = files.naming(" ".join([text, *(day for day, _ in days)]))
        if not paths:
            return [], [], unlogged
        dating = [word for day, word in days if day in names]
        naming = list(dict.fromkeys([*names, *dating, *(straddling if dating else [])]))
        named_terms = term_repeats(" ".join(naming))
        asked = {term: times for term, times in repeats.items() if term not in named_terms}
        within = replace(where or SearchFilter(), paths=tuple(paths))
        found = keyword_candidates(ops, conn, list(asked), k, chunks, within, asked)[0] if asked else []
        return found or ops.chunks_of(conn, paths, k, where), naming, unlogged

    async def _reranked(
        self, reranker: Reranker, text: str, ranked: list[Ranked], warnings: list[str]
    ) -> tuple[list[Ranked], dict[int, int]]:
        """The first ``rerank.candidates`` in the reranker's order (the rest after them), and each one's new place."""
        head = ranked[: self.rerank.candidates]
        order, note = await rerank_order(reranker, text, [item.row.text for item in head], self.rerank.timeout)
        if note:
            warnings.append(note)
        if order is None:
            return ranked, {}
        return [head[i] for i in order] + ranked[len(head) :], {head[i].row.id: place for place, i in enumerate(order, 1)}

    async def _query_vector(self, text: str, warnings: list[str]) -> list[float] | None:
        """The query's embedding, or None (with a warning) when it fails or is too slow."""
        provider = self.embedder.provider
        if provider is None:
            return None
        if not reads_query(provider.model, text):
            warnings.append(
                f"the embedding model {provider.model} reads English only, and this query is in another script: "
                "these are keyword results"
            )
            return None
        try:
            with anyio.fail_after(self.query_timeout):
                vector = await provider.embed_query(text)
            check_vectors([vector], 1, provider.dims, f"{provider.id} {provider.model}")
            return vector
        except TimeoutError:
            warnings.append(f"the query embedding took over {self.query_timeout:g}s; these are keyword results")
        except EmbeddingError as exc:
            warnings.append(f"the query embedding failed ({exc}); these are keyword results")
        return None


def _repeated(words: dict[str, tuple[str, ...]], repeats: dict[str, int]) -> dict[str, int]:
    """The words each term is searched as, with the times the query asks for the term (at most MAX_REPEATS)."""
    times: dict[str, int] = {}
    for term, written in words.items():
        for word in written:
            times[word] = min(MAX_REPEATS, times.get(word, 0) + repeats[term])
    return times


def _unasked(written: dict[str, tuple[str, ...]], terms: list[str]) -> dict[str, tuple[str, ...]]:
    """``written`` (query terms -> the words the notes write in their place) without the words the query asks
    already, in any form ("email" of "e mail" asked with "emails")."""
    asked = frozenset().union(*(term_index_keys(term) for term in terms if term not in written))
    return {term: tuple(word for word in words if not term_index_keys(word) <= asked) for term, words in written.items()}


def _texts(ops: StoreOps, conn: Any, term: str) -> list[str]:
    """The texts of a few chunks that hold ``term`` (a word or a phrase): how the notes write it."""
    return ops.texts_holding(conn, term, 3)


def _is_term(word: str) -> bool:
    """Whether ``word`` is a search term as it stands (not a stop word, not stemmed to another form)."""
    return query_terms(word) == [word]


def _no_terms(text: str) -> str:
    """Why a query gave no keyword terms, and what to do."""
    if common := only_stop_words(text):
        return (
            f"the query has only common words ({', '.join(common)}), which search ignores; "
            "ask with the words that matter (a name, a topic, an ID)"
        )
    return "the query has no words or numbers to search for; rephrase it with words"


def _unheld_text(words: Sequence[str], mode: str) -> str:
    """The query's words no note holds, named, so the caller knows the hits answer the rest of the query: "redis
    eviction policy" gets the note on Redis's port, and the memory says nothing of eviction."""
    named = ", ".join(f'"{shortened(word)}"' for word in words[:MAX_UNHELD]) + (", ..." if len(words) > MAX_UNHELD else "")
    rest = "the rest of the query or its meaning" if mode == "hybrid" else "the rest of the query"
    return f"no note holds {named}: these results match {rest}"


def _straddling(text: str, words: Sequence[str], terms: Iterable[str]) -> list[str]:
    """Those of ``terms`` (the query's) that take in part of ``words`` (the query's words for days) and are none of
    their own terms: a character pair across a Chinese word's edge, "周做" of "这周做了什么" ("这" is a function word,
    so "这周" is no term)."""
    rest = text
    for word in words:
        rest = re.sub(re.escape(word), " ", rest, flags=re.IGNORECASE)
    kept = {*query_terms(rest), *term_repeats(" ".join(words))}
    return [term for term in terms if term not in kept]


def _as_written(terms: Sequence[str], text: str) -> list[str]:
    """Each of ``terms`` as ``text`` writes it, lower-cased: a Russian word's search term is its stem ("использу"),
    which the caller never wrote ("используем")."""
    written: dict[str, str] = {}
    for word in written_words(text):
        for term in query_terms(word):
            written.setdefault(term, word)
    return [written.get(term, term) for term in terms]


def _unlogged(days: Sequence[tuple[str, str]], logged: Collection[str]) -> dict[str, list[str]]:
    """The words of ``days`` (day, the word that names it) none of whose days has a log, each with its days."""
    by_word: dict[str, list[str]] = {}
    for day, word in days:
        by_word.setdefault(word, []).append(day)
    return {word: named for word, named in by_word.items() if not any(day in logged for day in named)}


def _unlogged_text(unlogged: dict[str, list[str]]) -> str:
    """The days a query names that have no daily log, so the caller knows the memory holds no log for them, and
    what it is: "what happened yesterday?" with no log yesterday."""
    named = ", ".join(
        f'"{word}"' if len(days) > 1 or word == days[0] else f'"{word}" ({days[0]})' for word, days in unlogged.items()
    )
    return f"there is no daily log for {named}"


def _index_warnings(status: IndexStatus) -> list[str]:
    files_written = status.files_total > 0 and status.files_done == status.files_total  # only embedding now
    if status.state == "starting" or (status.state == "indexing" and not files_written):
        return [
            f"the index is still being built ({status.files_done}/{status.files_total} files); "
            "results may be incomplete, search again shortly"
        ]
    return []


def _named_first(ranked: list[Ranked], named: list[ChunkRow], weights: TermWeights, naming: Sequence[str]) -> list[Ranked]:
    """The chunks of files the query names first (best scored first), then the rest in their order.

    A named chunk scores the share of the query that it and ``naming`` (the words that named its file) answer
    together, or its fused score (its keyword score, when it was no candidate) if larger: a chunk of yesterday's
    log answers "yesterday" in "what did I work on yesterday?" whether or not it says "yesterday", and one that
    also says what was worked on answers more.
    """
    if not named:
        return ranked
    fused = {item.row.id: item for item in ranked}
    ids = {row.id for row in named}
    first = []
    for row in named:
        share = soft_cap(naming_share(weights, [*naming, row.text]))
        if (item := fused.get(row.id)) is not None:
            first.append(replace(item, score=max(item.score, share)))
        else:
            score = max(keyword_score(row, weights), share)
            first.append(Ranked(row, score, text_score=score))
    first.sort(key=lambda item: -item.score)  # stable: file and line order among equals
    return first + [item for item in ranked if item.row.id not in ids]


class _Places:
    """Each hit's place on the keyword and vector sides and after the reranker, for ``explain``."""

    def __init__(self, found: _Candidates, named: set[int], reranked: dict[int, int]) -> None:
        self.keyword = {row.id: place for place, row in enumerate(found.keyword, start=1)}
        self.vector = {row.id: place for place, row in enumerate(found.vector, start=1)}
        self.named = named
        self.reranked = reranked

    def explain(self, item: Ranked, window: Window) -> Explanation:
        cid = item.row.id
        return Explanation(
            keyword_rank=self.keyword.get(cid), vector_rank=self.vector.get(cid), named_file=cid in self.named,
            decay=item.decay, rerank_rank=self.reranked.get(cid), snippet=window.why,
        )

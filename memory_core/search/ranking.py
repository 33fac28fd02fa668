"""Turn candidate chunks into the ranked hits a caller sees. Pure functions over plain rows.

Keyword candidates come from FTS5 (BM25), vector candidates from sqlite-vec (cosine distance).
Hybrid search fuses them either by weighted scores (OpenClaw's rule, the default) or by
reciprocal rank (scale-free); then optional temporal decay and MMR diversity re-ranking apply.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..config_sections import QuerySettings
from ..stores.bm25 import K1
from ..stores.filters import log_date
from ..stores.records import ChunkRow
from ..text.terms import stems
from .scoring import TermWeights, answer_share, bm25_share, bm25_strength, held_terms, soft_cap, term_coverage

# The part of hybrid search's keyword side that is BM25's share of the query (:func:`fusion_keyword_score`).
# Measured on every set x variant, hybrid 0.2/0.8 (bench/robustness.py), against none: nDCG@10 on SciFact's
# held-out claims 0.719 -> 0.725, their three-word queries 0.457 -> 0.466, LoCoMo's misspelt questions 0.749 ->
# 0.762, CISI 0.452 -> 0.449; 0.2 was no better on the six rows it was run on (docs/benchmarks.md).
SHARE_IN_FUSION = 0.1


@dataclass(frozen=True)
class Ranked:
    """A candidate chunk and its scores: fused (what orders it), keyword side, vector side."""

    row: ChunkRow
    score: float
    text_score: float | None = None
    vector_score: float | None = None
    decay: float | None = None  # the temporal decay factor applied to ``score``, when it was

    @property
    def path(self) -> str:
        return self.row.path


def keyword_views(row: ChunkRow, weights: TermWeights) -> tuple[float, float]:
    """The chunk's BM25 share of the query and its coverage (:mod:`.scoring`): what both keyword scores are
    made of, worked out once per chunk."""
    return bm25_share(row.rank, weights, row.text), term_coverage(weights, row.text)


def keyword_score(row: ChunkRow, weights: TermWeights, views: tuple[float, float] | None = None) -> float:
    """How much of the query the chunk holds, and how strongly, 0..1, each term weighed by its rarity: the
    larger of two views, through :func:`.scoring.soft_cap`.

    BM25 share: BM25 over that of a chunk holding every term once at average length, so word counts and
    chunk length count (FTS5's for the terms it weighs, the common ones scored in Python:
    :func:`.scoring.bm25_share`). Coverage: the IDF-weighted share of the terms the chunk contains, with an
    IDF that never reaches 0, so "like" or "made" weigh little and "turtles" much. Both are shares of the
    query's IDF, so they compare without rescaling. The soft cap keeps shares up to 0.5 as they are (the
    ``min_score`` bar reads them) and keeps the hits that answer the whole query apart, below 1.
    """
    return soft_cap(max(views or keyword_views(row, weights)))


def fusion_keyword_score(row: ChunkRow, weights: TermWeights, views: tuple[float, float] | None = None) -> float:
    """The keyword side of weighted fusion, 0..1: mostly FTS5's bm25 ``s`` as ``s / (1 + s)``, or the
    IDF-weighted coverage if larger. Unlike :func:`keyword_score`'s share, which reaches 1 for every
    strong match of a long query, it keeps ordering strong matches, so the vector side does not
    decide among them alone (measured at 0.2/0.8: CISI nDCG@10 0.401 → 0.445, SciFact 0.715 → 0.732,
    LoCoMo 0.783 → 0.785; keyword-only ranking keeps the share, which SciFact's floor needs).

    :data:`SHARE_IN_FUSION` of it is the chunk's BM25 share of the query (:func:`.scoring.bm25_share`, over
    its ceiling K1 + 1): every chunk that holds each word of a short query has coverage 1, and the vector
    side alone ordered them, whatever the words' counts and the chunks' lengths."""
    share, coverage = views or keyword_views(row, weights)
    view = max(bm25_strength(row.rank), coverage)
    return (1.0 - SHARE_IN_FUSION) * view + SHARE_IN_FUSION * min(share, K1 + 1.0) / (K1 + 1.0)


def rank_keyword(
    rows: Sequence[ChunkRow],
    weights: TermWeights,
    limit: int,
    query: QuerySettings,
    today: dt.date,
    asked: TermWeights | None = None,
    *,
    latest: bool = False,
) -> list[Ranked]:
    """Keyword-only ranking, abstaining as a whole (:func:`answers`): no chunk is cut for answering little of
    the query on its own, since a long question is answered by short notes that each hold a word or two.
    ``asked``: the words abstention weighs, when it weighs them otherwise than ``weights`` rank them (a near
    word ranked in place of an English one, a name weighed as rare: default the same). ``latest``: the query
    asks for the newest of what it names (:mod:`.recency`), so dated notes decay from the newest candidate."""
    ranked = _keyword_order([(row, keyword_score(row, weights)) for row in rows], query, today, limit, latest)
    return ranked if answers(ranked, asked or weights, query.min_share) else []


def _keyword_order(
    scores: Sequence[tuple[ChunkRow, float]], query: QuerySettings, today: dt.date, limit: int, latest: bool = False
) -> list[Ranked]:
    """The first ``limit`` chunks in keyword-only search's order, from their keyword scores. A chunk scored 0
    holds none of the query's words as memdex reads them: FTS5's porter stems took a word of the same root for
    one ("facture" for "facturation"), which no score counts. It is no hit."""
    return _finish([Ranked(row, s, text_score=s) for row, s in scores if s > 0], query, today, limit, latest)[:limit]


def answers(items: Sequence[Ranked], weights: TermWeights, min_share: float) -> bool:
    """Whether ``items`` answer the query, or "nothing in memory matches" is the answer.

    Shares weigh the query's words by rarity, words the memory lacks counted as the rarest
    (:func:`.scoring.answer_share`). A chunk that answers ``min_share`` of the query settles it. Short of
    that, the answer as a whole must answer that share, and the memory must hold most of the query's words:
    a long question over short notes (each holds two of its thirty words) has an answer, while a question
    on another topic that shares a few common words with the memory ("show", "people") has none. When the
    answer holds two thirds of the query's words or more, it stands whatever their rarity: in a
    memory about one topic its own words are in most chunks ("gina receive dance" in a chat about Gina's
    dance studio), so their IDF says little. Measured over LoCoMo's chats, CISI and SciFact, those with
    titles only or three-word queries, and other-topic probes: docs/benchmarks.md.
    """
    if not items or min_share <= 0:
        return bool(items)
    texts = [item.row.text for item in items]
    if any(answer_share(weights, [text]) >= min_share for text in texts):
        return True
    if 3 * held_terms(weights, texts) >= 2 * len(weights.keys):  # two thirds of the query's words, or more
        return True
    missing = sum(1 for weight in weights.weights if weight <= 0)
    return 2 * missing < len(weights.weights) and answer_share(weights, texts) >= min_share


def rank_hybrid(
    keyword_rows: Sequence[ChunkRow],
    vector_rows: Sequence[ChunkRow],
    weights: TermWeights,
    limit: int,
    min_score: float,
    query: QuerySettings,
    today: dt.date,
    asked: TermWeights | None = None,
    *,
    latest: bool = False,
) -> list[Ranked]:
    """Fuse keyword and vector candidates; keep those that either side scores at least ``min_score``.

    Ranking uses the fused score; the cut asks whether the vector similarity or the keyword score
    alone reaches ``min_score``. Cutting on the fused score instead (OpenClaw's rule) ties the cut to
    the weights: with the keyword-heavy weights the benchmark favours, a strong paraphrase match that
    shares no word with the query could never pass. Keyword scores count only when keyword-only search
    would answer (:func:`answers`): a query on another topic that shares a common word with the memory
    gets a high keyword score on that word alone, and no answer from either search (LoCoMo's other-topic
    probes answered with nothing, hybrid: 0.175 -> 0.850). When nothing clears ``min_score``, the keyword
    hits are returned as keyword-only search returns them, so an exact ID match is never silently dropped.
    ``asked`` and ``latest`` are as :func:`rank_keyword`'s.
    """
    views = {row.id: keyword_views(row, weights) for row in keyword_rows}
    text = {row.id: keyword_score(row, weights, views[row.id]) for row in keyword_rows}
    vector = {row.id: max(0.0, 1.0 - row.rank) for row in vector_rows}
    rows = {row.id: row for row in [*keyword_rows, *vector_rows]}
    vector_weight, text_weight = _weights(query)
    if query.fusion == "rrf":
        fused = _reciprocal_rank(keyword_rows, vector_rows, query.rrf_k, vector_weight, text_weight)
    else:
        fusing = {row.id: fusion_keyword_score(row, weights, views[row.id]) for row in keyword_rows}
        fused = {cid: vector_weight * vector.get(cid, 0.0) + text_weight * fusing.get(cid, 0.0) for cid in rows}
    scored = [Ranked(rows[cid], fused[cid], text.get(cid), vector.get(cid)) for cid in rows]
    ordered = _finish(scored, query, today, limit, latest)
    by_text = _keyword_order([(row, text[row.id]) for row in keyword_rows], query, today, limit)
    text_answers = answers(by_text, asked or weights, query.min_share)
    bar = min_score if text_answers else math.inf  # keyword scores count only when keyword search would answer
    kept = [item for item in ordered if (item.vector_score or 0.0) >= min_score or (item.text_score or 0.0) >= bar]
    if not kept and text_answers:  # as keyword-only search answers: the keyword hits
        kept = [item for item in ordered if item.text_score][:limit]
    return kept[:limit]


def _weights(query: QuerySettings) -> tuple[float, float]:
    total = query.vector_weight + query.text_weight
    if total <= 0:  # both set to 0: fall back on the documented defaults
        fields = QuerySettings.model_fields
        return fields["vector_weight"].default, fields["text_weight"].default
    return query.vector_weight / total, query.text_weight / total


def _reciprocal_rank(
    keyword_rows: Sequence[ChunkRow], vector_rows: Sequence[ChunkRow], k: int, vector_weight: float, text_weight: float
) -> dict[int, float]:
    """Weighted sum of 1/(k + rank) over both lists, scaled so first in both lists scores 1."""
    fused: dict[int, float] = {}
    for rows, weight in ((keyword_rows, text_weight), (vector_rows, vector_weight)):
        for rank, row in enumerate(rows, start=1):
            fused[row.id] = fused.get(row.id, 0.0) + weight / (k + rank)
    return {cid: value * (k + 1) for cid, value in fused.items()}


def _finish(scored: list[Ranked], query: QuerySettings, today: dt.date, limit: int, latest: bool = False) -> list[Ranked]:
    """Apply temporal decay, sort best first, then MMR (for the first ``limit`` places) when enabled.

    Decay counts a note's age from ``today``; for a query that asks for the ``latest``, from the newest dated
    candidate that holds a word of it (:func:`_newest_answer`), whether or not decay is on. The order is the same
    either way; counted from that one, the dated notes are not all scored down below the undated ones
    (``MEMORY.md``) in a memory whose last log is months old, nor because the vector side brought the newest log."""
    newest = _newest_answer(scored) if latest else None
    if query.temporal_decay or newest:
        since = newest or today
        scored = [_decayed(item, decay(item.row.path, since, query.half_life_days)) for item in scored]
    # File and line order among exact ties: the order candidates arrived in differs between the RAM copy and sqlite-vec.
    scored.sort(key=lambda item: (-item.score, item.row.rank, item.row.path, item.row.start_line))
    if query.mmr:
        scored = mmr(scored, query.mmr_lambda, limit)
    return scored


def _newest_answer(scored: Sequence[Ranked]) -> dt.date | None:
    """The day of the newest dated candidate that holds a word of the query, or of any when none does: the vector
    side brings the nearest chunks whatever they answer, so the newest log is among them for most queries."""
    days = [(day, bool(item.text_score)) for item in scored if (day := log_date(item.row.path))]
    return max([day for day, worded in days if worded] or [day for day, _ in days], default=None)


def _decayed(item: Ranked, factor: float) -> Ranked:
    return replace(item, score=item.score * factor, decay=factor)


def decay(path: str, today: dt.date, half_life_days: float) -> float:
    """Score multiplier for a note's age: 0.5 at one half-life. Undated files are evergreen (1.0)."""
    day = log_date(path)
    if day is None:
        return 1.0
    age = max(0, (today - day).days)
    return math.exp(-math.log(2) / half_life_days * age)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def mmr(items: list[Ranked], lam: float, picks: int) -> list[Ranked]:
    """Greedy maximal marginal relevance: lam * relevance - (1 - lam) * max similarity to those picked.

    Relevance is the score min-max normalised over the candidates; similarity is the Jaccard overlap
    of the chunks' terms, as the keyword index cuts them (CJK grams, stems). Only the first ``picks`` places are chosen this way (each candidate's
    highest similarity is updated incrementally, so the cost is picks x candidates); the rest keep
    their order. Scores are left unchanged; only the order changes.
    """
    if len(items) < 3 or lam >= 1.0:
        return items
    high, low = items[0].score, min(item.score for item in items)
    spread = high - low or 1.0
    tokens = [stems(item.row.text) for item in items]
    closest = [0.0] * len(items)  # each candidate's highest similarity to anything picked so far
    remaining = list(range(len(items)))
    picked: list[int] = []
    while remaining and len(picked) < picks:
        best = max(remaining, key=lambda i: lam * (items[i].score - low) / spread - (1 - lam) * closest[i])
        picked.append(best)
        remaining.remove(best)
        for i in remaining:
            closest[i] = max(closest[i], _jaccard(tokens[i], tokens[best]))
    return [items[i] for i in picked + remaining]


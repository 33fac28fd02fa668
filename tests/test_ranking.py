"""Fusion, keyword rescue, temporal decay and MMR, on plain rows (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from memdex.memory_core.config_sections import QuerySettings
from memdex.memory_core.search.ranking import SHARE_IN_FUSION, decay, keyword_score, rank_hybrid, rank_keyword
from memdex.memory_core.search.scoring import TermWeights, answer_share, bm25_share, soft_cap, weigh_terms
from memdex.memory_core.stores.bm25 import K1
from memdex.memory_core.stores.records import ChunkRow

TODAY = dt.date(2026, 6, 30)


def row(cid: int, path: str, text: str, rank: float) -> ChunkRow:
    return ChunkRow(cid, path, "memory", 1, 2, text, rank)


def weigh(terms: list[str], rows: int = 2, total: int = 100) -> TermWeights:
    """``terms`` weighed as if each were in ``rows`` of ``total`` chunks."""
    return weigh_terms(terms, dict.fromkeys(terms, rows), total)


def test_weighted_fusion_combines_normalised_weights() -> None:
    """score = wv*vector + wt*text with weights normalised to sum 1; both parts are reported."""
    keyword = [row(1, "a.md", "alpha beta", -5.0)]
    vector = [row(1, "a.md", "alpha beta", 0.2), row(2, "b.md", "gamma", 0.1)]
    q = QuerySettings(vector_weight=0.35, text_weight=0.15)  # normalises to 0.7 / 0.3
    weights = weigh(["alpha", "beta"])
    hits = rank_hybrid(keyword, vector, weights, 5, 0.0, q, TODAY)
    by_path = {h.path: h for h in hits}
    assert by_path["a.md"].vector_score == pytest.approx(0.8)
    assert by_path["a.md"].text_score == soft_cap(1.0)  # coverage: both terms
    share = bm25_share(-5.0, weights) / (K1 + 1.0)
    fused_text = (1 - SHARE_IN_FUSION) * 1.0 + SHARE_IN_FUSION * share  # coverage 1, and a part BM25's share
    assert 0.0 < share < 1.0 and by_path["a.md"].score == pytest.approx(0.7 * 0.8 + 0.3 * fused_text)
    assert by_path["b.md"].score == pytest.approx(0.7 * 0.9) and by_path["b.md"].text_score is None


def test_fusion_still_orders_strong_keyword_matches_whose_shares_both_reach_1() -> None:
    """A long query's two strong keyword matches both hold more than its whole share, but one matches far
    better (bm25 -60 against -23): at 0.2/0.8 it stays first although the other's vector is a little closer.
    (With the capped share in the sum, the vector alone decided: CISI lost 0.044 nDCG@10.) Their text scores
    say so too (a cap at 1.0 tied them)."""
    terms = ["ferns", "moss", "lichen", "spores", "canopy", "humidity"]
    keyword = [row(1, "strong.md", "ferns moss", -60.0), row(2, "weaker.md", "lichen spores", -23.0)]
    vector = [row(2, "weaker.md", "lichen spores", 0.45), row(1, "strong.md", "ferns moss", 0.50)]
    hits = rank_hybrid(keyword, vector, weigh(terms), 5, 0.0, QuerySettings(), TODAY)
    assert [h.path for h in hits] == ["strong.md", "weaker.md"]
    assert 0.8 < hits[1].text_score < hits[0].text_score < 1.0  # type: ignore[operator]


def test_fusion_orders_chunks_that_each_hold_every_word_of_a_short_query_by_bm25() -> None:
    """Both notes hold both words of a short query (coverage 1 each); one holds them far more strongly (bm25
    -12 against -4). It stays first although the vector side slightly prefers the other: without BM25's share
    in the keyword side, the two tied there and the vector alone ordered them."""
    keyword = [row(1, "strong.md", "lichen spores lichen spores", -12.0), row(2, "weak.md", "lichen spores", -4.0)]
    vector = [row(2, "weak.md", "lichen spores", 0.50), row(1, "strong.md", "lichen spores lichen spores", 0.52)]
    hits = rank_hybrid(keyword, vector, weigh(["lichen", "spores"]), 5, 0.0, QuerySettings(), TODAY)
    assert [h.path for h in hits] == ["strong.md", "weak.md"]


def test_min_score_keeps_what_either_side_scores_high_enough() -> None:
    """With keyword-heavy weights a strong paraphrase (vector only) still passes; a weak neighbour does not."""
    keyword = [row(1, "kw.md", "alpha", -3.0)]
    vector = [row(2, "paraphrase.md", "x", 0.45), row(3, "noise.md", "y", 0.8)]
    q = QuerySettings(vector_weight=0.2, text_weight=0.8)
    hits = rank_hybrid(keyword, vector, weigh(["alpha"]), 5, 0.35, q, TODAY)
    assert [h.path for h in hits] == ["kw.md", "paraphrase.md"]
    assert hits[1].score == pytest.approx(0.2 * 0.55) and hits[1].vector_score == pytest.approx(0.55)


def test_hybrid_withholds_the_keyword_hits_keyword_search_withholds() -> None:
    """A query on another topic that shares a common word with the memory ('show'): its keyword hit scores
    above min_score (coverage leaves out the words no chunk holds), but keyword search answers nothing, and
    so does hybrid search unless the vector side finds something. A query keyword search answers keeps its
    keyword hits."""
    terms = ["aspirin", "platelets", "show"]
    other_topic = weigh_terms(terms, {"show": 30}, 100)
    show = row(1, "memory/a.md", "Let me show you the garden", -1.0)
    assert keyword_score(show, other_topic) >= 0.35 and rank_keyword([show], other_topic, 5, QuerySettings(), TODAY) == []
    assert rank_hybrid([show], [], other_topic, 5, 0.35, QuerySettings(), TODAY) == []
    near = row(2, "memory/b.md", "blood thinners", 0.4)  # cosine distance 0.4: similarity 0.6
    assert [h.path for h in rank_hybrid([show], [near], other_topic, 5, 0.35, QuerySettings(), TODAY)] == ["memory/b.md"]
    known = weigh_terms(terms, {"aspirin": 1, "show": 30}, 100)
    aspirin = row(3, "memory/c.md", "aspirin for the headache", -2.0)
    found = rank_hybrid([show, aspirin], [], known, 5, 0.35, QuerySettings(), TODAY)
    assert [h.path for h in found] == ["memory/c.md"]  # "show" weighs little beside "aspirin": below min_score


def test_when_nothing_clears_min_score_keyword_hits_are_still_returned() -> None:
    """An exact ID match is never silently dropped: keyword hits survive a too-high bar, vector-only ones do not."""
    keyword = [row(1, "id.md", "YN0028 and more words", -0.5)]  # half the (equally rare) terms: text score 0.5
    vector = [row(2, "far.md", "unrelated", 0.5)]
    hits = rank_hybrid(keyword, vector, weigh(["yn0028", "qx4096"]), 5, 0.9, QuerySettings(), TODAY)
    assert [h.path for h in hits] == ["id.md"]
    assert hits[0].text_score == pytest.approx(0.5)


def test_rrf_rewards_agreement_and_honours_weights() -> None:
    """First in both lists scores 1; with more text weight a keyword-only winner beats a vector-only one."""
    keyword = [row(1, "both.md", "x", -9.0), row(2, "kw.md", "x", -8.0)]
    vector = [row(1, "both.md", "x", 0.1), row(3, "vec.md", "x", 0.2)]
    q = QuerySettings(fusion="rrf", vector_weight=0.3, text_weight=0.7)
    hits = rank_hybrid(keyword, vector, weigh(["x"]), 5, 0.0, q, TODAY)
    assert [h.path for h in hits] == ["both.md", "kw.md", "vec.md"]
    assert hits[0].score == pytest.approx(1.0)


def test_decay_halves_at_the_half_life_and_spares_evergreen_files() -> None:
    assert decay("memory/2026-05-31.md", TODAY, 30) == pytest.approx(0.5)
    assert decay("memory/2026-06-30-standup.md", TODAY, 30) == pytest.approx(1.0)
    assert decay("memory/2027-01-01.md", TODAY, 30) == 1.0  # future dates do not grow
    assert decay("memory/2000-01-01.md", TODAY, 30) < 0.001
    assert decay("MEMORY.md", TODAY, 30) == 1.0 and decay("memory/projects/atlas.md", TODAY, 30) == 1.0


def test_temporal_decay_lets_a_recent_note_overtake_an_old_one() -> None:
    rows = [row(1, "memory/2025-01-01.md", "deploy deploy", -9.0), row(2, "memory/2026-06-29.md", "deploy", -1.0)]
    plain = rank_keyword(rows, weigh(["deploy"]), 5, QuerySettings(), TODAY)
    decayed = rank_keyword(rows, weigh(["deploy"]), 5, QuerySettings(temporal_decay=True), TODAY)
    assert plain[0].path == "memory/2025-01-01.md" and decayed[0].path == "memory/2026-06-29.md"


def test_a_query_for_the_latest_ranks_the_newest_log_first_counting_its_age_from_the_newest_candidate() -> None:
    """Without decay on, a query that asks for the latest decays dated notes from the newest candidate's day that
    answers it, so that one keeps its score (its log is months old, the others' scores are cut by their age beside
    it); an undated note keeps its own. Both fusions and keyword-only search do so, and each hit says its factor."""
    rows = [row(1, "memory/2025-01-01.md", "deploy deploy", -9.0), row(2, "memory/2025-03-01.md", "deploy", -1.0),
            row(3, "MEMORY.md", "deploy", -2.0)]  # fmt: skip
    weights = weigh(["deploy"])
    plain = rank_keyword(rows, weights, 5, QuerySettings(), TODAY)
    latest = rank_keyword(rows, weights, 5, QuerySettings(), TODAY, latest=True)
    assert plain[0].path == "memory/2025-01-01.md" and all(hit.decay is None for hit in plain)
    newest = next(hit for hit in latest if hit.path == "memory/2025-03-01.md")
    oldest = next(hit for hit in latest if hit.path == "memory/2025-01-01.md")
    assert newest.decay == 1.0 and newest.score == next(h.score for h in plain if h.path == newest.path)
    assert oldest.decay == pytest.approx(0.5 ** (59 / 30)) and latest.index(newest) < latest.index(oldest)
    assert next(hit.decay for hit in latest if hit.path == "MEMORY.md") == 1.0
    # a newer log that only the vector side brought, far below the others, is not where the age is counted from
    vector = [row(1, "memory/2025-01-01.md", "deploy deploy", 0.1), row(2, "memory/2025-03-01.md", "deploy", 0.12),
              row(4, "memory/2025-06-01.md", "lunch", 0.95)]  # fmt: skip
    for fusion in ("weighted", "rrf"):
        q = QuerySettings(fusion=fusion)
        assert rank_hybrid(rows, vector, weights, 5, 0.0, q, TODAY)[0].path == "memory/2025-01-01.md", fusion
        hits = {hit.path: hit for hit in rank_hybrid(rows, vector, weights, 5, 0.0, q, TODAY, latest=True)}
        assert hits["memory/2025-03-01.md"].decay == 1.0 and hits["memory/2025-06-01.md"].decay == 1.0, fusion
        assert hits["memory/2025-01-01.md"].score < hits["memory/2025-03-01.md"].score, fusion


def test_mmr_demotes_a_near_duplicate_below_a_different_result() -> None:
    """λ < 1 moves a copy of the top hit below a distinct one; λ = 1 keeps relevance order."""
    rows = [
        row(1, "a.md", "the deploy failed because the disk was full", -9.0),
        row(2, "b.md", "the deploy failed because the disk was full again", -8.9),
        row(3, "c.md", "rollback plan uses the blue green switch", -5.0),
    ]
    terms = weigh(["deploy"])
    relevance = rank_keyword(rows, terms, 3, QuerySettings(min_share=0), TODAY)
    diverse = rank_keyword(rows, terms, 3, QuerySettings(mmr=True, mmr_lambda=0.3, min_share=0), TODAY)
    assert [h.path for h in relevance] == ["a.md", "b.md", "c.md"]
    assert [h.path for h in diverse] == ["a.md", "c.md", "b.md"]
    assert [h.score for h in diverse] == [relevance[0].score, relevance[2].score, relevance[1].score]


def test_chunks_with_rare_terms_outrank_ties_on_common_words() -> None:
    """A four-chunk memory: FTS5 floors every IDF, so BM25 ranks barely differ and cannot break the tie
    between "like while made" (3 of 5 terms) and "turtles camping" (2 of 5); rarity must."""
    terms = ["like", "while", "made", "turtles", "camping"]
    weights = weigh_terms(terms, {"like": 4, "while": 3, "made": 3, "turtles": 2, "camping": 2}, 4)
    rows = [
        row(1, "memory/a.md", "I like how the shed was made while it rained", -3e-6),
        row(2, "memory/b.md", "Turtles at the camping site", -2e-6),
        row(3, "memory/c.md", "I like it", -1e-6),
    ]
    hits = rank_keyword(rows, weights, 3, QuerySettings(min_share=0), TODAY)
    assert [h.path for h in hits] == ["memory/b.md", "memory/a.md", "memory/c.md"]
    assert hits[0].score > 0.6 and hits[1].score < 0.4  # the plain shares were 0.4 and 0.6


def test_keyword_scores_weigh_bm25_against_the_querys_own_idf() -> None:
    """A chunk holding every term once at average length has the share 1; BM25 above that scores higher, below
    1 (:func:`soft_cap`); a share up to 0.5 is the score."""
    weights = weigh(["kafka", "lag"], rows=5)  # FTS5's IDF: log(95.5 / 5.5) each
    full = weights.bm25_scale
    assert keyword_score(row(1, "a.md", "kafka lag", -full), weights) == pytest.approx(soft_cap(1.0))
    assert soft_cap(1.0) < keyword_score(row(2, "b.md", "kafka kafka kafka", -1.5 * full), weights) < 1.0
    assert keyword_score(row(3, "c.md", "kafka", -0.3 * full), weights) == pytest.approx(0.5)  # coverage wins


def test_a_query_on_another_topic_gets_no_keyword_answer() -> None:
    """'show' is in the memory, 'aspirin' and 'platelets' are not: an answer holding only 'show' answers too
    little of the query (min_share) and is withheld whole; once a chunk holds 'aspirin', the answer holds
    both chunks, the better first. Coverage (the score) still ignores the missing words, so a typo does
    not lower every score."""
    terms = ["aspirin", "platelets", "show"]
    weights = weigh_terms(terms, {"aspirin": 1, "show": 30}, 100)
    show, aspirin = row(1, "memory/a.md", "Let me show you the garden", -1.0), row(2, "memory/b.md", "aspirin for the headache", -2.0)
    assert rank_keyword([show], weights, 5, QuerySettings(), TODAY) == []
    assert len(rank_keyword([show], weights, 5, QuerySettings(min_share=0), TODAY)) == 1
    assert [h.path for h in rank_keyword([show, aspirin], weights, 5, QuerySettings(), TODAY)] == ["memory/b.md", "memory/a.md"]
    assert answer_share(weights, ["show"]) < 0.15 < answer_share(weights, ["aspirin"])
    assert keyword_score(show, weights) > 0.15  # the score alone would have kept it


def test_a_short_query_on_the_memorys_own_topic_is_answered_though_its_words_are_common() -> None:
    """A chat about Gina's dance studio: 'gina' is in every chunk, 'dance' in most, 'receive' in none. The held
    words weigh almost nothing, so no share reaches min_share; but the answer holds two of the three words, and
    stands. Holding one of the three it is withheld, as for a query on another topic."""
    weights = weigh_terms(["gina", "receive", "dance"], {"gina": 46, "dance": 39}, 46)
    hit = row(1, "memory/s3.md", "Gina: the dance studio got its first award", -1e-6)
    assert answer_share(weights, [hit.text]) < 0.15
    assert len(rank_keyword([hit], weights, 5, QuerySettings(), TODAY)) == 1
    other = weigh_terms(["gina", "receive", "trophy"], {"gina": 46, "trophy": 1}, 46)  # the trophy: elsewhere
    assert rank_keyword([hit], other, 5, QuerySettings(), TODAY) == []


def test_a_long_question_is_answered_by_short_notes_that_each_hold_a_little_of_it() -> None:
    """Sixteen query words, each note holds two: no note answers 15% of the question alone, the answer as a
    whole does, so every note is returned (a per-note cut returned nothing)."""
    words = [f"word{n}" for n in range(16)]
    weights = weigh_terms(words, dict.fromkeys(words, 2), 400)
    notes = [row(n + 1, f"memory/{n}.md", f"- {words[2 * n]} and {words[2 * n + 1]}", -1.0 - n / 10) for n in range(8)]
    assert all(answer_share(weights, [note.text]) < 0.15 for note in notes)
    assert len(rank_keyword(notes, weights, 8, QuerySettings(), TODAY)) == 8


def test_an_answer_made_of_common_words_of_a_query_on_another_topic_is_withheld() -> None:
    """Ten query words, six of them nowhere in the memory: notes that together hold the four common ones
    are no answer (no note answers 15% alone), though they would be for a query the memory knows."""
    words = [f"word{n}" for n in range(10)]
    known = dict.fromkeys(words[:4], 40)
    weights = weigh_terms(words, known, 400)
    notes = [row(n + 1, f"memory/{n}.md", f"- {words[n]} today", -1.0) for n in range(4)]
    assert all(answer_share(weights, [note.text]) < 0.15 for note in notes)
    assert answer_share(weights, [note.text for note in notes]) >= 0.15
    assert rank_keyword(notes, weights, 6, QuerySettings(), TODAY) == []
    everything_known = weigh_terms(words, dict.fromkeys(words, 40), 400)
    assert len(rank_keyword(notes, everything_known, 6, QuerySettings(), TODAY)) == 4

"""query_terms + match_expression turn any text into a safe FTS5 OR-query; term weights give 0..1 keyword scores."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from memdex.memory_core.search.scoring import (
    K1,
    K1_GRAMS,
    bm25_idf,
    bm25_share,
    coverage_idf,
    soft_cap,
    term_coverage,
    term_weight,
    weigh_terms,
)
from memdex.memory_core.stores import bm25
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite.ops import match_expression
from memdex.memory_core.text.segments import index_text
from memdex.memory_core.text.terms import FTS_TOKENIZER, MAX_TERMS, joined_phrases, phrase_count, query_terms

ROWS = [
    "We decided to migrate the database to Postgres 16 next sprint",
    "Set POSTGRES_URL in the .env file before running the app",
    "yarn failed with error YN0028 on the lockfile",
    "The fix landed in commit a828e60 yesterday",
    "会议决定：数据库迁移 推迟到 下个月",
    "Redis caching and invalidation notes",
    "He said NEAR the end that AND OR NOT are operators",
    "Lunch at a cafe, a naive plan",
]

TERM_RE = re.compile(r'^"[^"]+"$')


def build_fts_query(text: str) -> str | None:
    """What a search matches for ``text`` (None: nothing to search for)."""
    terms = query_terms(text)
    return match_expression(terms) if terms else None


@pytest.fixture
def fts() -> Iterator[Any]:
    """A real FTS5 table indexing a few rows as the index does (rowid = position in ROWS + 1)."""
    conn = db.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(text, tokenize='{FTS_TOKENIZER}')")
    conn.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [(at, index_text(row)) for at, row in enumerate(ROWS, 1)])
    yield conn
    conn.close()


def run(conn: Any, fts_query: str) -> list[int]:
    """Run a MATCH the way the index does; any sqlite error fails the test."""
    rows = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (fts_query,)).fetchall()
    return sorted(r[0] for r in rows)


def terms_of(fts_query: str) -> list[str]:
    parts = fts_query.split(" OR ")
    for part in parts:
        assert TERM_RE.match(part), f"term {part!r} is not one double-quoted word"
    return [p[1:-1] for p in parts]


# Queries with an expected shape ---------------------------------------------------------------

CASES: list[tuple[str, str, str | None, list[int] | None]] = [
    # (id, input, expected query, expected matching rows or None to skip the match check)
    ("plain words", "database migration", '"database" OR "migration"', [1]),
    ("case folded and deduplicated", "Redis redis REDIS", '"redis"', [6]),
    ("stopwords dropped", "what is the postgres url", '"postgres" OR "url"', [1, 2]),
    ("double quotes", 'he wrote "postgres" and "redis', '"write" OR "postgres" OR "redis"', [1, 2, 6]),
    ("single quotes", "it's postgres' 'redis'", '"postgres" OR "redis"', [1, 2, 6]),
    (
        "boolean operators",
        "postgres AND redis OR NOT mysql NEAR sqlite",
        '"postgres" OR "redis" OR "not" OR "mysql" OR "near" OR "sqlite"',
        [1, 2, 6, 7],
    ),
    ("near group", "NEAR(postgres redis, 3)", '"near" OR "postgres" OR "redis" OR "3"', [1, 2, 6, 7]),
    ("prefix star", "postg* redis*", '"postg" OR "redis"', [6]),
    ("caret initial token", "^postgres", '"postgres"', [1, 2]),
    ("column filter", "text:postgres", '"text" OR "postgres"', [1, 2]),
    ("column set", "{text}: redis", '"text" OR "redis"', [6]),
    ("parentheses", "((postgres) OR (redis", '"postgres" OR "redis"', [1, 2, 6]),
    ("minus", "-postgres -redis", '"postgres" OR "redis"', [1, 2, 6]),
    ("plus", "postgres + redis", '"postgres" OR "redis"', [1, 2, 6]),
    ("sql injection", "'); DROP TABLE t; --", '"drop" OR "table" OR "t"', []),
    ("identifier with underscore", "POSTGRES_URL", '"postgres_url"', [2]),
    ("yarn error code", "YN0028", '"yn0028"', [3]),
    ("commit hash", "a828e60", '"a828e60"', [4]),
    ("hash with punctuation", "commit:a828e60!", '"commit" OR "a828e60"', [4]),
    ("leading and trailing underscores", "__postgres_url__", '"postgres_url"', [2]),
    ("cjk", "数据库迁移", '"数据" OR "据库" OR "库迁" OR "迁移"', [5]),
    ("cjk with punctuation", "会议：迁移？", '"会议" OR "迁移"', [5]),
    ("cjk one character", "库", '"库"', [5]),
    ("accents", "café naïve", '"café" OR "naïve"', [8]),
    ("emoji mixed with words", "🚀 redis 🔥", '"redis"', [6]),
    ("numbers", "16", '"16"', [1]),
]


@pytest.mark.parametrize(("text", "expected", "matches"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_queries_are_quoted_ored_terms_that_fts5_runs_without_error(
    fts: Any, text: str, expected: str, matches: list[int] | None
) -> None:
    fts_query = build_fts_query(text)
    assert fts_query == expected
    terms_of(fts_query)
    found = run(fts, fts_query)
    if matches is not None:
        assert found == matches


NOTHING_TO_SEARCH = [
    "",
    "what is the",  # stop words only
    "什么",
    "   ",
    "?!.,;:-()*^\"'",
    '""',
    "''",
    "___",
    "-- /* */ ;",
    "😀",
    "😀🔥🚀 👍🏽 🇫🇷",
    "\u200b\u200d\ufeff",
    "\u00ad",
    "\x00\x01\x02",
]


@pytest.mark.parametrize("text", NOTHING_TO_SEARCH)
def test_text_without_words_or_numbers_gives_no_query(text: str) -> None:
    assert build_fts_query(text) is None
    assert query_terms(text) == []


def test_a_ten_kilobyte_query_is_cut_to_a_bounded_number_of_terms(fts: Any) -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    assert len(text) > 10_000
    fts_query = build_fts_query(text)
    assert fts_query is not None
    terms = terms_of(fts_query)
    assert len(terms) == MAX_TERMS
    assert terms[:3] == ["word0", "word1", "word2"]
    assert run(fts, fts_query) == []


def test_a_ten_kilobyte_query_of_one_repeated_word_is_one_term(fts: Any) -> None:
    fts_query = build_fts_query("redis " * 2000)
    assert fts_query == '"redis"'
    assert run(fts, fts_query) == [6]


def test_a_ten_kilobyte_single_token_is_one_quoted_term_fts5_accepts(fts: Any) -> None:
    fts_query = build_fts_query("x" * 10_000)
    assert fts_query == '"' + "x" * 10_000 + '"'
    assert run(fts, fts_query) == []


def test_a_long_query_full_of_operators_and_quotes_runs(fts: Any) -> None:
    text = ('"postgres" AND (redis OR NOT x*) NEAR/3 ^y col:z - ' * 300)[:10_240]
    fts_query = build_fts_query(text)
    assert fts_query is not None
    assert len(terms_of(fts_query)) <= MAX_TERMS
    assert run(fts, fts_query) == [1, 2, 6, 7]


ODD_UNICODE = [
    "² ½ Ⅷ",  # numeric characters Python counts as alphanumeric
    "e\u0301cole",  # decomposed accent
    "กินข้าว",  # Thai with combining vowels
    "नमस्ते दुनिया",  # Devanagari with virama
    "مرحبا بالعالم",  # Arabic
    "Ǆ ǅ ǆ",  # titlecase digraphs
    "ＡＢＣ１２３",  # full-width Latin
    "x\u200by",  # zero-width space
    "\ufeffredis",  # byte order mark
    "I\u0307stanbul",  # combining dot above
    "\U0001d400\U0001d401",  # mathematical bold letters
]


@pytest.mark.parametrize("text", ODD_UNICODE)
def test_unusual_unicode_queries_run_without_sqlite_errors(fts: Any, text: str) -> None:
    fts_query = build_fts_query(text)
    assert fts_query is not None
    terms_of(fts_query)
    run(fts, fts_query)


def test_a_bom_prefixed_word_still_finds_the_word(fts: Any) -> None:
    assert run(fts, build_fts_query("\ufeffredis")) == [6]


def test_the_fixture_rows_really_are_searchable(fts: Any) -> None:
    # guards the tests above: an always-empty table would make every "no error" check vacuous
    assert run(fts, '"postgres"') == [1, 2]
    with pytest.raises(db.database_error()):
        run(fts, "postgres AND")  # raw FTS5 syntax does fail, which is what quoting prevents


# Term weights, BM25 share and coverage ---------------------------------------------------------

CHAT = ["like", "while", "made", "turtles", "camping"]
CHAT_COUNTS = {"like": 70, "while": 55, "made": 60, "turtles": 2, "camping": 3}  # of 100 chunks


def test_bm25_idf_is_fts5s_own_and_zero_where_fts5_floors_it() -> None:
    assert bm25_idf(1, 100) == pytest.approx(math.log(99.5 / 1.5))
    assert bm25_idf(49, 100) > 0.0
    assert bm25_idf(50, 100) == 0.0 and bm25_idf(100, 100) == 0.0  # FTS5: 1e-6 from half the chunks up


def test_bm25_parameters_and_idf_are_fts5s_own(fts: Any) -> None:
    """What every store and the Python scores read (stores/bm25.py) gives FTS5's bm25() to the last digits,
    over chunks of several lengths and counts, a term in half the rows (floored) among them."""
    fts.execute("DELETE FROM t")
    texts = ["kafka lag", "kafka kafka kafka broker lag lag", "broker", "standup notes kafka today", "lag", "standup"]
    fts.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", list(enumerate(texts, start=1)))
    lengths = [len(text.split()) for text in texts]
    average = sum(lengths) / len(texts)
    held = {term: sum(term in text.split() for text in texts) for term in ("kafka", "lag", "broker")}
    assert held["kafka"] * 2 == len(texts) and bm25.idf(held["kafka"], len(texts)) == bm25.IDF_FLOOR
    for rowid, rank in fts.execute("SELECT rowid, bm25(t) FROM t WHERE t MATCH 'kafka OR lag OR broker'"):
        words = texts[rowid - 1].split()
        norm = 1 - bm25.B + bm25.B * lengths[rowid - 1] / average
        expected = sum(
            bm25.idf(rows, len(texts)) * words.count(term) * (bm25.K1 + 1) / (words.count(term) + bm25.K1 * norm)
            for term, rows in held.items()
        )
        assert -rank == pytest.approx(expected, rel=1e-9), texts[rowid - 1]


def test_coverage_idf_never_reaches_zero_and_falls_with_frequency() -> None:
    weights = [coverage_idf(rows, 100) for rows in (1, 10, 50, 90, 100)]
    assert all(a > b > 0.0 for a, b in zip(weights, weights[1:])), weights
    assert coverage_idf(120, 100) > 0.0  # a chunk total that lags the counts cannot make it negative


def test_a_common_english_word_weighs_less_only_where_the_memory_cannot_tell() -> None:
    """Seven notes hold "time" and "standup" once each: alone they cannot tell which is the common word, so the
    English background does. It never raises a weight ("gina" in every chunk of a chat weighs what the chat
    says), and a large memory's own counts outweigh it."""
    rarest = coverage_idf(1, 7)
    assert term_weight("standup", 1, 7) == pytest.approx(rarest)
    assert term_weight("time", 1, 7) < 0.6 * rarest
    for word in ("time", "gina", "like", "standup"):
        for rows, total in ((1, 7), (4, 4), (46, 46), (30, 100), (50, 100_000)):
            assert term_weight(word, rows, total) <= coverage_idf(rows, total)
    assert term_weight("gina", 46, 46) == coverage_idf(46, 46)
    assert term_weight("time", 50, 100_000) > 0.95 * coverage_idf(50, 100_000)


def test_a_rare_term_outweighs_several_common_ones() -> None:
    """Plain shares would rank "like while made" (3 of 5 terms) above "turtles camping" (2 of 5)."""
    weights = weigh_terms(CHAT, CHAT_COUNTS, 100)
    common = term_coverage(weights, "I like how it was made while we waited")
    rare = term_coverage(weights, "Turtles at the camping site")
    assert rare > 0.8 and common < 0.2
    assert term_coverage(weights, "turtles") > term_coverage(weights, "like while made")


def test_coverage_matches_plural_forms_and_ignores_terms_no_chunk_holds() -> None:
    terms = query_terms("who owns the nightly backups?")
    assert terms == ["owns", "nightly", "backups"]
    weights = weigh_terms(terms, {"owns": 5, "backups": 5}, 100)  # no chunk says "nightly"
    assert term_coverage(weights, "Lukas owns the backup job") == pytest.approx(1.0)
    assert term_coverage(weights, "the backup job") == pytest.approx(0.5)
    assert term_coverage(weights, "nothing relevant here") == 0.0
    assert term_coverage(weigh_terms([], {}, 100), "anything") == 0.0
    assert term_coverage(weigh_terms(terms, {}, 0), "owns nightly backups") == 0.0  # no statistics: no score


def test_a_word_is_not_taken_for_a_function_word_its_ending_leaves() -> None:
    """Cutting "es" from "notes" left "not": a note that said "not" held "release notes" as fully as one about them."""
    weights = weigh_terms(["release", "notes"], {"release": 5, "notes": 5}, 100)
    assert term_coverage(weights, "we will not release on Friday") == pytest.approx(weights.weights[0] / sum(weights.weights))
    assert term_coverage(weights, "release notes drafted") == pytest.approx(1.0)
    assert term_coverage(weights, "the release note") == pytest.approx(1.0)
    themes = weigh_terms(["themes"], {"themes": 5}, 100)
    assert term_coverage(themes, "tell them") == 0.0 and term_coverage(themes, "the theme") == 1.0


def test_bm25_share_is_one_for_each_term_once_at_average_length(fts: Any) -> None:
    """bm25_scale is what FTS5's bm25() gives a chunk holding every query term once at average length."""
    fts.execute("DELETE FROM t")
    texts = ["alpha beta gamma delta", "alpha omega sigma kappa", "lorem ipsum dolor amet", "one two three four"]
    fts.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", list(enumerate(texts, start=1)))
    terms = ["alpha", "beta"]
    counts = {term: len(run(fts, match_expression([term]))) for term in terms}
    weights = weigh_terms(terms, counts, len(texts))
    (rank,) = fts.execute("SELECT bm25(t) FROM t WHERE t MATCH ? AND rowid = 1", (match_expression(terms),)).fetchone()
    assert weights.bm25_scale == pytest.approx(bm25_idf(1, 4))  # alpha, in half the rows, is floored
    assert bm25_share(rank, weights) == pytest.approx(1.0, abs=1e-4)


def test_bm25_share_is_zero_without_a_match_or_a_scale_and_grows_with_bm25() -> None:
    weights = weigh_terms(CHAT, CHAT_COUNTS, 100)
    assert bm25_share(0.0, weights) == 0.0 and bm25_share(2.5, weights) == 0.0
    assert bm25_share(-5.0, weigh_terms(["like"], {"like": 70}, 100)) == 0.0  # only floored terms, no text: no scale
    shares = [bm25_share(-x, weights) for x in (0.1, 1.0, 3.0, 6.0, 20.0)]
    assert all(a < b for a, b in zip(shares, shares[1:])), shares
    scores = [soft_cap(share) for share in shares]
    assert all(a < b < 1.0 for a, b in zip(scores, scores[1:])), scores  # no cap ties the strong matches


def test_common_terms_are_scored_by_their_frequency_and_the_chunks_length() -> None:
    """In a small folder FTS5 gives every term an IDF of 1e-6; bm25_share scores such terms itself: a note
    that repeats them beats one that holds them once, a short note one that mentions them in a long one."""
    weights = replace(weigh_terms(["postgresql", "bob"], {"postgresql": 3, "bob": 2}, 3), average_length=10.0)
    assert weights.common == (True, True)
    tiny = -1e-6  # what FTS5's bm25() gives such chunks
    once = bm25_share(tiny, weights, "bob met the team about postgresql limits today at noon")
    often = bm25_share(tiny, weights, "bob runs postgresql: postgresql upgrades and postgresql tuning")
    short = bm25_share(tiny, weights, "bob: postgresql")
    long = bm25_share(tiny, weights, "bob and postgresql " + "and many other things besides " * 5)
    assert long < once < often and once < short
    assert once == pytest.approx(1.0, abs=0.05)  # each term once at about the average length
    assert bm25_share(tiny, weights, "nothing here") == pytest.approx(0.0, abs=1e-5)


def test_cjk_grams_saturate_sooner_than_words() -> None:
    """A Han word is several overlapping grams, each counted again wherever the word repeats: a query with
    grams is scored here, at k1 = K1_GRAMS, so a paragraph that repeats the question's subject does not
    outrank the one that holds the rest of the question (at FTS5's k1 it would)."""
    terms = query_terms("乌龙茶产地")
    assert terms == ["乌龙", "龙茶", "茶产", "产地"]
    weights = replace(weigh_terms(terms, dict.fromkeys(terms, 1), 100), average_length=20.0)
    assert all(weights.in_python) and set(weights.saturation) == {K1_GRAMS} and K1_GRAMS < K1
    repeats, answers = "乌龙茶" * 5, "乌龙茶的产地是福建"
    assert bm25_share(-1.0, weights, repeats) < bm25_share(-1.0, weights, answers)
    assert bm25_share(-50.0, weights, answers) == bm25_share(-0.5, weights, answers)  # FTS5's rank is not used
    at_fts5_k1 = replace(weights, saturation=(K1,) * len(terms))
    assert bm25_share(-1.0, at_fts5_k1, repeats) > bm25_share(-1.0, at_fts5_k1, answers)
    english = weigh_terms(["oolong"], {"oolong": 1}, 100)
    assert english.in_python == (False,) and english.saturation == (K1,)  # words keep FTS5's BM25


def test_soft_cap_keeps_shares_up_to_a_half_and_stays_below_one() -> None:
    assert [soft_cap(x) for x in (0.0, 0.2, 0.35, 0.5)] == [0.0, 0.2, 0.35, 0.5]  # min_score reads these
    capped = [soft_cap(x) for x in (0.6, 1.0, 1.5, 2.2, 10.0)]
    assert all(0.5 < a < b <= 1.0 for a, b in zip(capped, capped[1:])), capped
    assert soft_cap(2.2) < 1.0


@pytest.mark.parametrize("rank", [10.0, 0.0, -1e-12, -0.3, -1.0, -12.0, -1e3, -1e9])
@pytest.mark.parametrize("text", ["", "like", "turtles camping", "like while made turtles camping", "camping " * 50])
def test_keyword_scores_stay_within_zero_and_one(rank: float, text: str) -> None:
    for total in (0, 1, 4, 100, 10**6):
        weights = weigh_terms(CHAT, {t: min(n, total) for t, n in CHAT_COUNTS.items()}, total)
        for score in (soft_cap(bm25_share(rank, weights, text)), term_coverage(weights, text)):
            assert not math.isnan(score)
            assert 0.0 <= score <= 1.0


def test_a_term_asked_more_than_once_is_counted_up_to_a_bound() -> None:
    """BM25's query term frequency: a long question names its subject more than once."""
    from memdex.memory_core.text.terms import MAX_REPEATS, term_repeats

    asked = term_repeats("Retrieval of documents: how is retrieval evaluated, and why does retrieval fail? Retrieval!")
    assert asked == {"retrieval": MAX_REPEATS, "documents": 1, "evaluated": 1, "fail": 1}
    assert term_repeats("the a of") == {}


@pytest.mark.parametrize(
    ("text", "phrases"),
    [("what port does maple-zephyr-150 use?", ["maple zephyr 150"]),
     ("who owns libs/auth/jwt.py and ghcr.io/acme/ci-runner", ["libs auth jwt py", "ghcr io acme ci runner"]),
     ("Python 3.12 on src/getUserName.ts", ["3 12", "src getusername get user name ts"]),
     ("IL-6 levels, H2A.Z", ["il 6", "h2a z"]),
     ("a budget of $5,000 (1,2,3)", ["5 000"]),
     ("long-term pro-inflammatory and/or e.g. U.S. 1/2 POSTGRES_URL naïve-bayes", [])],
    ids=["host", "paths", "version and camelCase", "gene names", "thousands", "no name"],
)  # fmt: skip
def test_a_name_the_query_joins_is_the_phrase_of_the_tokens_the_index_holds(text: str, phrases: list[str]) -> None:
    """Words joined by . / : @ or joined with a digit are a name; a hyphenated word, a run of stop words or of
    single letters, snake_case (already one term) and a run glued to other letters are not."""
    assert joined_phrases(text) == phrases


def test_a_joined_name_is_held_only_where_its_words_are_written_together(fts: Any) -> None:
    """FTS5 matches the quoted phrase, and coverage and BM25 computed here count it, only where its tokens are in
    a row on one line; the words held apart answer the words alone."""
    together, apart = "Ask Jonas before touching libs/auth/jwt.py today", "jwt errors in libs/logging/setup.py\nauth py"
    fts.executemany("INSERT INTO t(rowid, text) VALUES (?, ?)", [(90, index_text(together)), (91, index_text(apart))])
    phrase = "libs auth jwt py"
    found = [r for (r,) in fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match_expression([phrase]),))]
    assert found == [90]
    assert (phrase_count(together, phrase.split()), phrase_count(apart, phrase.split())) == (1, 0)
    words, counts = query_terms(phrase), dict.fromkeys([*query_terms(phrase), phrase], 1)
    weights = weigh_terms([*words, phrase], counts, 10, phrases=[phrase])
    assert term_coverage(weights, together) == 1.0
    assert term_coverage(weights, apart) == pytest.approx(sum(weights.weights[:-1]) / sum(weights.weights))
    assert weights.by_key() == weigh_terms(words, counts, 10).by_key()  # snippets weigh the words, not the phrase


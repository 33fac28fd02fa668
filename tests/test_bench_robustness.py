"""The robustness suite's statistics: the margin's bootstrap interval and the floor over memdex's own chunks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import needs_shared

from bench.quality import (
    DEFAULT_EVAL_DIR,
    Document,
    Query,
    document_suite,
    load_cisi,
    load_scifact,
    load_scifact_train,
)
from bench.robustness import Row, interval, largest_losses, load_mixed, memdex_chunks, render
from bench.tokenizers import PLAIN, measure


def test_interval_of_a_constant_difference_is_that_difference() -> None:
    assert interval([0.25] * 40) == (0.25, 0.25)


def test_interval_holds_the_mean_is_seeded_and_narrows_with_more_queries() -> None:
    few = [1.0, -1.0, 0.5, 0.0, -0.25] * 4
    low, high = interval(few)
    mean = sum(few) / len(few)
    assert low < mean < high
    assert interval(few) == (low, high)  # seeded: the same table on every run
    many_low, many_high = interval(few * 25)
    assert many_high - many_low < (high - low) / 2


def test_interval_sees_a_one_sided_difference_as_above_zero() -> None:
    low, _ = interval([0.0] * 30 + [1.0] * 10)
    assert low > 0


def test_the_queries_furthest_below_the_floor_are_listed_under_the_table() -> None:
    """Only queries below the plain floor, the largest loss first, each beside the floor over memdex's chunks."""
    queries = [Query(f"q{i}", text, "all", {}) for i, text in enumerate(["a", "b | c", "d", "e\nf"])]
    losses = largest_losses(queries, [0.5, 0.2, 0.9, 0.1], [0.5, 0.6, 0.3, 0.3], [0.4, 0.2, 0.3, 0.1], 5)
    assert [(loss.qid, round(loss.memdex - loss.floor, 3)) for loss in losses] == [("q1", -0.4), ("q3", -0.2)]
    assert largest_losses(queries, [0.5, 0.2, 0.9, 0.1], [0.5, 0.6, 0.3, 0.3], [0.4, 0.2, 0.3, 0.1], 1) == losses[:1]
    table = render([Row("cisi", "q3", "keyword", 4, 0.425, 0.425, -0.1, 0.1, 0.25, losses)])
    assert "cisi q3, keyword: the 2 queries furthest below the floor" in table
    assert "| q1 | 0.200 | 0.600 | 0.200 | b \\| c |" in table  # a pipe in the query is escaped
    assert "| q3 | 0.100 | 0.300 | 0.100 | e f |" in table  # on one line
    assert "furthest below" not in render([Row("cisi", "q3", "keyword", 4, 0.425, 0.425)])


def test_the_floor_on_memdex_chunks_ranks_them_and_judges_their_files(tmp_path: Path) -> None:
    """A long paper that says "turtles" eight times in one place is found first through that chunk, while
    over whole files (the plain floor) a short note that says it once outranks the diluted paper; and a word
    no chunk holds finds nothing."""
    filler = " ".join(f"filler{i} says nothing in particular." for i in range(600))
    documents = {
        "long": Document("A long paper", f"{filler} {'turtles ' * 8}{filler}"),
        "short": Document("Reptiles", "turtles nest"),
        "other": Document("Bees", "bees make honey"),
    }
    queries = {"q1": "turtles", "q2": "honey bees", "q3": "zebras"}
    qrels = {"q1": {"long": 1}, "q2": {"other": 1}, "q3": {"short": 1}}
    suite = document_suite("tiny", documents, queries, qrels, None, [])
    assert measure(PLAIN, suite, tmp_path, memdex_chunks).scores == pytest.approx((1.0, 1.0, 0.0))
    whole_files = measure(PLAIN, suite, tmp_path).scores
    assert whole_files[0] < 1.0 and whole_files[1:] == pytest.approx((1.0, 0.0))


@needs_shared(DEFAULT_EVAL_DIR / "scifact" / "qrels" / "train.tsv")
def test_scifact_train_asks_its_own_claims_of_the_test_splits_index() -> None:
    test, train = load_scifact(DEFAULT_EVAL_DIR), load_scifact_train(DEFAULT_EVAL_DIR)
    assert (train.name, train.folder, test.folder) == ("scifact-train", "scifact", "scifact")
    assert train.workspaces[0].files == test.workspaces[0].files  # one index serves both
    asked = {q.qid for q in train.workspaces[0].queries}
    assert len(asked) == 809 and not asked & {q.qid for q in test.workspaces[0].queries}


@needs_shared(DEFAULT_EVAL_DIR / "jsquad")
def test_a_mixed_set_asks_its_own_queries_of_every_document_sets_files() -> None:
    cisi = load_cisi(DEFAULT_EVAL_DIR)
    mixed, other = load_mixed(DEFAULT_EVAL_DIR, 5, "cisi"), load_mixed(DEFAULT_EVAL_DIR, 3, "cmrc")
    (pooled,), (also,) = mixed.workspaces, other.workspaces
    assert (mixed.name, mixed.folder, other.folder) == ("mixed-cisi", "mixed", "mixed")
    assert pooled.files == also.files  # one workspace and index serve every mixed-* set
    assert set(cisi.workspaces[0].files) < set(pooled.files)
    folders = {path.split("/")[0] for path in pooled.files}
    assert folders == {"docs", "memory"} and set(pooled.extra_paths) == {"docs"}
    assert any(re.search("[\u4e00-\u9fff]", text) for text in pooled.files.values())  # Chinese and Japanese too
    assert [q.qid for q in pooled.queries] == [q.qid for q in cisi.workspaces[0].queries[:5]]
    assert [q.relevant for q in pooled.queries] == [q.relevant for q in cisi.workspaces[0].queries[:5]]
    assert len(also.queries) == 3 and all(unit.path.startswith("memory/") for q in also.queries for unit in q.relevant)

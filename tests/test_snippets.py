"""Snippets show the lines that answer the query, and an answer keeps within its character budget."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memdex.memory_core import MemoryEngine
from memdex.memory_core.errors import InputError
from memdex.memory_core.search.ranking import Ranked
from memdex.memory_core.search.snippets import LineScorer, best_window, fit, to_hit
from memdex.memory_core.stores.records import ChunkRow
from memdex.memory_core.text.chunking import text_cost
from memdex.memory_core.text.terms import query_terms, term_keys

pytestmark = pytest.mark.both_stores

FILLER = "- **Mel**: we talked about the weather and the week ahead, nothing much happened"


def chunk(lines: list[str], start: int = 1, cid: int = 1, path: str = "memory/2026-01-01.md") -> Ranked:
    return Ranked(ChunkRow(cid, path, "memory", start, start + len(lines) - 1, "\n".join(lines), -1.0), 1.0, 1.0)


def test_the_snippet_is_the_matching_lines_not_the_chunk_head() -> None:
    """The answer sits on line 15 of a 20-line chunk: the snippet holds it, with its true line numbers."""
    lines = [FILLER] * 20
    lines[14] = "- **Mel**: we went camping with the turtles at the lake last weekend"
    item = chunk(lines, start=40)
    window = best_window(item.row.text, 40, 59, LineScorer(["camping", "turtles"], [item.row.text]), 400)
    assert "camping with the turtles" in window.text and len(window.text) <= 400
    assert window.text == "\n".join(lines[window.start_line - 40 : window.end_line - 40 + 1])  # whole lines
    assert (window.start_line, window.end_line) == (53, 57)  # context leans forward: two lines after for one before


def test_a_word_no_line_holds_as_written_finds_the_line_with_another_form_of_it() -> None:
    """FTS5 found the chunk for "invoice" by its line that says "invoices": the snippet shows that line, not
    the chunk's head. Where some line holds a term as written, those lines decide ("decided" over "decide")."""
    lines = [FILLER] * 20
    lines[14] = "- **Mel**: Sarah archived the old invoices on Friday"
    item = chunk(lines)
    window = best_window(item.row.text, 1, 20, LineScorer(["invoice"], [item.row.text]), 300)
    assert "old invoices" in window.text
    lines[3] = "- **Mel**: we decide on the venue tomorrow"
    lines[16] = "- **Mel**: Sarah decided on the lake"
    text = "\n".join(lines)
    window = best_window(text, 1, 20, LineScorer(["decided"], [text]), 200)
    assert "Sarah decided" in window.text and "we decide" not in window.text


def test_a_rare_term_outweighs_a_common_one() -> None:
    """'like' is on every line, 'camping' on one: that line wins, not the first line with 'like'."""
    lines = [f"- I like item {i} and more filler text to make this line long enough" for i in range(30)]
    lines[22] = "- I like camping"
    text = "\n".join(lines)
    window = best_window(text, 1, 30, LineScorer(["like", "camping"], [text]), 200)
    assert "I like camping" in window.text


def test_a_word_the_whole_memory_holds_often_weighs_less_than_the_lines_alone_say() -> None:
    """Among these lines "doing" is rare and "volunteer" common; in the memory it is the other way round. The
    lines alone show "doing"; with the memory's weights the window shows the volunteering."""
    lines = [FILLER] * 24
    lines[3] = "- **John**: I'm doing fine, busy week"
    for at in (12, 16, 20):
        lines[at] = "- **Maria**: I volunteer at the shelter on Fridays"
    lines[18] = "- **John**: I started to volunteer as a mentor at the school"
    text = "\n".join(lines)
    terms = ["doing", "volunteer"]
    alone = best_window(text, 1, 24, LineScorer(terms, [text]), 200)
    memory = {key: weight for term, weight in (("doing", 0.2), ("volunteer", 3.0)) for key in term_keys(term)}
    weighed = best_window(text, 1, 24, LineScorer(terms, [text], memory), 200)
    assert "doing fine" in alone.text and "volunteer" not in alone.text
    assert "volunteer" in weighed.text and "doing fine" not in weighed.text


async def test_a_snippet_weighs_words_by_the_whole_memory_too(
    make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    """End to end: "doing" is in every note, "volunteer" in one log, where it is on several lines; the snippet
    shows the volunteering, not the one line of that log that says "doing"."""
    for day in range(1, 29):
        write(f"memory/2026-02-{day:02}.md", f"# 2026-02-{day:02}\n\n- **Sam**: what are you doing today, day {day}?\n")
    lines = ["# 2026-03-02", ""] + [FILLER] * 24
    lines[4] = "- **John**: I'm doing fine, busy week"
    for at in (14, 18, 22):
        lines[at] = "- **Maria**: I volunteer at the shelter on Fridays"
    lines[20] = "- **John**: I started to volunteer as a mentor at the school"
    write("memory/2026-03-02.md", "\n".join(lines) + "\n")
    async with make_engine() as engine:
        await engine.sync()
        answer = await engine.search("what is John doing as a volunteer?", max_results=1, max_chars=200)
        (top,) = answer.results
        assert top.path == "memory/2026-03-02.md"
        assert "volunteer as a mentor" in top.snippet and "doing fine" not in top.snippet


def test_a_short_chunk_is_returned_whole_and_a_long_line_is_cut_around_its_match() -> None:
    scorer = LineScorer(["needle"], [])
    whole = best_window("# Title\n\n- short", 3, 5, scorer, 700)
    assert (whole.start_line, whole.end_line, whole.text) == (3, 5, "# Title\n\n- short")
    long_line = "x" * 900 + " needle " + "y" * 900
    window = best_window(f"# Head\n{long_line}", 1, 2, scorer, 300)
    assert (window.start_line, window.end_line) == (2, 2)
    assert "needle" in window.text and len(window.text) == 300
    assert window.text.startswith("…") and window.text.endswith("…")


def test_a_long_traditional_chinese_sentence_is_cut_around_its_match() -> None:
    """A sentence too long for the snippet is cut around the query's first term, found in its traditional form
    too (遷移 for the query's 迁移): the line starts far from it."""
    line = "甲" * 200 + "我們決定遷移資料庫" + "乙" * 200
    scorer = LineScorer(query_terms("迁移"), [line])
    window = best_window(f"# 筆記\n{line}", 1, 2, scorer, 120)
    assert "遷移" in window.text and window.text.startswith("…"), window.text


CJK_SENTENCES = [f"第{n}次会议讨论了预算和人员安排，没有做出新的决定。" for n in range(1, 40)]


def test_a_long_cjk_line_shows_its_answering_sentences_whole() -> None:
    """A Chinese paragraph on one line: the snippet is whole sentences around the one that answers, cut at
    。 and never mid-sentence, within the weighted budget (a CJK character costs four)."""
    sentences = list(CJK_SENTENCES)
    sentences[25] = "用户喜欢喝乌龙茶，不喜欢咖啡。"
    line = "".join(sentences)
    scorer = LineScorer(query_terms("乌龙茶"), [line])
    window = best_window(f"# 笔记\n{line}", 1, 2, scorer, 300)
    assert (window.start_line, window.end_line) == (2, 2)
    assert "用户喜欢喝乌龙茶，不喜欢咖啡。" in window.text
    assert text_cost(window.text) <= 300 and len(window.text) < 300 // 2
    inner = window.text.strip("…")
    assert window.text.startswith("…") and window.text.endswith("…")
    assert inner.endswith("。") and line.find(inner) > 0 and line[line.find(inner) - 1] == "。"  # whole sentences


def test_a_heading_over_a_long_line_shows_what_it_heads() -> None:
    """The heading and the paragraph under it both hold the query's words, and the heading comes first: the
    snippet is not the heading alone but the heading and the best sentences of the line it heads."""
    line = "锦地罗是一种植物。" * 3 + "它又被称为落地金钱。" + "它生长在山坡上。" * 20
    text = f"# 锦地罗\n\n{line}"
    window = best_window(text, 1, 3, LineScorer(query_terms("锦地罗"), [text]), 200)
    assert (window.start_line, window.end_line) == (1, 3)
    assert window.text.startswith("# 锦地罗\n\n锦地罗是一种植物。") and text_cost(window.text) <= 200


def test_the_answer_budget_counts_cjk_characters_as_tokens() -> None:
    """maxChars is weighted: 2,000 buys about 500 CJK characters, as it buys about 500 tokens of English."""
    items = [chunk(CJK_SENTENCES[n : n + 8], cid=n + 1, path=f"memory/2026-01-{n + 1:02d}.md") for n in range(20)]
    chosen, left_out = fit(items, query_terms("会议预算"), 2_000, 700)
    shown = sum(text_cost(window.text) for _, window in chosen)
    assert shown <= 2_000 and left_out > 0
    assert 400 < sum(len(window.text) for _, window in chosen) <= 650  # digits and "，" count one


def test_a_chunk_without_matching_lines_shows_its_head() -> None:
    lines = [f"line {i} " + "z" * 60 for i in range(30)]
    window = best_window("\n".join(lines), 7, 36, LineScorer(["absent"], []), 200)
    assert window.start_line == 7 and window.text.startswith("line 0 ")


def test_a_transcript_excerpt_keeps_its_chunk_range() -> None:
    """A transcript chunk's text is not its JSONL lines one for one: the snippet narrows, the range cannot."""
    lines = [f"User: question {i} " + "q" * 80 for i in range(12)] + ["Assistant: the vault codename is PERIWINKLE"]
    window = best_window("\n".join(lines), 3, 40, LineScorer(["periwinkle"], []), 300)
    assert "PERIWINKLE" in window.text and len(window.text) <= 300
    assert (window.start_line, window.end_line) == (3, 40)


def test_the_budget_is_filled_best_first_and_the_top_hit_is_never_dropped() -> None:
    items = [chunk([f"- fact {i} about pumpkins " + "w" * 200] * 6, cid=i, path=f"memory/n{i}.md") for i in range(10)]
    chosen, left_out = fit(items, ["pumpkins"], 1000, 700)
    hits = [to_hit(item, window) for item, window in chosen]
    assert sum(len(h.snippet) for h in hits) <= 1000
    assert [h.path for h in hits] == [f"memory/n{i}.md" for i in range(len(hits))]
    assert left_out == 10 - len(hits) > 0
    (only, window), *rest = fit(items[:1], ["pumpkins"], 200, 700)[0]  # smaller than its best line: cut, kept
    top = to_hit(only, window)
    assert not rest and len(top.snippet) <= 200 and "pumpkins" in top.snippet
    assert (top.chunk_start_line, top.chunk_end_line, top.start_line, top.end_line) == (1, 6, 1, 1)


def test_the_best_hit_reads_the_widest_and_eight_hits_fit_the_default_budget() -> None:
    """The best hit's snippet has up to ``snippet_chars`` and the others share what it leaves (at least two thirds
    of it each), so eight long hits fit 4,000 characters where six of 700 did (docs/benchmarks.md); three hits
    keep 700 each."""
    lines = [FILLER] * 30
    lines[14] = "- **Mel**: we went camping with the turtles at the lake last weekend"
    items = [chunk(lines, cid=i, path=f"memory/n{i}.md") for i in range(12)]
    chosen, left_out = fit(items, ["camping", "turtles"], 4000, 700)
    sizes = [len(window.text) for _, window in chosen]
    assert len(chosen) >= 8 and left_out == 12 - len(chosen) > 0 and sum(sizes) <= 4000, sizes
    assert 467 < sizes[0] <= 700 and all(size <= 467 for size in sizes[1:])  # 12 hits share: two thirds each
    eight = [len(window.text) for _, window in fit(items[:8], ["camping", "turtles"], 4000, 700)[0]]
    assert len(eight) == 8 and sum(eight) <= 4000 and all(size <= 471 for size in eight[1:]), eight
    three = [len(window.text) for _, window in fit(items[:3], ["camping", "turtles"], 2100, 700)[0]]
    assert len(three) == 3 and all(467 < size <= 700 for size in three[1:]), three
    assert all("camping with the turtles" in window.text for _, window in chosen)


def test_budget_the_hits_leave_widens_the_best_snippets_first_up_to_their_chunks() -> None:
    """Two long chunks and a short one under a 4,000-character budget: each snippet starts at 700
    characters, then what is left grows the top hit to its whole chunk and the second as far as it fits;
    the answer stays within the budget and every snippet is whole lines of its chunk."""
    lines = [FILLER] * 30
    lines[14] = "- **Mel**: we went camping with the turtles at the lake last weekend"
    items = [chunk(lines, cid=1, path="memory/a.md"), chunk(lines, cid=2, path="memory/b.md"), chunk(["- camping"], cid=3, path="memory/c.md")]
    chosen, left_out = fit(items, ["camping", "turtles"], 4000, 700)
    sizes = [len(window.text) for _, window in chosen]
    assert left_out == 0 and sum(sizes) <= 4000
    assert chosen[0][1].text == items[0].row.text  # the whole of the best chunk (2,459 characters)
    assert 700 < sizes[1] < len(items[1].row.text) and "camping with the turtles" in chosen[1][1].text
    assert chosen[2][1].text == "- camping"
    for item, window in chosen:
        rows = item.row.text.split("\n")
        assert window.text == "\n".join(rows[window.start_line - 1 : window.end_line])
    narrow = [len(window.text) for _, window in fit(items, ["camping", "turtles"], 2100, 700)[0]]
    assert sum(narrow) <= 2100 and narrow[0] > 700 and narrow[1] <= 700  # ~690 left: all to the top hit


def test_an_answer_never_shows_a_line_twice() -> None:
    """Neighbouring chunks of a file overlap: a line the better hit shows is not shown again by the next one,
    which shows its own best lines instead (whole lines, true line numbers)."""
    lines = [FILLER] * 34
    lines[16] = "- **Mel**: we went camping with the turtles at the lake"  # line 17, in both chunks
    lines[29] = "- **Mel**: the turtles were back in the pond on Sunday"  # line 30, in the second only
    items = [chunk(lines[:20], start=1, cid=1), chunk(lines[14:], start=15, cid=2)]
    (_, top), (_, after) = fit(items, ["camping", "turtles"], 4000, 400)[0]
    assert top.start_line <= 17 <= top.end_line
    assert top.end_line < after.start_line <= 30 <= after.end_line
    assert after.text == "\n".join(lines[after.start_line - 1 : after.end_line])


def test_a_line_shown_in_part_may_be_shown_again() -> None:
    """A long line is shown by its best sentences: the rest of it is not shown, so a later hit on the same line
    (a heading over it, read on) still shows what it holds."""
    long_line = "Filler words go here. " * 60 + "The turtles nest by the lake. " + "More filler goes here. " * 60
    items = [chunk([long_line], start=3, cid=1), chunk(["# Turtles", "", long_line], start=1, cid=2)]
    (_, piece), (_, heading) = fit(items, ["turtles", "nest"], 800, 400)[0]
    assert piece.text.startswith("…") and "turtles nest" in piece.text
    assert "turtles nest" in heading.text and heading.end_line == 3


async def test_search_shows_the_deep_line_and_memory_get_reads_exactly_it(
    make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    """End to end: the answer is deep in a long daily log; the snippet's line range reads back the same text."""
    lines = ["# 2026-03-02", ""] + [f"- note {i}: {FILLER}" for i in range(40)]
    lines[31] = "- The spare key for the boathouse is under the blue flowerpot."
    write("memory/2026-03-02.md", "\n".join(lines) + "\n")
    async with make_engine() as engine:
        await engine.sync()
        answer = await engine.search("where is the boathouse key?")
        top = answer.results[0]
        assert "boathouse is under the blue flowerpot" in top.snippet
        assert top.chunk_start_line <= top.start_line <= 32 <= top.end_line <= top.chunk_end_line
        excerpt = await engine.read(top.path, top.start_line, top.end_line - top.start_line + 1)
        assert excerpt.text.rstrip("\n") == top.snippet


async def test_a_hit_on_a_heading_alone_reads_on_into_what_it_heads(
    make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    """A heading over a paragraph longer than a chunk is a chunk of its own: as a hit it is read on into the
    chunk it heads (one hit when that chunk is a hit too), so no hit shows the agent a bare title."""
    paragraph = "".join(f"锦地罗第{n}次开花，花是红色的。" for n in range(200))  # one line, several chunks long
    write("memory/plants.md", f"# 植物志：锦地罗\n\n{paragraph}\n")
    async with make_engine() as engine:
        await engine.sync()
        (hit,) = (await engine.search("植物志")).results  # only the heading holds the word
        assert (hit.chunk_start_line, hit.chunk_end_line) == (1, 3)
        assert hit.snippet.startswith("# 植物志：锦地罗\n\n锦地罗第0次开花")
        both = (await engine.search("植物志 锦地罗", max_results=10)).results  # the chunk it heads is a hit too
        assert [(h.chunk_start_line, h.chunk_end_line) for h in both].count((1, 3)) == 1
        assert all(h.chunk_start_line == 3 for h in both if h.chunk_end_line != 3 or h.chunk_start_line != 1)


async def test_max_chars_bounds_the_answer_and_says_what_was_left_out(
    make_engine: Callable[..., MemoryEngine], write: Callable[[str, str], Path]
) -> None:
    for day in range(1, 21):
        write(f"memory/2026-04-{day:02}.md", f"# 2026-04-{day:02}\n\n" + f"- harvest {day}: {FILLER}\n" * 12)
    async with make_engine() as engine:
        await engine.sync()
        wide = await engine.search("harvest", max_results=15, max_chars=12_000)
        narrow = await engine.search("harvest", max_results=20, max_chars=1_000)
        assert len(wide.results) == 15 and wide.left_out == 0
        assert sum(len(h.snippet) for h in narrow.results) <= 1_000
        assert narrow.left_out == 20 - len(narrow.results) > 0
        assert narrow.warning and f"{narrow.left_out} more result(s) left out" in narrow.warning
        for bad in (199, 12_001):
            with pytest.raises(InputError, match="maxChars must be between 200 and 12000"):
                await engine.search("harvest", max_chars=bad)


def test_a_line_scores_the_same_in_every_process() -> None:
    """A line's score must not follow the hash seed (the order a set of terms is summed in), or two equal windows
    tie one way in one process and the other way in the next, and the agent reads different lines."""
    script = (
        "from memdex.memory_core.search.snippets import LineScorer\n"
        "scorer = LineScorer(['alpha', 'bravo', 'charlie'], [])\n"
        "scorer.weights = {'alpha': 0.1, 'bravo': 0.2, 'charlie': 0.3}\n"
        "print(repr(scorer.score('alpha bravo charlie')))\n"
    )
    scores = {
        subprocess.run(
            [sys.executable, "-c", script], env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True, text=True, check=True,
        ).stdout.strip()
        for seed in range(12)
    }  # fmt: skip
    assert scores == {"0.6"}, scores

"""chunk_markdown: line addressing, budgets, long lines, overlap and structural cuts."""

from __future__ import annotations

import hashlib

import pytest

from memdex.memory_core.text.chunking import CHARS_PER_TOKEN, Chunk, chunk_markdown, text_cost
from memdex.memory_core.textutil import split_lines

SLACK = CHARS_PER_TOKEN  # one token of tolerance on the character budget


def budget(tokens: int) -> int:
    return max(32, tokens * CHARS_PER_TOKEN) + SLACK


def sample_document() -> str:
    """A realistic note: headings, lists, blank lines, a long paragraph line, CJK and a code block."""
    parts = ["# Project notes", ""]
    for day in range(1, 15):
        parts += [
            f"## 2026-01-{day:02d}",
            "",
            f"- decided to keep Postgres {day} as the primary store",
            f"- follow up with Alice about the migration plan, ticket OPS-{1000 + day}",
            "",
            ("A long paragraph about caching and invalidation strategies. " * 6).strip(),
            "",
            f"会议记录：第{day}天讨论了数据库迁移和缓存策略。",
            "```",
            f"export POSTGRES_URL=postgres://db{day}.internal/main",
            "```",
            "",
        ]
    return "\n".join(parts) + "\n"


def covered_lines(chunks: list[Chunk]) -> set[int]:
    return {n for c in chunks for n in range(c.start_line, c.end_line + 1)}


# Line addressing -------------------------------------------------------------------------------


@pytest.mark.parametrize(("tokens", "overlap"), [(16, 0), (50, 10), (100, 20), (400, 80)])
def test_chunk_lines_are_one_based_inclusive_and_cover_every_line(tokens: int, overlap: int) -> None:
    text = sample_document()
    lines = split_lines(text)
    chunks = chunk_markdown(text, tokens, overlap)

    assert chunks[0].start_line == 1
    assert chunks[-1].end_line == len(lines)
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
    assert covered_lines(chunks) == set(range(1, len(lines) + 1))


def test_a_chunk_of_whole_lines_holds_exactly_those_lines() -> None:
    text = "\n".join(f"line number {i}" for i in range(1, 101)) + "\n"
    lines = split_lines(text)
    for chunk in chunk_markdown(text, tokens=50, overlap=10):
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_a_short_document_is_one_chunk_with_its_exact_text() -> None:
    chunks = chunk_markdown("# Title\n\nhello world\n", tokens=400, overlap=80)
    assert [(c.start_line, c.end_line, c.text) for c in chunks] == [(1, 3, "# Title\n\nhello world")]


def test_crlf_input_gives_the_same_chunks_as_lf_input() -> None:
    lf = sample_document()
    crlf = lf.replace("\n", "\r\n")
    assert "\r\n" in crlf
    lf_chunks = chunk_markdown(lf, tokens=100, overlap=20)
    crlf_chunks = chunk_markdown(crlf, tokens=100, overlap=20)
    assert len(lf_chunks) > 3
    assert [(c.start_line, c.end_line, c.text) for c in crlf_chunks] == [
        (c.start_line, c.end_line, c.text) for c in lf_chunks
    ]
    assert all("\r" not in c.text for c in crlf_chunks)


def test_chunk_hash_is_the_sha256_of_the_chunk_text() -> None:
    chunks = chunk_markdown(sample_document() + "😀 café 中文\n", tokens=100, overlap=20)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
    assert len({c.hash for c in chunks}) == len({c.text for c in chunks})  # same text <=> same hash


@pytest.mark.parametrize("text", ["", " ", "\n", "\n\n\n", "   \n\t\n  \r\n", " " * 5000, "\n" * 3000])
def test_empty_or_whitespace_only_text_gives_no_chunks(text: str) -> None:
    assert chunk_markdown(text, tokens=100, overlap=20) == []


# Budgets ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("english", sample_document()),
        ("english one long line", "The quick brown fox jumps over the lazy dog. " * 300),
        ("cjk", "中" * 2000),
        ("cjk lines", "\n".join("数据库迁移决定缓存策略" * 30 for _ in range(20))),
        ("japanese and korean", "日本語のテキストです。한국어 텍스트입니다. " * 200),
        ("mixed", "中文 english 混合テキスト 한국어 words " * 150),
        ("mixed lines", "\n".join(f"line {i}: 中文 {i} english" * (i % 13 + 1) for i in range(300))),
    ],
)
@pytest.mark.parametrize("tokens", [16, 64, 200, 400])
def test_every_chunk_stays_within_the_token_budget(name: str, text: str, tokens: int) -> None:
    chunks = chunk_markdown(text, tokens=tokens, overlap=tokens // 5)
    assert chunks
    for chunk in chunks:
        assert text_cost(chunk.text) <= budget(tokens), (name, chunk.start_line, text_cost(chunk.text))


def test_text_cost_counts_a_cjk_character_as_a_whole_token() -> None:
    assert text_cost("abcd") == 4
    assert text_cost("中") == CHARS_PER_TOKEN
    assert text_cost("中文ab") == 2 * CHARS_PER_TOKEN + 2
    assert text_cost("😀") == 1


def test_a_long_cjk_line_is_split_into_many_chunks_within_budget() -> None:
    chunks = chunk_markdown("中" * 2000, tokens=200, overlap=80)
    assert len(chunks) >= 8
    for chunk in chunks:
        assert text_cost(chunk.text) <= budget(200)
        assert (chunk.start_line, chunk.end_line) == (1, 1)
    assert sum(len(c.text) for c in chunks) == 2000


def test_a_long_latin_line_is_not_over_split() -> None:
    chunks = chunk_markdown("a" * 2000, tokens=200, overlap=80)
    assert 3 <= len(chunks) <= 5
    assert "".join(c.text for c in chunks) == "a" * 2000


def test_a_long_line_with_spaces_is_split_at_spaces_and_loses_no_character() -> None:
    line = " ".join(f"word{i:04d}" for i in range(400))
    chunks = chunk_markdown(line + "\n", tokens=200, overlap=0)
    assert 2 <= len(chunks) <= 5
    assert "".join(c.text for c in chunks) == line
    for chunk in chunks[:-1]:
        assert chunk.text.endswith(" "), "a cut should fall right after a space, not inside a word"


@pytest.mark.parametrize(
    "unit",
    ["😀", "𝒜", "👨\u200d👩\u200d👧", "🇫🇷", "𠀀", "a😀中"],
    ids=["emoji", "math-script", "zwj-family", "flag", "cjk-ext-b", "mixed"],
)
def test_a_line_of_astral_characters_is_split_into_valid_utf8_that_rejoins_to_the_line(unit: str) -> None:
    line = unit * (3000 // len(unit))
    chunks = chunk_markdown(line, tokens=200, overlap=0)
    assert len(chunks) >= 2
    for chunk in chunks:
        assert chunk.text.encode("utf-8").decode("utf-8") == chunk.text  # no lone surrogate anywhere
        assert (chunk.start_line, chunk.end_line) == (1, 1)
        assert text_cost(chunk.text) <= budget(200)
    assert "".join(c.text for c in chunks) == line


# Overlap and structure -------------------------------------------------------------------------


def test_consecutive_chunks_of_a_long_document_share_lines() -> None:
    text = "\n".join(f"line {i} " + "z" * 60 for i in range(1, 201)) + "\n"
    chunks = chunk_markdown(text, tokens=200, overlap=40)
    assert len(chunks) >= 10
    for previous, current in zip(chunks, chunks[1:]):
        assert current.start_line <= previous.end_line, "no overlap between consecutive chunks"
        assert current.start_line > previous.start_line, "a chunk must move forward"
        shared = set(range(current.start_line, previous.end_line + 1))
        assert 1 <= len(shared) <= 3  # 40 tokens = 160 chars ~ two 68-char lines


def test_without_overlap_consecutive_chunks_are_adjacent() -> None:
    text = "\n".join(f"line {i} " + "z" * 60 for i in range(1, 201)) + "\n"
    chunks = chunk_markdown(text, tokens=200, overlap=0)
    for previous, current in zip(chunks, chunks[1:]):
        assert current.start_line == previous.end_line + 1


def two_sections(heading: str = "# B", blank: bool = True) -> str:
    """'# A' then 20 lines (~1000 chars), a blank line, then the second section at line 23."""
    lines = ["# A"] + [f"alpha line {i:02d} " + "x" * 35 for i in range(20)]
    lines += [""] if blank else ["filler"]
    lines += [heading] + [f"beta line {i:02d} " + "y" * 36 for i in range(30)]
    return "\n".join(lines) + "\n"


def test_a_cut_prefers_the_heading_so_a_chunk_starts_at_the_heading_line() -> None:
    text = two_sections()
    assert split_lines(text)[22] == "# B"
    chunks = chunk_markdown(text, tokens=400, overlap=0)
    assert chunks[0].end_line == 22
    assert chunks[1].start_line == 23
    assert chunks[1].text.startswith("# B\n")


def test_with_overlap_the_chunk_before_a_heading_still_ends_right_before_it() -> None:
    chunks = chunk_markdown(two_sections(), tokens=400, overlap=80)
    assert chunks[0].end_line == 22
    assert chunks[1].start_line < 23 <= chunks[1].end_line


def test_without_a_heading_or_blank_line_the_chunk_is_filled_further() -> None:
    text = two_sections(heading="plain text B", blank=False)
    chunks = chunk_markdown(text, tokens=400, overlap=0)
    assert chunks[0].end_line > 23  # the structural cut above is caused by the heading, not by size


def test_a_heading_is_not_taken_while_the_chunk_is_less_than_half_full() -> None:
    lines = ["# A", "short intro", "# B"] + [f"beta line {i:02d} " + "y" * 36 for i in range(60)]
    chunks = chunk_markdown("\n".join(lines) + "\n", tokens=400, overlap=0)
    assert chunks[0].start_line == 1
    assert chunks[0].end_line > 3

"""The engine's answers. Their JSON form (camelCase) is what the MCP tools return."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Answer(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)


class IndexStatus(_Answer):
    """How far the index is, so a caller can judge an empty or partial answer."""

    state: Literal["starting", "indexing", "ready", "error"] = Field(
        description="'indexing' while a sync runs (answers cover what is indexed so far)"
    )
    files: int = Field(description="memory files in the index")
    chunks: int = Field(description="chunks in the index")
    files_done: int = Field(0, description="files handled by the running sync")
    files_total: int = Field(0, description="files the running sync will handle")
    last_sync: str | None = Field(None, description="when the last sync finished (ISO 8601, UTC)")
    error: str | None = Field(None, description="why the last sync failed, if it did")
    mode: Literal["hybrid", "keyword"] = Field("keyword", description="whether searches use embeddings now")
    provider: str | None = Field(None, description="embedding provider in use")
    model: str | None = Field(None, description="embedding model in use")
    note: str | None = Field(None, description="why search is keyword-only, or an embedding problem to know about")


class Explanation(_Answer):
    """Why a hit is where it is (``explain``): its place on each side, the factors, the snippet's choice."""

    keyword_rank: int | None = Field(None, description="place among the keyword (BM25) candidates; null: not one")
    vector_rank: int | None = Field(None, description="place among the vector candidates; null: not one")
    named_file: bool = Field(False, description="the query names this file (a date, its name, its folder with a slash): it ranks first")
    decay: float | None = Field(None, description="temporal decay factor applied to the score, when on or the query asks for the latest")
    rerank_rank: int | None = Field(None, description="place the reranker gave it, when one ran")
    snippet: str = Field(description="how the snippet's lines were chosen")


class Hit(_Answer):
    """One ranked chunk of a memory file."""

    path: str = Field(description="workspace-relative path; pass it to memory_get")
    start_line: int = Field(description="first line of the snippet (1-based)")
    end_line: int = Field(description="last line of the snippet (inclusive)")
    chunk_start_line: int = Field(
        description="first line of the whole matching chunk (a chunk of only a heading: with the chunk it heads); "
        "memory_get widens to it"
    )
    chunk_end_line: int = Field(description="last line of the whole matching chunk (inclusive)")
    score: float = Field(description="relevance, 0..1, higher is better")
    text_score: float | None = Field(None, description="keyword (BM25) part of the score")
    vector_score: float | None = Field(None, description="semantic (embedding) part of the score")
    snippet: str = Field(description="the chunk's lines that best match the query (the whole chunk when it is short)")
    source: Literal["memory", "sessions"] = "memory"
    hash: str | None = Field(None, description="the file's content hash as indexed (memory_edit's expectedHash); null for transcripts")
    explain: Explanation | None = Field(None, description="why this hit ranks here (only with explain)")


class SearchAnswer(_Answer):
    """Ranked results plus what produced them."""

    results: list[Hit]
    mode: Literal["hybrid", "keyword"] = Field(description="'keyword' when no embeddings are in use")
    provider: str | None = Field(None, description="embedding provider, when one is in use")
    model: str | None = Field(None, description="embedding model, when one is in use")
    warning: str | None = Field(None, description="something the caller should know about this answer")
    left_out: int = Field(0, description="results left out to keep the snippets within maxChars, and the whole answer within what hosts accept")
    index_status: IndexStatus


class Excerpt(_Answer):
    """Lines read from a memory file on disk."""

    path: str
    text: str
    from_: int = Field(alias="from", description="first line returned (1-based)")
    to: int = Field(description="last line returned (inclusive; from-1 when nothing was returned)")
    total_lines: int
    next_from: int | None = Field(None, description="pass as 'from' to continue; null at the end")
    note: str | None = Field(None, description="why the answer stops early, when it does")
    hash: str | None = Field(None, description="content hash of the whole file as read (memory_edit's expectedHash)")


class AppendReceipt(_Answer):
    """What memory_append wrote."""

    path: str
    start_line: int = Field(description="first line of the appended entry")
    end_line: int = Field(description="last line of the appended entry")
    bytes_written: int
    created: bool = Field(description="true when this append created the file")
    duplicate: bool = Field(False, description="true when the same text was already there, so nothing was written")
    hash: str = Field(description="the file's content hash after this append (memory_edit's expectedHash)")


class EditReceipt(_Answer):
    """What memory_edit changed (or, in review mode, proposed)."""

    path: str
    start_line: int = Field(description="first line holding the new text (a deletion: the line it was on)")
    end_line: int = Field(description="last line holding the new text")
    hash: str = Field(description="the file's content hash now; pass it as expectedHash to the next edit")
    id: str = Field(description="the history entry (`memdex undo <id>`), or the pending proposal's id")
    pending: bool = Field(False, description="true in review mode: nothing was written; the user applies or rejects it")
    note: str | None = Field(None, description="what a pending edit means for you, when it is pending")

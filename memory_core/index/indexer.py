"""The synchronous halves of a sync: prepare files on a worker thread, write them on the writer.

Preparing (stat, read, hash, chunk) needs no database, so it runs outside the writer. Writing
re-checks each file's stat: a file that changed after it was read is skipped and reported, so a
slow full sync can never overwrite what a faster, newer write already indexed.

Session transcripts (source ``"sessions"``) are parsed and chunked as transcripts, and a growing
one is re-indexed only once it grew by a delta (bytes or lines), or once its writer has gone quiet,
so an agent appending a message at a time does not cause a re-chunk and re-embed per message.

A Markdown file that only grew since it was indexed (its indexed bytes hash as before) is re-chunked
from its last chunks on (:func:`~..text.chunking.rechunk_tail`, exact), and only those chunks are
replaced. A targeted sync also recalls what this process last saw of the file (``recall``: an append
has just extended it), so the old bytes are neither hashed nor counted again: an append to a long daily
log costs what an append to a short one does. A full sync always hashes every changed file whole.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

from ..errors import PathError
from ..stores.base import StoreOps
from ..stores.records import FileChange, FileState, IndexedTail, TailChange, VectorDelta, Written
from ..text.chunking import Chunk, chunk_markdown, rechunk_tail
from ..text.transcripts import chunk_transcript, parse_transcript
from ..textutil import decode_text, is_utf16
from ..workspace import seen as last_seen
from ..workspace.files import MemoryFile

# A file modified this recently may change again within the same mtime tick without changing size;
# its mtime is not trusted ("racily clean", as git calls it), so the next sync re-hashes it.
RACY_SECONDS = 2.0

# A growing transcript not written to for this long is taken as finished (closed by its writer):
# it is indexed whatever its growth.
TRANSCRIPT_QUIET_SECONDS = 30.0

_TAIL_BLOCK = 1 << 16  # a grown file's last lines are read this much at a time, from the end


@dataclass(frozen=True)
class Prepared:
    """One file's pending change: new chunks, or (chunks None) only a new mtime/size."""

    file: MemoryFile
    seen: tuple[int, int]  # (mtime_ns, size) when read; the write is skipped if the file moved on
    state: FileState  # what the index records
    chunks: list[Chunk] | None
    text: str | None = None  # the file's content, for stores that serve hosts without the files
    tail: TailChange | None = None  # set when only the chunks after a kept one are replaced


def _stat(file: MemoryFile) -> tuple[int, int] | None:
    """(mtime_ns, size) of a regular file, or None: a cheap change check (one lstat, not the walk of
    :meth:`MemoryFile.open`). Content is only ever read through ``open``, which refuses symlinks, so
    a stat taken through a swapped-in symlink can cause a refused read, never a wrong one."""
    try:
        st = os.lstat(file.path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if stat.S_ISREG(st.st_mode) else None


def prepare(
    files: Sequence[MemoryFile],
    known: Mapping[str, FileState],
    *,
    tokens: int,
    overlap: int,
    force: bool = False,
    delta_bytes: int = 0,
    delta_lines: int = 0,
    deferred: list[str] | None = None,
    tails: Mapping[str, IndexedTail] | None = None,
    recall: bool = False,
    whole_text: bool = True,
) -> tuple[list[Prepared], list[str]]:
    """Work out what changed in ``files``; returns (changes, paths that vanished meanwhile).

    A transcript already in ``known`` that only grew, by less than ``delta_bytes`` (0: any growth
    counts) and fewer than ``delta_lines`` new lines (0: lines are not counted), and was written
    to in the last :data:`TRANSCRIPT_QUIET_SECONDS`, is left as indexed; its path is appended to
    ``deferred`` so the caller can look again once it is quiet. ``force`` re-indexes regardless.
    A Markdown file in ``tails`` (its indexed state and last chunks, chunked with these settings) that
    only grew has only its tail re-chunked. ``recall``: see :func:`_read`; with it, and unless the store
    needs ``whole_text``, such a file this process saw grow is not even read whole (:func:`_appended`).
    """
    changes: list[Prepared] = []
    vanished: list[str] = []
    for file in files:
        seen = _stat(file)
        if seen is None:
            vanished.append(file.rel)
            continue
        old = known.get(file.rel)
        if not force and old is not None and (old.mtime_ns, old.size) == seen:
            continue
        if (
            not force
            and old is not None
            and file.source == "sessions"
            and _below_delta(file, old, seen, delta_bytes, delta_lines)
        ):
            if deferred is not None:
                deferred.append(file.rel)
            continue
        tail = (tails or {}).get(file.rel)
        markdown = file.source != "sessions"
        if recall and not whole_text and markdown and not force and old is not None and tail is not None:
            try:
                appended = _appended(file, old, tail, tokens, overlap)
            except OSError:  # PathError too
                appended = None  # the whole read below reports it
            if appended is not None:
                changes.append(appended)
                continue
        try:
            read = _read(file, None if force else old, recall=recall and markdown)
        except PathError:
            vanished.append(file.rel)
            continue
        data, grew = read.data, read.grew
        state = FileState(read.digest, 0 if read.lines else _trusted(seen[0]), seen[1])
        if not force and old is not None and old.hash == state.hash:
            if (old.mtime_ns, old.size) != (state.mtime_ns, state.size):
                changes.append(Prepared(file, seen, state, None))
            continue
        text = decode_text(data)
        if grew and old is not None and tail is not None and markdown and not is_utf16(data):  # lines of UTF-8 bytes
            newlines, stable = read.lines or (data.count(b"\n"), data.count(b"\n", 0, old.size))
            found = rechunk_tail(text, tail.chunks, stable, tokens, overlap, newlines=newlines)
            if found is not None:
                changes.append(_tail_change(file, seen, state, old, tail, found, text))
                continue
        if file.source == "sessions":
            chunks = chunk_transcript(parse_transcript(text), tokens, overlap)
        else:
            chunks = chunk_markdown(text, tokens, overlap)
        changes.append(Prepared(file, seen, state, chunks, text))
    return changes, vanished


def _tail_change(
    file: MemoryFile,
    seen: tuple[int, int],
    state: FileState,
    old: FileState,
    tail: IndexedTail,
    found: tuple[int, list[Chunk]],
    text: str | None,
) -> Prepared:
    """The change that replaces ``tail``'s chunks after the one :func:`rechunk_tail` kept (``found``)."""
    kept, chunks = found
    change = TailChange(FileChange(file.rel, file.source, state, chunks, text), old, tail.chunks[kept], tuple(tail.chunks[kept + 1 :]))
    return Prepared(file, seen, state, chunks, text, change)


def _trusted(mtime_ns: int) -> int:
    """``mtime_ns`` as the index records it: 0 while it is too recent to trust (:data:`RACY_SECONDS`)."""
    return mtime_ns if time.time_ns() - mtime_ns > RACY_SECONDS * 1e9 else 0


def _appended(file: MemoryFile, old: FileState, tail: IndexedTail, tokens: int, overlap: int) -> Prepared | None:
    """A file this process saw grow from its indexed state ``old`` (:mod:`~..workspace.seen`), re-chunked from
    its last chunks on having read only their lines; the change carries no text, and is stale once the file
    moves on from the stamp it was read at. None when the file is not as seen or no indexed chunk is provably
    kept: the caller reads it whole."""
    with os.fdopen(file.open(), "rb") as handle:
        stamp = last_seen.stamp_of(handle.fileno())
        known = last_seen.recall(file.path, stamp)
        prior = known.digests.get(old.size) if known is not None and 0 < old.size < known.size else None
        if known is None or prior is None or prior[0] != old.hash:
            return None
        data = _last_lines(handle, known.size, known.newlines - tail.chunks[0].start_line + 1)
        if last_seen.stamp_of(handle.fileno()) != stamp:
            return None
    text = decode_text(data)  # from a line start: decodes as the whole file's end does
    found = rechunk_tail(text, tail.chunks, prior[1], tokens, overlap, newlines=known.newlines)
    if found is None:
        return None
    state = FileState(known.digest, 0, stamp[2])  # a remembered hash: the next full sync checks it
    return _tail_change(file, (stamp[3], stamp[2]), state, old, tail, found, None)


def _last_lines(handle: BinaryIO, size: int, newlines: int) -> bytes:
    """The end of a ``size``-byte file from the start of the line that has ``newlines`` ``\\n`` bytes from
    it on (the whole file when it has no more), read a block at a time from the end."""
    blocks: list[bytes] = []
    end, found = size, 0
    while end > 0 and found <= newlines:
        start = max(0, end - _TAIL_BLOCK)
        handle.seek(start)
        blocks.append(handle.read(end - start))
        found += blocks[-1].count(b"\n")
        end = start
    data = b"".join(reversed(blocks))
    at = len(data)
    for _ in range(newlines + 1 if found > newlines else 0):
        at = data.rfind(b"\n", 0, at)
    return data[at + 1 :] if found > newlines else data


@dataclass(frozen=True)
class _Read:
    """A file's bytes and hash; ``grew``: they only grew from the indexed state (its first ``old.size``
    bytes hash to ``old.hash``); ``lines``: (newlines, newlines in those first bytes) when the hash and
    counts were remembered (:mod:`~..workspace.seen`), not computed."""

    data: bytes
    digest: str
    grew: bool
    lines: tuple[int, int] | None = None


def _read(file: MemoryFile, old: FileState | None, *, recall: bool) -> _Read:
    """Read and hash ``file``. With ``recall``, a file as this process last saw it (:mod:`~..workspace.seen`:
    an append's usual case) is not hashed or counted again, and one that is not is remembered."""
    if not recall:
        data = file.read_bytes()
        sha, grew = _hash(data, old)
        return _Read(data, sha.hexdigest(), grew)
    data, stamp = file.read_stamped()
    current = last_seen.recall(file.path)
    known = current if current is not None and current.stamp == stamp else None
    # Only a file that grew from its indexed state takes its hash from memory; any other is hashed from
    # its bytes, so a re-chunk of the whole file always records the hash of what it chunked.
    if known is not None and old is not None and 0 < old.size < len(data):
        prior = known.digests.get(old.size)  # None: the index is further behind than what is remembered
        if prior is not None and prior[0] == old.hash:
            return _Read(data, known.digest, True, (known.newlines, prior[1]))
    sha, grew = _hash(data, old)
    if stamp is not None and known is None:  # unless an append has meanwhile left a newer state
        last_seen.remember_instead(file.path, last_seen.make(stamp, sha, data.count(b"\n")), current)
    return _Read(data, sha.hexdigest(), grew)


def _hash(data: bytes, old: FileState | None) -> tuple[hashlib._Hash, bool]:
    """The hash of ``data``, and whether ``data`` only grew from ``old`` (its first ``old.size`` bytes
    hash to ``old.hash``), in one pass."""
    if old is None or not 0 < old.size < len(data):
        return hashlib.sha256(data), False
    view = memoryview(data)
    sha = hashlib.sha256(view[: old.size])
    grew = sha.hexdigest() == old.hash
    sha.update(view[old.size :])
    return sha, grew


def _below_delta(file: MemoryFile, old: FileState, seen: tuple[int, int], delta_bytes: int, delta_lines: int) -> bool:
    """True when a transcript only grew a little since it was indexed and is still being written.

    Transcripts are appended to, so growth is measured from the indexed size and the indexed
    prefix is assumed unchanged. A file that shrank or kept its size was rewritten: not below.
    """
    mtime_ns, size = seen
    growth = size - old.size
    if growth <= 0 or growth >= delta_bytes:
        return False
    if time.time_ns() - mtime_ns > TRANSCRIPT_QUIET_SECONDS * 1e9:
        return False
    if delta_lines > 0:
        try:
            with os.fdopen(file.open(), "rb") as handle:
                handle.seek(old.size)
                new_lines = handle.read(growth).count(b"\n")
        except (OSError, PathError):
            return False  # let the full read report it
        if new_lines >= delta_lines:
            return False
    return True


def write(
    ops: StoreOps,
    conn: Any,
    changes: Sequence[Prepared],
    removed: Sequence[str],
    vectors: Mapping[str, Sequence[Sequence[float]]] | None = None,
) -> Written:
    """Apply changes in one transaction.

    ``vectors`` maps chunk hashes to their parts' embeddings; chunks without are stored without a vector
    (keyword search still finds them, and a later sync fills the gap).
    """
    stale: list[str] = []
    delta = VectorDelta()
    with ops.transaction(conn):
        fresh: list[Prepared] = []
        replaced: list[tuple[Prepared, tuple[Sequence[int], list[int]]]] = []
        for change in changes:
            if _stat(change.file) != change.seen:
                stale.append(change.file.rel)
            elif change.chunks is None:
                ops.touch_file(conn, change.file.rel, change.state)
            elif change.tail is not None:
                ids = ops.replace_tail(conn, change.tail)
                if ids is None:  # another write re-indexed the file since its chunks were read
                    stale.append(change.file.rel)
                else:
                    replaced.append((change, ([mark.id for mark in change.tail.dropped], ids)))
            else:
                fresh.append(change)
        files = [FileChange(c.file.rel, c.file.source, c.state, c.chunks or [], c.text) for c in fresh]
        replaced += zip(fresh, ops.replace_files(conn, files), strict=True)
        for change, (gone, ids) in replaced:
            delta.removed(gone)
            if vectors:
                rows = [(cid, vectors[c.hash]) for cid, c in zip(ids, change.chunks or []) if c.hash in vectors]
                ops.insert_vectors(conn, rows)
                delta.added(rows)
        delta.removed(ops.delete_files(conn, removed))
        if delta.rows:
            ops.stamp_vectors(conn, delta)
    return Written(stale, delta)


def write_vectors(ops: StoreOps, conn: Any, rows: Sequence[tuple[int, str, Sequence[Sequence[float]]]]) -> Written:
    """Store ``(chunk id, chunk hash, part vectors)`` for chunks that had none, in one transaction.

    Vectors are made outside any lock, so a chunk may have been replaced or removed meanwhile: only
    chunks that still exist with the same text and still lack a vector get one.
    """
    delta = VectorDelta()
    with ops.transaction(conn):
        wanted = ops.chunks_lacking_vectors(conn, [(cid, h) for cid, h, _ in rows])
        fresh = [(cid, vector) for cid, h, vector in rows if cid in wanted]
        if fresh:
            ops.insert_vectors(conn, fresh)
            delta.added(fresh)
            ops.stamp_vectors(conn, delta)
    return Written([], delta)


def chunk_texts(changes: Sequence[Prepared]) -> dict[str, str]:
    """Text of every new chunk in ``changes``, by hash (equal texts are embedded once)."""
    return {c.hash: c.text for change in changes for c in change.chunks or ()}

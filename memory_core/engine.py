"""The async face of memdex: one object per workspace that callers (server, CLI) hold.

It wires together parts with one job each and owns their background tasks:

* the index owner (:class:`~.stores.base.IndexOwner`, chosen by :func:`~.stores.factory.index_owner`: a SQLite
  file or a PostgreSQL database) — every connection to the index, the single writer, the read pool,
  rebuilds and repairs, and the mapping of database errors;
* :class:`~.embeddings.embedder.Embedder` — the embedding provider's lifecycle, the cache, vector identity;
* :class:`~.index.syncer.Syncer` — full and targeted syncs and rebuilds, with its
  :class:`~.index.vectors.VectorWorker` embedding in the background;
* :class:`~.search.searcher.Searcher` — argument checks, keyword and vector sides, fusion;
* :class:`~.index.changes.ChangeFeed` — what changed, for listeners (MCP resource notifications);
* :class:`~.workspace.watcher.Watcher` — file events to targeted syncs.

docs/architecture.md draws the parts and follows a search and a file change through them.

``async with MemoryEngine(settings) as engine`` opens the index and starts the first sync in the
background; entering the same engine again (e.g. once per SSE connection) only counts users.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeVar

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from .config import Settings
from .embeddings.embedder import Embedder
from .embeddings.factory import ProviderFactory, open_provider
from .errors import InputError, MemdexError, PathError, StoreError, as_memdex_error
from .index.changes import ChangeFeed, ChangeListener
from .index.syncer import Syncer, SyncReport
from .index.vectors import ProgressCallback
from .models import AppendReceipt, EditReceipt, Excerpt, IndexStatus, SearchAnswer
from .search.searcher import Searcher
from .stores.base import IndexOwner
from .stores.factory import index_owner
from .stores.filters import SearchFilter
from .workspace.appender import append_change, format_entry
from .workspace.consolidation import Material, take
from .workspace.editor import ChangedSince, check_editable, replace_text, reverse
from .workspace.files import LONG_TERM_NAMES, Workspace, answer_path
from .workspace.history import Change, Entry, History, undo_refusal
from .workspace.memory_file import HASH_CHARS, sweep_temp_files
from .workspace.proposals import Proposal, Proposals, apply
from .workspace.reader import excerpt, read_excerpt
from .workspace.watcher import Watcher

logger = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["MemoryEngine", "ProgressCallback", "SyncReport"]


class MemoryEngine:
    """Index, search, read and append to one workspace's memory.

    ``provider_factory`` starts the embedding provider (tests pass a deterministic one) and
    ``clock`` gives the wall time (Unix seconds) for daily logs and sync times.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        background_sync: bool = True,
        provider_factory: ProviderFactory = open_provider,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        sessions = settings.sessions
        self.workspace = Workspace(
            settings.workspace_dir, settings.extra_paths, sessions.dir if sessions.enabled else None
        )
        self.clock = clock
        self.index: IndexOwner = index_owner(settings)
        self.embedder = Embedder(settings.embedding, self.index, provider_factory)
        self.feed = ChangeFeed()
        self.syncer = Syncer(settings, self.workspace, self.index, self.embedder, self.feed, clock)
        self.searcher = Searcher(settings.query, settings.embedding.query_timeout, self.index, self.embedder, settings.rerank)
        self.history = History(self.workspace.root)
        self.proposals = Proposals(self.workspace.root)
        self.watcher: Watcher | None = None
        self._background_sync = background_sync
        self._users = 0
        self._task_group: TaskGroup | None = None

    # Lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> MemoryEngine:
        self._users += 1
        if self._users == 1:
            try:
                await self._open()
            except BaseException:
                self._users = 0
                await self._close()
                raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._users -= 1
        if self._users == 0:
            await self._close()

    async def _open(self) -> None:
        await self.index.open()
        self.searcher.open()
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self.feed.run)
        await self.syncer.open(self._task_group)
        self._task_group.start_soon(self.index.follow, self._changed_elsewhere)
        if self.settings.appends:
            await anyio.to_thread.run_sync(self._sweep)
        if self.settings.replica:
            self.syncer.vectors.start_provider(embed=False)  # query vectors only: the indexing host embeds the chunks
        elif self._background_sync:
            self.syncer.request_sync()
            if self.settings.watch.enabled:
                self.watcher = Watcher(self, self.settings.watch)
                self._task_group.start_soon(self.watcher.run)
        logger.info("memdex: workspace %s, index %s", self.workspace.root, self.index.location)

    def _sweep(self) -> None:
        """Remove the temporary files of edits a killed process left beside memory files."""
        folders = {self.workspace.root, *(f.path.parent for f in self.workspace.discover() if f.source == "memory")}
        for folder in folders:
            if removed := sweep_temp_files(folder):
                logger.warning("removed %s in %s, left by an interrupted edit", ", ".join(removed), folder)

    async def _close(self) -> None:
        if self.watcher is not None:
            self.watcher.close()
            self.watcher = None
        if self._task_group is not None:
            self._task_group.cancel_scope.cancel()
            await self._task_group.__aexit__(None, None, None)
            self._task_group = None
        with anyio.CancelScope(shield=True):  # a second signal must not leave the index open
            await self.index.close()
            await self.embedder.aclose()
            await self.searcher.aclose()

    # Syncing ------------------------------------------------------------------------------------

    async def sync(self, *, force: bool = False, progress: ProgressCallback | None = None) -> SyncReport:
        """Bring the index in line with the files, vectors included; concurrent calls share runs."""
        self.index.require_open()
        self._refuse_on_replica("index it")
        return await self.syncer.sync(force=force, progress=progress)

    async def sync_paths(self, paths: Iterable[str]) -> None:
        """Re-index these answer paths now (vectors follow in the background)."""
        self.index.require_open()
        self._refuse_on_replica("index it")
        await self.syncer.sync_paths(paths)

    def _refuse_on_replica(self, what: str) -> None:
        if self.settings.replica:
            raise InputError(self._replica_refusal(what))

    def _replica_refusal(self, what: str) -> str:
        """Why a replica does not ``what``: the host that holds the Markdown files does it."""
        return (
            f"this memdex serves memory {self.settings.memory_name!r} as a replica (store.postgres.replica): "
            f"only the host that holds its Markdown files may {what}; do it there"
        )

    def _changed_elsewhere(self, paths: list[str] | None) -> None:
        """Another process changed these paths of the index (None: anything may have changed: it switched to
        a rebuilt index, or the store was unreachable for a while)."""
        if paths is not None:
            self.feed.publish(paths)
        elif self._task_group is not None:
            self._task_group.start_soon(self._switched_elsewhere)

    async def _switched_elsewhere(self) -> None:
        if not self.settings.replica:
            self.syncer.sync_if_dirty()  # files saved while the store was unreachable are indexed now
        try:
            await self.syncer.learn_identity()
            self.feed.publish(await self.index.read(self.index.ops.file_paths))
        except MemdexError as exc:
            logger.warning("reading the index after a change elsewhere failed: %s", exc)

    def request_sync(self) -> None:
        """Schedule a full sync in the background (a no-op when one is already queued)."""
        self.syncer.request_sync()

    def mark_dirty(self) -> None:
        """Note that files may have changed unseen; the next search schedules a sync."""
        self.syncer.mark_dirty()

    def add_change_listener(self, listener: ChangeListener) -> None:
        """Call ``listener(paths)`` after memory files change in the index (any sync, any cause)."""
        self.feed.add_listener(listener)

    # State --------------------------------------------------------------------------------------

    @property
    def built_with(self) -> dict[str, Any] | None:
        """The embedding setup the index's vectors come from (None: keyword-only so far)."""
        return self.syncer.built.vectors

    @property
    def vectors_ready(self) -> bool:
        """True when searches can use vectors: a provider runs and the index was built with it."""
        return self.syncer.vectors_ready

    async def vectors_in_ram(self) -> bool:
        """True when vector searches are served from the in-memory copy (it is loaded and current)."""
        return await self.index.vectors_in_ram()

    async def status(self) -> IndexStatus:
        self.index.require_open()
        if self.settings.replica:
            await self.syncer.learn_identity()  # the indexing host may have built vectors or rebuilt since
        files, chunks = await self.index.counts()
        sync, embedding = self.syncer.status(), self.embedder.status()
        last = None
        if sync.last_sync is not None:
            last = dt.datetime.fromtimestamp(sync.last_sync, dt.UTC).isoformat(timespec="seconds")
        note = embedding.note
        if embedding.provider is not None and not self.vectors_ready and not embedding.failed:
            built = self.built_with
            if built is None or self.embedder.adopts(built):
                note = f"embedding the index with {embedding.provider} {embedding.model}; keyword results until it is ready"
        return IndexStatus(
            state=sync.state, files=files, chunks=chunks, files_done=sync.files_done, files_total=sync.files_total,
            last_sync=last, error=sync.error, mode="hybrid" if self.vectors_ready else "keyword",
            provider=embedding.provider, model=embedding.model, note=note,
        )

    # Queries ------------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        max_results: int | None = None,
        min_score: float | None = None,
        *,
        max_chars: int | None = None,
        where: SearchFilter | None = None,
        explain: bool = False,
    ) -> SearchAnswer:
        """Rank memory chunks for ``query``: hybrid when vectors are ready, keyword-only otherwise.
        Each hit's snippet is its chunk's best lines; all snippets together keep within ``max_chars``;
        ``where`` keeps to some files (before the candidates are cut, so filtered answers stay full);
        ``explain`` adds to each hit why it ranks where it does."""
        self.index.require_open()
        text = query.strip() if isinstance(query, str) else ""
        if not text:
            raise InputError("query is empty; pass the words to look for, e.g. 'database migration decision'")
        request = self.searcher.request(text, max_results, min_score, max_chars, where=where, explain=explain)
        self._check_reachable(where)
        self.syncer.sync_if_dirty()  # answer from the index as it is; the sync runs meanwhile
        try:
            status = await self.status()
            searched = await self.searcher.search(request, status, vectors=self.vectors_ready, today=self.today())
        except StoreError:
            if self.index.damaged:
                self.request_sync()  # it repairs the index from the Markdown
            raise
        if not searched.from_ram:
            self.syncer.vectors.load_soon()
        return await self._with_hashes(searched.answer, searched.hashes)

    def _check_reachable(self, where: SearchFilter | None) -> None:
        """InputError for a filter that no memory file here can pass, instead of a silent "no results": session
        transcripts with sessions off, or a pathPrefix above the workspace with no extra folder under it."""
        if where is None or self.settings.replica:  # a replica knows only what its store holds
            return
        if where.source == "sessions" and self.workspace.sessions_dir is None:
            raise InputError(
                "source 'sessions' asks for session transcripts, but sessions are off here (sessions.enabled is "
                "false); drop source, or enable sessions in the config"
            )
        prefix = where.path_prefix
        if prefix is not None and prefix.split("/")[0] == "..":
            roots = [self.workspace.relpath(root) for root in self.workspace.extra_roots]
            if not any(root == prefix or root.startswith(f"{prefix}/") or prefix.startswith(f"{root}/") for root in roots):
                raise InputError(
                    f"pathPrefix {prefix!r} is outside the workspace and holds no memory files (they are "
                    f"{self.workspace.describe()}); use a folder as memory_search returns paths, like memory/"
                )

    async def read(self, path: str, from_line: int = 1, lines: int | None = None) -> Excerpt:
        """Read lines of a memory file from disk (always the current truth, indexed or not); a replica
        reads the copy its store keeps of each Markdown file, as last indexed."""
        self.index.require_open()
        if self.settings.replica:
            rel = answer_path(path)
            content = await self.index.read(self.index.ops.file_text, rel)
            if content is None:
                raise PathError(
                    f"{path!r} is not a Markdown memory file of this replica (it reads the files as the indexing "
                    "host stored them); use a path exactly as memory_search returned it"
                )
            return excerpt(rel, "memory", content, from_line, lines)
        return await _file_errors(lambda: read_excerpt(self.workspace.resolve(path), from_line, lines))

    async def _with_hashes(self, answer: SearchAnswer, known: dict[str, str]) -> SearchAnswer:
        """``answer`` with each memory hit's file hash as indexed (the hash memory_edit checks), from ``known``
        (read with the candidates) and, for the hits' other files (a vector hit's), one lookup in the index, not a
        read of every file (that cost ~4 ms a search at 100k chunks). A file changed since it was indexed makes
        an edit with it refused as stale; memory_get gives the hash on disk."""
        paths = sorted({hit.path for hit in answer.results if hit.source == "memory"})
        if not paths:
            return answer
        missing = [path for path in paths if path not in known]
        indexed = known | (await self.index.read(self.index.ops.file_hashes, missing) if missing else {})
        results = [
            hit.model_copy(update={"hash": indexed[hit.path][:HASH_CHARS] if hit.path in indexed else None})
            for hit in answer.results
        ]
        return answer.model_copy(update={"results": results})

    # Writes -------------------------------------------------------------------------------------

    def write_refusal(self, tool: str) -> str | None:
        """Why this memory takes no writes (a read-only server, a replica), or None when it does."""
        if self.settings.read_only:
            return (
                f"this memdex server is read-only (read_only = true, or --read-only), so {tool} is off and "
                "nothing was written; tell the user the change, or ask them to serve memdex without --read-only"
            )
        if self.settings.replica:
            return self._replica_refusal(f"write to it ({tool} is off here; nothing was written)")
        return None

    def today(self) -> dt.date:
        """Today's date in the configured time zone."""
        return dt.datetime.fromtimestamp(self.clock(), self.settings.zone).date()

    async def append(
        self, text: str, target: Literal["daily", "long_term"] = "daily", heading: str | None = None,
        *, client: str = "cli",
    ) -> AppendReceipt:
        """Append a note to today's daily log or to MEMORY.md; it is searchable when this returns.
        The history records it, with ``client`` (who asked)."""
        self.index.require_open()
        if refusal := self.write_refusal("memory_append"):
            raise InputError(refusal)
        entry = format_entry(text, heading)
        if target not in ("daily", "long_term"):
            raise InputError(f"target must be 'daily' or 'long_term' (got {target!r})")
        day = self.today()
        title = f"# {day.isoformat()}" if target == "daily" else None

        def write() -> tuple[AppendReceipt, Change | None]:  # finding the file lists folders: a worker thread's job too
            file = self.workspace.daily_file(day) if target == "daily" else self.workspace.long_term_file()
            return append_change(self.workspace.resolve(file.rel, must_exist=False), entry, title=title)

        receipt, change = await _file_errors(write)
        if change is not None:
            await self._record(change, "append", client)
        # A repeat too: the first call may have written the file and then failed to index it (a dropped
        # database connection), and its caller retried. An unchanged file costs a stat and a hash.
        await self._indexed(receipt.path, "do not append it again")
        return receipt

    async def edit(
        self, path: str, old: str, new: str, expected_hash: str | None = None, *, client: str = "cli",
        by_agent: bool = False,
    ) -> EditReceipt:
        """Replace the one occurrence of ``old`` in a memory file by ``new`` (empty: delete it), atomically;
        refused when the file's hash is no longer ``expected_hash``, the text is missing or repeated, or
        the settings keep the file from edits. Searchable when this returns; the history records it.
        In review mode (edits.review) an edit of MEMORY.md ``by_agent`` is checked the same way, then kept
        as a proposal for `memdex review` instead of written."""
        self.index.require_open()
        if refusal := self.write_refusal("memory_edit"):
            raise InputError(refusal)
        edits = self.settings.edits

        def write() -> tuple[Change, bool]:
            file = self.workspace.resolve(path)
            check_editable(file.rel, daily_logs=edits.daily_logs, locked_paths=edits.locked)
            propose = by_agent and edits.review and file.rel in LONG_TERM_NAMES
            return replace_text(file, old, new, expected_hash, write=not propose), propose

        change, propose = await _file_errors(write)
        if propose:
            now = self._now()
            proposal = await _file_errors(lambda: self.proposals.add(change, time=now, client=client))
            return EditReceipt(
                path=change.path, start_line=change.start_line, end_line=change.start_line, hash=change.before,
                id=proposal.id, pending=True,
                note=f"pending review: nothing was written yet; the user applies or rejects it with `memdex review`. "
                f"Do not make this edit again; {change.path} keeps its hash until then",
            )
        entry = await self._record(change, "edit", client)
        await self._indexed(change.path, f"do not edit it again (`memdex undo {entry.id}` reverses it)")
        return _edit_receipt(entry)

    async def pending_proposals(self) -> list[Proposal]:
        """Agent edits waiting for review, oldest first."""
        return await _file_errors(self.proposals.pending)

    async def proposal_diff(self, proposal: Proposal) -> str:
        """``proposal`` as a diff of the whole lines it changes in its file as it is now."""

        def read() -> bytes | None:
            try:
                return self.workspace.resolve(proposal.path).read_bytes()
            except PathError:
                return None

        return proposal.diff(await _file_errors(read))

    async def review(self, apply: list[str], reject: list[str]) -> list[tuple[str, EditReceipt | str]]:
        """Reject, then apply, pending proposals by id ("all": every one); each id's receipt, or why it failed.

        An applied proposal must find its file at the hash it was proposed against; proposals made
        against the same file are applied one after the other, when only those applied here changed it.
        """
        self.index.require_open()
        if refusal := self.write_refusal("review"):
            raise InputError(refusal)
        every = [p.id for p in await self.pending_proposals()]
        outcomes: list[tuple[str, EditReceipt | str]] = []
        for proposal_id in every if reject == ["all"] else reject:
            try:
                proposal = await _file_errors(functools.partial(self.proposals.get, proposal_id))
                await _file_errors(functools.partial(self.proposals.remove, proposal.id))
                outcomes.append((proposal_id, "rejected"))
            except MemdexError as exc:
                outcomes.append((proposal_id, str(exc)))
        produced: dict[str, set[str]] = {}  # see proposals.apply
        left = [p.id for p in await self.pending_proposals()] if apply == ["all"] else apply
        for proposal_id in left:
            try:
                proposal = await _file_errors(functools.partial(self.proposals.get, proposal_id))
                outcomes.append((proposal_id, await self._apply(proposal, produced)))
            except MemdexError as exc:
                outcomes.append((proposal_id, str(exc)))
        return outcomes

    async def _apply(self, proposal: Proposal, produced: dict[str, set[str]]) -> EditReceipt:
        change = await _file_errors(lambda: apply(self.workspace.resolve(proposal.path), proposal, produced))
        await _file_errors(lambda: self.proposals.remove(proposal.id))
        entry = await self._record(change, "edit", f"{proposal.client} (reviewed)")
        await self._indexed(change.path, f"do not apply it again (`memdex undo {entry.id}` reverses it)")
        return _edit_receipt(entry)

    async def undo(self, entry_id: str, *, client: str = "cli") -> EditReceipt:
        """Reverse the recorded write ``entry_id`` while its file is as that write left it; InputError saying
        what changed otherwise. The undo is recorded too, so undoing it redoes the write."""
        self.index.require_open()
        if refusal := self.write_refusal("undo"):
            raise InputError(refusal)

        def write() -> tuple[Entry, Change]:
            entry, later = self.history.find(entry_id)
            try:
                return entry, reverse(self.workspace.resolve(entry.change.path), entry)
            except ChangedSince as exc:
                raise InputError(undo_refusal(entry, later, exc.now)) from None

        entry, change = await _file_errors(write)
        done = await self._record(change, "undo", client, undoes=entry.id)
        await self._indexed(change.path, "do not undo it again")
        return _edit_receipt(done)

    async def consolidation(self) -> Material:
        """The daily logs not yet consolidated and MEMORY.md with its hash, for a memory_consolidate run;
        those logs count as consolidated from now on, so the next run starts after them."""
        self.index.require_open()
        if refusal := self.write_refusal("memory_consolidate"):
            raise InputError(refusal)
        return await _file_errors(lambda: take(self.workspace))

    async def history_entries(self, path: str | None = None) -> list[Entry]:
        """The recorded writes, oldest first; only those of ``path`` when given."""
        rel = None if path is None else (await _file_errors(lambda: self.workspace.resolve(path, must_exist=False))).rel
        entries = await _file_errors(self.history.entries)
        return [e for e in entries if rel is None or e.change.path == rel]

    def _now(self) -> str:
        return dt.datetime.fromtimestamp(self.clock(), dt.UTC).isoformat(timespec="seconds")

    async def _record(self, change: Change, tool: str, client: str, undoes: str | None = None) -> Entry:
        """Record a write that was made; a failure says so, so that the caller does not make it again."""
        now = self._now()
        try:
            return await _file_errors(lambda: self.history.record(change, tool, client, now, undoes))
        except MemdexError as exc:
            raise MemdexError(
                f"the change to {change.path} was saved, but recording it in {self.history.path} failed ({exc}); "
                "do not make it again"
            ) from exc

    async def _indexed(self, rel: str, retry: str) -> None:
        """Index ``rel`` now that it was written (its subscribers hear of it); a failure says the write stands."""
        try:
            await self.syncer.sync_paths([rel], until_current=True)
        except StoreError as exc:
            self.mark_dirty()  # the next search indexes it
            raise StoreError(
                f"the change was saved to {rel}, but indexing it failed ({exc}); it is indexed at the next "
                f"search or sync, so {retry}"
            ) from exc


def _edit_receipt(entry: Entry) -> EditReceipt:
    change = entry.change
    return EditReceipt(
        path=change.path, start_line=change.start_line, end_line=change.end_line, hash=change.after, id=entry.id
    )


async def _file_errors(fn: Callable[[], T]) -> T:
    """Run a file operation on a worker thread; OS errors come back as memdex errors."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except OSError as exc:
        raise (as_memdex_error(exc) or MemdexError(f"file operation failed: {exc}")) from exc

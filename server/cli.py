"""The ``memdex`` command: serve, index, search, get, edit, history, review, undo, status, doctor, setup, hook."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from memdex.memory_core import (
    ConfigError,
    Hit,
    IndexBusy,
    MemoryEngine,
    SearchFilter,
    Settings,
    as_memdex_error,
    check_root,
    load_settings,
)

from . import diagnostics

logger = logging.getLogger("memdex")


DISTRIBUTION = "memdex-mcp"  # the name on PyPI (pyproject.toml's project.name); `memdex` there is another project's


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", "-w", type=Path, help="memory folder (default: config, else the current folder)")
    common.add_argument("--config", "-c", type=Path, help="TOML config file (default: $MEMDEX_CONFIG or ~/.config/memdex/config.toml)")
    common.add_argument("--index", type=Path, dest="index_path", help="SQLite index file (default: under ~/.local/state/memdex)")
    common.add_argument("--store", dest="store_backend", choices=["sqlite", "postgres"],
                        help="index store (default sqlite; postgres needs MEMDEX_STORE__POSTGRES__URL or store.postgres.url)")
    common.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="stderr log level")
    common.add_argument("--agent", "-a", help="which configured agent (default: all for serve, else the first)")

    parser = argparse.ArgumentParser(prog="memdex", description="Searchable Markdown memory for AI agents, over MCP.")
    parser.add_argument("--version", action="version", version=f"memdex {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", parents=[common], help="run the MCP server (stdio by default)")
    serve.add_argument("--transport", "-t", choices=["stdio", "sse", "http"], help="stdio, sse (legacy) or http (Streamable HTTP)")
    serve.add_argument("--host", help="address to bind for sse/http (default 127.0.0.1; any other needs --auth-token)")
    serve.add_argument("--allow-host", action="append", dest="allowed_hosts", metavar="NAME",
                       help="also answer requests whose Host header is NAME (repeatable; see server.allowed_hosts)")
    serve.add_argument("--insecure-no-auth", action="store_true", default=None,
                       help="serve a host other than loopback without --auth-token (anyone reaching it reads this memory)")
    serve.add_argument("--port", type=int, help="port for sse/http (default 8765)")
    serve.add_argument("--auth-token", help="require 'Authorization: Bearer TOKEN' on sse/http (or MEMDEX_AUTH_TOKEN)")
    serve.add_argument("--read-only", action="store_true", default=None, help="do not offer memory_append or memory_edit")
    serve.add_argument("--stateless", action="store_true", default=None,
                       help="http: keep no session between requests, so replicas behind a load balancer can share the load")
    serve.add_argument("--replica", action="store_true", default=None,
                       help="serve a PostgreSQL memory another host indexes: no files, no indexing, no appends")

    index = commands.add_parser("index", parents=[common], help="bring the index up to date and wait until it is complete")
    index.add_argument("--force", action="store_true", help="re-chunk every file, changed or not")

    search = commands.add_parser("search", parents=[common], help="search memory from the terminal")
    search.add_argument("query", help="words, a question or exact IDs")
    search.add_argument("--max-results", "-n", type=int, help="how many results (default 6)")
    search.add_argument("--max-chars", type=int, help="the snippets' total size in characters (default 4000)")
    search.add_argument("--explain", action="store_true", help="show why each result ranks where it does")
    search.add_argument("--after", metavar="YYYY-MM-DD", help="only daily logs dated on or after this day")
    search.add_argument("--before", metavar="YYYY-MM-DD", help="only daily logs dated on or before this day")
    search.add_argument("--path", dest="path_prefix", metavar="PREFIX", help="only files under this folder or this file")
    search.add_argument("--source", choices=["memory", "sessions"], help="only notes or only session transcripts")
    search.add_argument("--json", action="store_true", help="print the memory_search answer as JSON")

    get = commands.add_parser("get", parents=[common], help="print lines of a memory file")
    get.add_argument("path", help="a memory file path, e.g. MEMORY.md or memory/2026-01-31.md")
    get.add_argument("--from", dest="from_line", type=int, default=1, help="first line (1-based)")
    get.add_argument("--lines", type=int, help="how many lines (default: to the end)")
    get.add_argument("--json", action="store_true", help="print the memory_get answer as JSON")

    edit = commands.add_parser("edit", parents=[common], help="replace one exact piece of text in a memory file")
    edit.add_argument("path", help="a memory file path, e.g. MEMORY.md")
    edit.add_argument("--old", required=True, help="the exact text to replace (it must occur once)")
    edit.add_argument("--new", default="", help="the text to put in its place (default: delete it)")
    edit.add_argument("--hash", dest="expected_hash", help="refuse unless the file still has this content hash")

    history = commands.add_parser("history", parents=[common], help="list the appends and edits written through memdex")
    history.add_argument("path", nargs="?", help="only this memory file's")
    history.add_argument("--json", action="store_true", help="print every entry as a JSON line, pre-images included")

    review = commands.add_parser("review", parents=[common], help="show agent edits pending review (edits.review) and "
                                 "apply or reject them")
    review.add_argument("--apply", action="append", default=[], metavar="ID", help="apply this proposal ('all': every one)")
    review.add_argument("--reject", action="append", default=[], metavar="ID", help="reject this proposal ('all': every one)")

    undo = commands.add_parser("undo", parents=[common], help="reverse one append or edit (an id from `memdex history`)")
    undo.add_argument("id", help="the history entry to reverse")

    status = commands.add_parser("status", parents=[common], help="show the index and environment")
    status.add_argument("--json", action="store_true", help="print as JSON")

    commands.add_parser(
        "doctor", parents=[common], help="check SQLite, sqlite-vec and the embedding provider (loads or downloads the model)"
    )

    from .client_setup import CLIENTS
    from .hooks import EVENTS

    setup = commands.add_parser("setup", parents=[common], help="add memdex to an MCP client's config file (diff first)")
    setup.add_argument("client", metavar="CLIENT", help=f"{', '.join(CLIENTS)} (any name with --print)")
    setup.add_argument("--scope", choices=["user", "project"], default="user",
                       help="the user's config, or the one in the current folder (Claude Code, Cursor, VS Code, Codex)")
    setup.add_argument("--url", help="connect to a memdex already serving over HTTP at this URL instead of starting one")
    setup.add_argument("--auth-token", help="with --url: the server's bearer token, sent in the client's Authorization "
                       "header (Codex: from $MEMDEX_AUTH_TOKEN)")
    setup.add_argument("--create", action="store_true", help="create the workspace folder (with memory/) if it does not exist")
    setup.add_argument("--config-file", type=Path, metavar="PATH", help="edit this file instead of the client's usual one")
    setup.add_argument("--dry-run", action="store_true", help="print the change as a diff and write nothing")
    setup.add_argument("--remove", action="store_true", help="take memdex's entry and its hooks out again")
    setup.add_argument("--hooks", action="store_true",
                       help="claude-code, codex: also install `memdex hook` command hooks (with the server entry)")
    setup.add_argument("--marker", action="store_true", help="with --hooks: also a Stop hook that notes each session")
    setup.add_argument("--print", dest="show", action="store_true", help="print the entry to paste; change nothing")

    hook = commands.add_parser("hook", parents=[common], help="answer a host's lifecycle hook (JSON on stdin)")
    hook.add_argument("event", choices=EVENTS, help="session-start: memory files as context; pre-compact: the flush "
                      "prompt; consolidate: the consolidation prompt; stop: nothing, or the session marker")
    hook.add_argument("--marker", action="store_true", help="stop: note the session once a day in today's daily log")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    server = {key: getattr(args, key, None)
              for key in ("transport", "host", "port", "allowed_hosts", "insecure_no_auth", "stateless")}
    return load_settings(
        args.config,
        workspace=args.workspace,
        index_path=args.index_path,
        log_level=args.log_level,
        read_only=getattr(args, "read_only", None),
        auth_token=getattr(args, "auth_token", None),
        server=server,
        store={"backend": args.store_backend, "postgres": {"replica": getattr(args, "replica", None)}},
    )


def _agents(settings: Settings, wanted: str | None) -> dict[str, Settings]:
    """The agents a command works on: the one asked for, or all of them."""
    agents = settings.per_agent()
    if wanted is None:
        return agents
    if wanted not in agents:
        raise ConfigError(f"no agent named {wanted!r}; configured: {', '.join(agents)}")
    return {wanted: agents[wanted]}


def _one_agent(settings: Settings, wanted: str | None) -> Settings:
    return next(iter(_agents(settings, wanted).values()))


def _dump(model: Any) -> str:
    return json.dumps(model.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False)


class _Progress:
    """A progress bar on a terminal, a line per step otherwise; always on stderr."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.unit = ""
        self.last_line = -1

    def __call__(self, done: int, total: int, unit: str) -> None:
        if unit != self.unit:  # a new stage: files, then chunks to embed
            self.unit, self.last_line = unit, -1
        if self.tty:
            width = 30
            filled = width * done // total if total else width
            sys.stderr.write(f"\rindexing [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}")
            if done == total:
                sys.stderr.write("\n")
            sys.stderr.flush()
        elif done == total or done - self.last_line >= max(1, total // 10):
            self.last_line = done
            print(f"indexing: {done}/{total} {unit}", file=sys.stderr, flush=True)


async def _index(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        if not args.force:  # --force checks inside the sync; a damaged index is emptied and rebuilt there
            await engine.index.check_integrity()
        report = await engine.sync(force=args.force, progress=_Progress())
        status = await engine.status()
    print(
        f"indexed {status.files} files ({status.chunks} chunks) in {report.seconds:.2f}s: "
        f"{report.changed} re-indexed, {report.removed} removed -> {engine.index.location}"
    )
    return 0


async def _search(settings: Settings, args: argparse.Namespace) -> int:
    where = SearchFilter.parse(args.after, args.before, args.path_prefix, args.source)  # before a long sync
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        try:
            await engine.sync(progress=_Progress() if sys.stderr.isatty() else None)
        except IndexBusy as exc:  # another process is writing: WAL still lets this one read
            print(f"memdex: {exc}; searching the index as it is", file=sys.stderr)
        answer = await engine.search(
            args.query, args.max_results, max_chars=args.max_chars, where=where, explain=args.explain
        )
    if args.json:
        print(_dump(answer))
        return 0
    if not answer.results:
        print(f"no results ({answer.warning or 'nothing matched'})")
        return 0
    for hit in answer.results:  # like grep: the location, then the snippet's lines indented
        print(f"{hit.score:.3f}  {hit.path}:{hit.start_line}-{hit.end_line}")
        if hit.explain:
            print(f"       why: {_explained(hit)}")
        print("\n".join(f"    {line}" for line in hit.snippet.splitlines()))
    if answer.warning:
        print(f"memdex: {answer.warning}", file=sys.stderr)
    return 0


def _explained(hit: Hit) -> str:
    """One line: the hit's place and score on each side, the factors, how its snippet was chosen."""
    why = hit.explain
    if why is None:
        return ""
    parts = [
        f"keyword #{why.keyword_rank} ({hit.text_score:.3f})" if why.keyword_rank else "keyword: not a candidate",
        f"vector #{why.vector_rank} ({hit.vector_score:.3f})" if why.vector_rank else "vector: not a candidate",
    ]
    if why.decay is not None:
        parts.append(f"decay x{why.decay:.3f}")
    if why.rerank_rank is not None:
        parts.append(f"reranked #{why.rerank_rank}")
    parts.append(f"chunk {hit.chunk_start_line}-{hit.chunk_end_line}; snippet: {why.snippet}")
    return "; ".join(parts)


async def _get(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        excerpt = await engine.read(args.path, args.from_line, args.lines)
    if args.json:
        print(_dump(excerpt))
    else:
        print(excerpt.text)
        if excerpt.note:
            print(f"[{excerpt.note}]", file=sys.stderr)
    return 0


async def _edit(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        receipt = await engine.edit(args.path, args.old, args.new, args.expected_hash)
    print(f"edited {receipt.path}:{receipt.start_line}-{receipt.end_line} (hash {receipt.hash}); "
          f"`memdex undo {receipt.id}` reverses it")
    return 0


async def _history(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        entries = await engine.history_entries(args.path)
    for entry in entries:
        if args.json:
            print(entry.line())
            continue
        change = entry.change
        what = f"undo of {entry.undoes}" if entry.undoes else entry.tool
        print(f"{entry.id}  {entry.time}  {what:<16} {change.path}:{change.start_line}-{change.end_line}  "
              f"{change.before}->{change.after}  ({entry.client})")
        for sign, text in (("-", change.old), ("+", change.new)):
            for line in text.splitlines()[:3]:
                print(f"    {sign} {line}")
    if not entries:
        print("no appends or edits recorded yet", file=sys.stderr)
    return 0


async def _review(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        apply, reject = args.apply, args.reject
        pending = await engine.pending_proposals()
        if not apply and not reject:
            for proposal in pending:
                print(f"proposal {proposal.id} by {proposal.client} at {proposal.time} (file hash {proposal.base})")
                print(await engine.proposal_diff(proposal))
                if sys.stdin.isatty():
                    answer = input("apply, reject or skip? [a/r/S] ").strip().lower()
                    {"a": apply, "r": reject}.get(answer[:1], []).append(proposal.id)
            if not pending:
                print("no edits are pending review", file=sys.stderr)
        outcomes = await engine.review(apply, reject)
    failed = 0
    for proposal_id, outcome in outcomes:
        if isinstance(outcome, str):
            failed += outcome != "rejected"
            print(f"{proposal_id}: {outcome}", file=sys.stdout if outcome == "rejected" else sys.stderr)
        else:
            print(f"{proposal_id}: applied to {outcome.path}:{outcome.start_line}-{outcome.end_line} (hash {outcome.hash}); "
                  f"`memdex undo {outcome.id}` reverses it")
    return 2 if failed else 0


async def _undo(settings: Settings, args: argparse.Namespace) -> int:
    async with MemoryEngine(_one_agent(settings, args.agent), background_sync=False) as engine:
        receipt = await engine.undo(args.id)
    print(f"undid {args.id} in {receipt.path} (hash {receipt.hash}); `memdex undo {receipt.id}` redoes it")
    return 0


async def _serve(settings: Settings, args: argparse.Namespace) -> int:
    from .transport import serve

    engines = {name: MemoryEngine(agent) for name, agent in _agents(settings, args.agent).items()}
    await serve(settings, engines)
    return 0


async def _setup(settings: Settings, args: argparse.Namespace) -> int:
    from . import client_setup

    workspace = settings.workspace_dir
    if not args.remove and (args.url is None or args.hooks):  # what `serve` and `hook` will refuse, refused now
        if args.create and not workspace.exists():
            if args.dry_run:
                print(f"memdex: dry run; {workspace} would be created", file=sys.stderr)
            else:
                (workspace / "memory").mkdir(parents=True)
                print(f"memdex: created {workspace}", file=sys.stderr)
        elif not workspace.exists():
            raise ConfigError(f"workspace {workspace} does not exist; add --create to make it, or pass --workspace with "
                              "your memory folder")
        if workspace.exists():
            check_root(workspace)
    where = ["--workspace", str(workspace)]
    for flag, value in (("--config", args.config), ("--index", args.index_path)):
        if value is not None:
            where += [flag, str(value.expanduser().resolve())]
    if args.agent:
        where += ["--agent", args.agent]
    return client_setup.run(
        args.client, where, scope=args.scope, url=args.url, token=args.auth_token, config_file=args.config_file, dry_run=args.dry_run,
        remove=args.remove, hooks=args.hooks, marker=args.marker, show=args.show,
    )


async def _hook(settings: Settings, args: argparse.Namespace) -> int:
    from . import hooks

    return hooks.run(args.event, lambda: _one_agent(settings, args.agent), marker=args.marker)


_ON_A_WORKSPACE = {"serve", "index", "search", "get", "edit", "history", "review", "undo", "status"}  # refused on a missing or wrong workspace
_COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], Awaitable[int]]] = {
    "serve": _serve,
    "index": _index,
    "search": _search,
    "get": _get,
    "edit": _edit,
    "history": _history,
    "review": _review,
    "undo": _undo,
    "status": lambda settings, args: diagnostics.status(_one_agent(settings, args.agent), as_json=args.json),
    "doctor": lambda settings, args: diagnostics.doctor(_one_agent(settings, args.agent)),
    "setup": _setup,
    "hook": _hook,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``memdex`` console script."""
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
        logging.basicConfig(
            level=settings.log_level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        for noisy in ("httpx", "httpx2", "openai"):  # one INFO line per embedding request otherwise
            logging.getLogger(noisy).setLevel(logging.WARNING)
        if args.command != "serve":
            logging.getLogger("memdex.memory_core").setLevel(max(logging.WARNING, logging.getLevelName(settings.log_level)))
        if args.command in _ON_A_WORKSPACE:
            for agent in _agents(settings, args.agent).values():
                if not agent.replica:  # a replica reads the database, never a folder
                    check_root(agent.workspace_dir)
        code = anyio.run(_COMMANDS[args.command], settings, args)
        sys.stdout.flush()  # a reader that left early (`memdex status | head -1`) shows here, not at exit
        return code
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's own flush cannot fail again
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        error = as_memdex_error(exc)
        if error is None:
            raise
        print(f"memdex: {error}", file=sys.stderr)
        return 1 if args.command == "hook" else 2  # a hook's 2 would block the host's action


if __name__ == "__main__":
    sys.exit(main())

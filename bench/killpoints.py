"""Kill ``memdex index`` at many points and check that the next run always ends with the right index.

Usage (from the repository root)::

    .venv/bin/python bench/killpoints.py [--runs 24] [--files 1200] [--model-runs 0] [--seed 0] [--keep]

Each run starts from a known index state, starts a real ``memdex index`` process (``python -m
memdex.server.cli``), SIGKILLs it after a delay, then runs ``memdex index`` again to completion and checks:

* the restart exits 0;
* its chunks are the chunks of a fresh build with the same settings: the same set of
  ``(path, start_line, end_line, hash)`` rows (and, with a model, a vector for every chunk);
* SQLite's ``integrity_check`` says ok, before the restart (what the kill left) and after;
* no byte of the Markdown changed;
* no ``.rebuild-``/``.tmp-``/``.backup-`` file (or anything else unexpected) is left beside the index.

The runs cycle through the modes, ``--runs`` in all:

* ``index``   — a first ``memdex index`` into an empty index;
* ``force``   — ``memdex index --force`` over a complete index;
* ``rebuild`` — ``memdex index`` with new chunking settings over a complete index built with the old
  ones, so the kill lands in the shadow build, the catch-up or the install;
* ``switch``  — a first ``memdex index`` into an empty index, restarted with new chunking settings (the
  chunks a first run cut short wrote have settings the index does not know yet);

plus ``--model-runs`` runs of ``model``: a rebuild for new chunking that also embeds every chunk with the
local GGUF model (``--model``), on a smaller workspace (embedding takes ~15 chunks/s on 2 cores).

Kill delays are spread evenly, with seeded jitter, over each mode's run time counted from the moment
the process opens the index (Python's start-up, which varies with the machine's load, left out): at
first the time the same work took in this process plus a margin, then what runs that finished before
their kill took. It prints one line per run and then the summary, e.g.
``killpoints: 24 runs, 24 consistent, 0 stray files``; it exits 1 on any failure.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/killpoints.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from bench.workspace_gen import write_workspace
from memdex.memory_core import MemoryEngine, load_settings
from memdex.memory_core.stores.sqlite import db
from memdex.memory_core.stores.sqlite import ops as store

DEFAULT_MODEL = REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-f16.gguf"
CHUNKING_A = {"tokens": 400, "overlap": 80}  # the defaults
CHUNKING_B = {"tokens": 128, "overlap": 16}
MODES = ("index", "force", "rebuild", "switch")
INDEX_NAME = "idx.sqlite"
EXPECTED_BESIDE = {
    f"{INDEX_NAME}{suffix}" for suffix in ("", "-wal", "-shm", ".lock", ".gate", ".cache", ".cache-wal", ".cache-shm")
}
RUN_TIMEOUT = 300.0


@dataclass(frozen=True)
class Mode:
    """How one kind of run starts, what it runs, and what the index must equal afterwards."""

    name: str
    workspace: Path
    template: Path | None  # the index the run starts from (None: no index)
    reference: Path  # a fresh build with the run's settings
    env: dict[str, str]
    work: float  # seconds an in-process build of the same work took: the kill window's length
    force: bool = False
    restart_env: dict[str, str] | None = None  # the restart's settings when they differ from the run's


@dataclass
class Outcome:
    mode: str
    delay: float
    killed: bool
    ran: float  # seconds from opening the index to the kill or the exit
    problems: list[str] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)


# Index builds and checks ---------------------------------------------------------------------------


def settings_for(workspace: Path, index: Path, chunking: dict[str, int], model: Path | None) -> Any:
    embedding: dict[str, Any] = {"provider": "none"}
    if model is not None:
        embedding = {"provider": "local", "local": {"model": str(model)}}
    return load_settings(workspace=workspace, index_path=index, chunking=chunking, embedding=embedding, timezone="UTC")


def build_in_process(workspace: Path, index: Path, chunking: dict[str, int], model: Path | None = None) -> float:
    """A complete index, built by the engine in this process (no interpreter start-up); returns its seconds."""

    async def run() -> None:
        async with MemoryEngine(settings_for(workspace, index, chunking, model), background_sync=False) as engine:
            await engine.sync()

    started = time.monotonic()
    anyio.run(run)
    seconds = time.monotonic() - started
    conn = sqlite3.connect(index)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone is the whole index: copyable
    finally:
        conn.close()
    return seconds


def chunk_rows(index: Path) -> set[tuple[Any, ...]]:
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return set(conn.execute("SELECT path, start_line, end_line, hash FROM chunks"))
    finally:
        conn.close()


def vector_gaps(index: Path) -> int:
    """Chunks without a vector (through memdex's driver, which loads sqlite-vec)."""
    conn = db.connect(index, readonly=True)
    try:
        if store.vector_dims(conn) is None:
            return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        return store.count_without_vectors(conn)
    finally:
        conn.close()


def integrity(index: Path) -> str:
    if not index.exists():
        return "ok"  # killed before the file was made
    conn = sqlite3.connect(index)  # not read-only: the kill may have left a WAL to recover
    try:
        return "; ".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()[:3])
    except sqlite3.DatabaseError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def stray_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in EXPECTED_BESIDE)


# Runs ----------------------------------------------------------------------------------------------


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")}
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["HF_HUB_OFFLINE"] = "1"
    env["MEMDEX_EMBEDDING__PROVIDER"] = "none"
    return env


def chunking_env(chunking: dict[str, int]) -> dict[str, str]:
    return {"MEMDEX_CHUNKING__TOKENS": str(chunking["tokens"]), "MEMDEX_CHUNKING__OVERLAP": str(chunking["overlap"])}


def memdex_index(mode: Mode, index: Path, *, force: bool, restart: bool = False) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "memdex.server.cli", "index", "--workspace", str(mode.workspace), "--index", str(index)]
    return subprocess.Popen(
        [*command, *(["--force"] if force else [])],
        cwd=REPO_ROOT,
        env=mode.restart_env if restart and mode.restart_env else mode.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def prepare(mode: Mode, folder: Path) -> Path:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    index = folder / INDEX_NAME
    if mode.template is not None:
        shutil.copyfile(mode.template, index)
    return index


def one_run(mode: Mode, folder: Path, delay: float, before: dict[str, str]) -> Outcome:
    """Start the mode's ``memdex index``, SIGKILL it ``delay`` seconds after it opened the index, restart
    it and check the result. Opening is when ``<index>.lock`` appears (the sweep of stale shadows makes
    it first thing): measuring from there keeps Python's start-up, which varies with the load, out."""
    index = prepare(mode, folder)
    process = memdex_index(mode, index, force=mode.force)
    opened = Path(f"{index}.lock")
    while process.poll() is None and not opened.exists():
        time.sleep(0.002)
    anchor = time.monotonic()
    while process.poll() is None and time.monotonic() < anchor + delay:
        time.sleep(0.002)
    killed = process.poll() is None
    if killed:
        os.kill(process.pid, signal.SIGKILL)
    _, err = process.communicate(timeout=RUN_TIMEOUT)
    outcome = Outcome(mode.name, delay, killed, ran=time.monotonic() - anchor)
    if not killed and process.returncode != 0:
        outcome.problems.append(f"the run exited {process.returncode} before the kill: {err.decode()[-300:]}")
    if (verdict := integrity(index)) != "ok":
        outcome.problems.append(f"after the kill: integrity_check says {verdict}")

    restart = memdex_index(mode, index, force=False, restart=True)
    _, err = restart.communicate(timeout=RUN_TIMEOUT)
    if restart.returncode != 0:
        outcome.problems.append(f"restart exited {restart.returncode}: {err.decode(errors='replace')[-500:]}")
    else:
        if (verdict := integrity(index)) != "ok":
            outcome.problems.append(f"after the restart: integrity_check says {verdict}")
        rows, wanted = chunk_rows(index), chunk_rows(mode.reference)
        if rows != wanted:
            outcome.problems.append(
                f"chunks differ from a fresh build: {len(rows - wanted)} extra, {len(wanted - rows)} missing"
            )
        if mode.name == "model" and (gaps := vector_gaps(index)):
            outcome.problems.append(f"{gaps} chunk(s) without a vector")
    if tree_digest(mode.workspace) != before:
        outcome.problems.append("the Markdown changed")
    outcome.stray = stray_files(folder)
    return outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=24, help="killed runs of index/force/rebuild/switch (default 24)")
    parser.add_argument("--files", type=int, default=1200, help="workspace size; ~1.5 ms of indexing per file")
    parser.add_argument("--model-runs", type=int, default=0, help="extra killed rebuilds with the local model")
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="GGUF embedding model for --model-runs")
    parser.add_argument("--model-files", type=int, default=12, help="workspace size for the model runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="memdex-killpoints-"))
    try:
        modes = make_modes(root, args)
        schedule = [modes[MODES[i % len(MODES)]] for i in range(args.runs)]
        schedule += [modes["model"]] * args.model_runs if args.model_runs else []
        outcomes = run_schedule(schedule, root, rng)
    finally:
        if args.keep:
            print(f"killpoints: files kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

    consistent = sum(not o.problems for o in outcomes)
    stray = sum(len(o.stray) for o in outcomes)
    killed = sum(o.killed for o in outcomes)
    print(f"killpoints: {len(outcomes)} runs, {consistent} consistent, {stray} stray files ({killed} killed mid-run)")
    return 0 if consistent == len(outcomes) and stray == 0 else 1


def make_modes(root: Path, args: argparse.Namespace) -> dict[str, Mode]:
    workspace = root / "ws"
    write_workspace(workspace, files=args.files, seed=args.seed)
    built = root / "built"
    built.mkdir()
    a, b = built / "a.sqlite", built / "b.sqlite"
    work_a, work_b = build_in_process(workspace, a, CHUNKING_A), build_in_process(workspace, b, CHUNKING_B)
    env_a, env_b = {**base_env(), **chunking_env(CHUNKING_A)}, {**base_env(), **chunking_env(CHUNKING_B)}
    modes = {
        "index": Mode("index", workspace, None, a, env_a, work_a),
        "force": Mode("force", workspace, a, a, env_a, work_a, force=True),
        "rebuild": Mode("rebuild", workspace, a, b, env_b, work_b),
        "switch": Mode("switch", workspace, None, b, env_a, work_a, restart_env=env_b),
    }
    if args.model_runs:
        if not args.model.is_file():
            raise SystemExit(f"killpoints: no model at {args.model}; pass --model or --model-runs 0")
        small = root / "ws-model"
        write_workspace(small, files=args.model_files, seed=args.seed + 1)
        template, reference = built / "model-a.sqlite", built / "model-b.sqlite"
        build_in_process(small, template, CHUNKING_A)  # keyword-only, old chunking: the run rebuilds and embeds
        work = build_in_process(small, reference, CHUNKING_B, args.model)
        env = {**base_env(), **chunking_env(CHUNKING_B), "MEMDEX_EMBEDDING__PROVIDER": "local"}
        env["MEMDEX_EMBEDDING__LOCAL__MODEL"] = str(args.model)
        modes["model"] = Mode("model", small, template, reference, env, work)
    return modes


def run_schedule(schedule: list[Mode], root: Path, rng: random.Random) -> list[Outcome]:
    """Run the schedule, kill delays spread evenly (jittered) over each mode's window.

    A window starts as the mode's in-process build time plus a margin; a run that finishes before its
    kill shows how long the mode really takes under the current load, and the window follows it.
    """
    modes = {mode.name: mode for mode in schedule}
    windows = {name: 1.3 * mode.work + 0.2 for name, mode in modes.items()}
    per_mode = {name: sum(m.name == name for m in schedule) for name in modes}
    seen = dict.fromkeys(modes, 0)
    before = {name: tree_digest(mode.workspace) for name, mode in modes.items()}
    outcomes = []
    for number, mode in enumerate(schedule, 1):
        slot = (seen[mode.name] + rng.random()) / per_mode[mode.name]  # evenly spread, jittered in its slot
        seen[mode.name] += 1
        delay = slot * windows[mode.name]
        outcome = one_run(mode, root / "run", delay, before[mode.name])
        if not outcome.killed:
            windows[mode.name] = 1.1 * outcome.ran
        outcomes.append(outcome)
        verdict = "ok" if not outcome.problems else "FAIL: " + " | ".join(outcome.problems)
        stray = f", stray: {', '.join(outcome.stray)}" if outcome.stray else ""
        state = "killed" if outcome.killed else f"finished first, in {outcome.ran:.2f}s"
        print(f"run {number:3d} {mode.name:7s} kill {delay:5.2f}s after open ({state}): {verdict}{stray}", flush=True)
    return outcomes


if __name__ == "__main__":
    sys.exit(main())

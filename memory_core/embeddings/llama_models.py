"""llama.cpp models in this process: loaded once per (file, load settings), shared, and called safely.

* Every provider that asks for the same model shares one llama.cpp instance, and every call into it is
  serialised by one :class:`threading.Lock` taken on the worker thread: a llama context is not
  thread-safe, and concurrent callers only queue, never deadlock.
* No input can abort the process: every text is cut, by tokens, to the model's training context
  (the position-embedding limit of BERT-style models) before it reaches llama.cpp, and a decode
  batch never holds more tokens than the context was built for.
* Vectors are pooled the way the GGUF says (mean for sentence-transformers BERT models; a GGUF that
  stores no pooling gets mean pooling) and L2-normalised here: llama.cpp does not normalise.
* Throughput (tuned with ``bench/embedder.py``): one context of ``max(512, input limit)`` tokens,
  short texts packed up to 512 tokens per decode, flash attention on, all cores, and a short
  OpenMP spin (:data:`GOMP_SPINCOUNT`) so a busy machine does not stall llama.cpp's threads.
* Loading never redirects the process's stdout/stderr (llama-cpp-python's ``verbose=False`` does,
  which would swallow stdio MCP traffic); llama.cpp's log goes to Python logging instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from ..config_sections import LocalEmbeddingSettings
from ..errors import EmbeddingError
from .base import l2_normalize

log = logging.getLogger(__name__)

MISSING_EXTRA = "local embeddings need the 'local' extra: pip install 'memdex-mcp[local]'"

#: Longest input fed to the model in tokens, whatever its training context says (bounds memory).
MAX_INPUT_TOKENS_CAP = 8192
#: Token budget of one llama.cpp decode call that packs several texts (short notes, queries). One
#: text alone may use up to the model's input limit: the context is built with
#: n_ctx = n_batch = n_ubatch = max(this, that limit) (a non-causal model needs each text inside one
#: micro-batch). Measured on 2 cores with all-MiniLM-L6-v2 (bench/embedder.py): 1024 or 2048 tokens
#: per decode is 10-15 % slower on ~400-token chunks than 512 (attention runs over the whole packed
#: batch with a mask), while packing short texts up to 512 tokens is a few % faster than one per call.
DECODE_BATCH_TOKENS = 512
#: Texts per decode call at most (llama.cpp's own limit is 256 sequences).
MAX_SEQUENCES_PER_DECODE = 64

_POOLING_NAMES = {0: "none", 1: "mean", 2: "cls", 3: "last", 4: "rank"}



def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass(eq=False)
class SharedModel:
    """One loaded llama.cpp model and the lock every call into it takes."""

    key: tuple[Any, ...]
    llm: Any
    dims: int
    max_tokens: int
    n_batch: int
    n_seq_max: int
    pooling: str
    eos: int | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0
    closed: bool = False

    def check_open(self) -> None:
        """Call with ``lock`` held: a freed model must never reach llama.cpp (it would crash)."""
        if self.closed:
            raise EmbeddingError("the local embedding model was closed while a request was in flight")


MODELS: dict[tuple[Any, ...], SharedModel] = {}
_MODELS_LOCK = threading.Lock()  # guards MODELS and loading, so one key is only ever loaded once


_LOG_CALLBACK: Any = None  # the ctypes callback must outlive every llama.cpp call
_llama_log = logging.getLogger(f"{__package__}.llama_cpp")


def _route_llama_log(llama_cpp: Any) -> None:
    """Send llama.cpp's own log to Python logging (errors as warnings, the rest as debug).

    llama-cpp-python's callback prints to stderr with a stale level table (every loader warning
    shows); ours keeps a normal start quiet. Installed once per process.
    """
    global _LOG_CALLBACK
    if _LOG_CALLBACK is not None:
        return

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def callback(level: int, text: bytes, user_data: Any) -> None:  # pragma: no cover - native thread
        message = text.decode("utf-8", "replace").rstrip()
        if message:
            _llama_log.log(logging.WARNING if level == 4 else logging.DEBUG, "%s", message)

    _LOG_CALLBACK = callback
    llama_cpp.llama_log_set(callback, llama_cpp.ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()  # before the probe's bare model load; Llama() repeating it is harmless


class _NoRedirect:
    """Stands in for llama-cpp-python's ``suppress_stdout_stderr`` while we load a model."""

    def __init__(self, disable: bool = True) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@contextlib.contextmanager
def _no_fd_redirect() -> Iterator[None]:
    """Load without llama-cpp-python pointing fds 1 and 2 at /dev/null for the whole process.

    ``Llama(verbose=False)`` does that around model loading; in a stdio MCP server a protocol
    message written meanwhile by another thread would vanish. Our log callback keeps the load quiet
    instead. Callers hold ``_MODELS_LOCK``, the only place this process loads llama.cpp models.
    """
    import llama_cpp._internals as internals
    import llama_cpp.llama as llama_module

    name = "suppress_stdout_stderr"
    modules: list[Any] = [m for m in (internals, llama_module) if hasattr(m, name)]
    saved = [getattr(m, name) for m in modules]
    for m in modules:
        setattr(m, name, _NoRedirect)
    try:
        yield
    finally:
        for m, original in zip(modules, saved, strict=True):
            setattr(m, name, original)


def _probe(llama_cpp: Any, path: Path) -> tuple[int, int | None]:
    """The model's training context and stored pooling type, read without loading its weights."""
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    if not model:
        raise EmbeddingError(f"llama.cpp could not read {path}; is it a GGUF file?")
    try:
        n_ctx_train = int(llama_cpp.llama_model_n_ctx_train(model))
        pooling: int | None = None
        buf = (llama_cpp.ctypes.c_char * 256)()
        if llama_cpp.llama_model_meta_val_str(model, b"general.architecture", buf, len(buf)) > 0:
            arch = buf.value
            if llama_cpp.llama_model_meta_val_str(model, arch + b".pooling_type", buf, len(buf)) > 0:
                try:
                    pooling = int(buf.value)
                except ValueError:
                    pooling = None
        return n_ctx_train, pooling
    finally:
        llama_cpp.llama_model_free(model)


#: How long (libgomp spin iterations) a llama.cpp thread busy-waits at a barrier before sleeping;
#: set as ``GOMP_SPINCOUNT`` unless the environment already sets it or ``OMP_WAIT_POLICY``.
#: llama.cpp's CPU backend (OpenMP build) puts a barrier after every graph node, and libgomp's
#: default spin (300,000) burns the time slice a descheduled peer thread needs whenever another
#: process wants the same cores. Measured with bench-style runs on this 2-core machine
#: (16 LoCoMo chunks, chunks/s, median): idle machine 15.5 default / 15.4 at 1,000 / 14.2 passive;
#: one busy process alongside 5.2 / 7.8 / 8.1; two 4.5 / 7.3 / 5.5. Only effective before libgomp
#: is loaded (the first ``import llama_cpp``); "" leaves the environment alone.
GOMP_SPINCOUNT = "1000"


def import_llama_cpp() -> Any:
    untouched = "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ
    if GOMP_SPINCOUNT and untouched and "llama_cpp" not in sys.modules:
        os.environ["GOMP_SPINCOUNT"] = GOMP_SPINCOUNT
    try:
        import llama_cpp
    except ImportError:
        raise EmbeddingError(MISSING_EXTRA) from None
    return llama_cpp


def acquire_model(path: Path, settings: LocalEmbeddingSettings) -> SharedModel:
    """The shared instance for (path, settings), loading it on first use. Runs on a worker thread."""
    llama_cpp = import_llama_cpp()
    n_threads = settings.n_threads or available_cores()
    key = (
        str(path),
        os.path.getsize(path),
        os.path.getmtime(path),
        n_threads,
        settings.flash_attn,
    )
    with _MODELS_LOCK:
        shared = MODELS.get(key)
        if shared is None:
            _route_llama_log(llama_cpp)
            with _no_fd_redirect():
                shared = _load(llama_cpp, path, key, n_threads, settings.flash_attn)
            MODELS[key] = shared
        shared.users += 1
        return shared


def _load(llama_cpp: Any, path: Path, key: tuple[Any, ...], n_threads: int, flash_attn: bool) -> SharedModel:
    n_ctx_train, stored_pooling = _probe(llama_cpp, path)
    max_tokens = min(n_ctx_train if n_ctx_train > 0 else 512, MAX_INPUT_TOKENS_CAP)
    if stored_pooling == llama_cpp.LLAMA_POOLING_TYPE_RANK:
        raise EmbeddingError(f"{path} is a reranker (rank pooling), not an embedding model")
    pooling = stored_pooling if stored_pooling not in (None, llama_cpp.LLAMA_POOLING_TYPE_NONE) else None
    if pooling is None:
        log.warning("%s stores no pooling type; using mean pooling", path.name)
        pooling = llama_cpp.LLAMA_POOLING_TYPE_MEAN
    n_batch = max(DECODE_BATCH_TOKENS, max_tokens)
    try:
        llm = llama_cpp.Llama(
            model_path=str(path),
            embedding=True,
            n_ctx=n_batch,
            n_batch=n_batch,
            n_ubatch=n_batch,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            flash_attn=flash_attn,
            pooling_type=pooling,
            verbose=False,
        )
    except Exception as exc:  # llama.cpp reports load failures as ValueError/RuntimeError
        raise EmbeddingError(f"llama.cpp could not load {path}: {exc}") from exc
    actual = int(llm.pooling_type())
    n_seq_max = max(1, min(MAX_SEQUENCES_PER_DECODE, int(llm.context_params.n_seq_max)))
    eos = int(llm.token_eos()) if llm._model.add_eos_token() else None
    log.info(
        "loaded %s: %d dims, %s pooling, inputs up to %d tokens, %d threads, flash_attn=%s",
        path.name,
        llm.n_embd(),
        _POOLING_NAMES.get(actual, actual),
        max_tokens,
        n_threads,
        flash_attn,
    )
    return SharedModel(
        key=key,
        llm=llm,
        dims=int(llm.n_embd()),
        max_tokens=max_tokens,
        n_batch=n_batch,
        n_seq_max=n_seq_max,
        pooling=_POOLING_NAMES.get(actual, str(actual)),
        eos=eos if eos is not None and eos >= 0 else None,
    )


def release_model(shared: SharedModel) -> None:
    """Drop one user; the last one frees the model. Runs on a worker thread."""
    with _MODELS_LOCK:
        shared.users -= 1
        if shared.users > 0:
            return
        if MODELS.get(shared.key) is shared:
            del MODELS[shared.key]
    with shared.lock:
        shared.closed = True
        shared.llm.close()


# Work done on the worker thread under the model's lock ------------------------------------------


def tokenize(shared: SharedModel, texts: Sequence[str]) -> list[list[int]]:
    """Token ids per text (with the model's special tokens), cut to the model's input limit."""
    out: list[list[int]] = []
    limit = shared.max_tokens
    with shared.lock:
        shared.check_open()
        for text in texts:
            tokens = shared.llm.tokenize(text.encode("utf-8", "replace"), add_bos=True, special=False)
            if len(tokens) > limit:
                # Keep the closing special token (BERT's [SEP]) the model was trained to see.
                if shared.eos is not None and tokens[-1] == shared.eos:
                    tokens = tokens[: limit - 1] + [tokens[-1]]
                else:
                    tokens = tokens[:limit]
            out.append(tokens)
    return out


def decode(shared: SharedModel, group: Sequence[Sequence[int]]) -> list[list[float]]:
    """One llama.cpp decode of several token sequences; their pooled, L2-normalised vectors."""
    import llama_cpp

    llm = shared.llm
    vectors: list[list[float]] = []
    with shared.lock:
        shared.check_open()
        batch = llm._batch
        ctx = llm._ctx
        batch.reset()
        for seq_id, tokens in enumerate(group):
            # Every token is an output in embedding mode (see llama-cpp-python's Llama.embed).
            batch.add_sequence(tokens, seq_id, True)
        try:
            ctx.kv_cache_clear()
            ctx.decode(batch)
        except RuntimeError as exc:
            raise EmbeddingError(
                f"llama.cpp failed to embed {len(group)} text(s): {exc}",
                retryable=False,
            ) from exc
        finally:
            batch.reset()
        for seq_id in range(len(group)):
            ptr = llama_cpp.llama_get_embeddings_seq(ctx.ctx, seq_id)
            if not ptr:
                raise EmbeddingError("llama.cpp returned no pooled embedding; is this an embedding model?")
            vectors.append(l2_normalize(ptr[: shared.dims]))
    return vectors


def groups(shared: SharedModel, seqs: Sequence[Sequence[int]]) -> list[list[int]]:
    """Indices of ``seqs`` packed into decode calls, in input order.

    A group holds up to ``DECODE_BATCH_TOKENS`` tokens and ``n_seq_max`` texts; a longer text (at most
    ``max_tokens`` <= ``n_batch``) goes alone.
    """
    budget = min(DECODE_BATCH_TOKENS, shared.n_batch)
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, tokens in enumerate(seqs):
        if current and (used + len(tokens) > budget or len(current) >= shared.n_seq_max):
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += len(tokens)
    if current:
        groups.append(current)
    return groups


# The provider -----------------------------------------------------------------------------------

"""The local embedding provider: a GGUF model run in-process by llama.cpp (the ``local`` extra).

* ``embedding.local.model`` is a ``.gguf`` path or ``hf:<owner>/<repo>/<file>``; an ``hf:`` model is
  fetched once with :func:`huggingface_hub.hf_hub_download` into ``cache_dir`` (the Hugging Face cache
  by default) and loaded from the file. A cached file is used without touching the network.
* The model is loaded and called through :mod:`.llama_models` (one shared instance per process, every
  call serialised, no input that can abort the process, pooled and L2-normalised vectors).
* Query/document prefixes: an explicit string wins ("" = none); ``None`` means the model's known
  prefix from :data:`KNOWN_PREFIXES`, matched on the model name.
* ``fingerprint`` covers the model name and prefixes from the start; :meth:`LocalProvider.start`
  adds the model file's size, the pooling and the dimensions.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from ..config_sections import LocalEmbeddingSettings
from ..errors import EmbeddingError
from .base import fingerprint as make_fingerprint
from .llama_models import MISSING_EXTRA, SharedModel, acquire_model, decode, groups, release_model, tokenize

log = logging.getLogger(__name__)

#: Known models' prefixes: (pattern on the lower-cased model name, query prefix, document prefix).
#: The first match wins; a model matching none gets no prefixes.
KNOWN_PREFIXES: tuple[tuple[str, str, str], ...] = (
    (r"embeddinggemma", "task: search result | query: ", "title: none | text: "),
    (r"nomic-embed-text", "search_query: ", "search_document: "),
    (r"(?<![a-z0-9])(multilingual-)?e5(?![a-z0-9])", "query: ", "passage: "),
    (r"minilm|bge-", "", ""),
)

def known_prefixes(model: str) -> tuple[str, str]:
    """The (query, document) prefixes memdex knows for a model name, or ("", "")."""
    name = model.lower()
    for pattern, query, document in KNOWN_PREFIXES:
        if re.search(pattern, name):
            return query, document
    return "", ""


class LocalProvider:
    """A GGUF embedding model run in-process with llama-cpp-python."""

    id = "local"

    def __init__(
        self,
        settings: LocalEmbeddingSettings,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
    ) -> None:
        self.settings = settings
        self.model = settings.model
        default_query, default_document = known_prefixes(settings.model)
        self.query_prefix = default_query if query_prefix is None else query_prefix
        self.document_prefix = default_document if document_prefix is None else document_prefix
        self.dims = 0
        self.max_input_tokens = 512  # the real limit is known after start()
        self.pooling: str | None = None
        self.path: Path | None = None
        self._shared: SharedModel | None = None
        # Provisional until start() adds the file size and pooling: prefixes already count.
        self.fingerprint = self._fingerprint()

    def _fingerprint(self, **more: Any) -> str:
        return make_fingerprint(
            provider=self.id,
            model=self.model,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
            **more,
        )

    # Lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._shared is not None:
            return
        path = await self._resolve()
        shared = await anyio.to_thread.run_sync(acquire_model, path, self.settings)
        if self._shared is not None:  # a concurrent start() won the race
            await anyio.to_thread.run_sync(release_model, shared)
            return
        self._shared = shared
        self.path = path
        self.dims = shared.dims
        self.max_input_tokens = shared.max_tokens
        self.pooling = shared.pooling
        self.fingerprint = self._fingerprint(size=path.stat().st_size, pooling=shared.pooling, dims=shared.dims)

    async def aclose(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            await anyio.to_thread.run_sync(release_model, shared)

    async def _resolve(self) -> Path:
        """The model file: an existing local path, or an ``hf:`` file from the cache or the Hub."""
        model = self.model.strip()
        if model.startswith("hf:"):
            return await self._download(model)
        path = Path(model).expanduser()
        if not path.is_file():
            raise EmbeddingError(
                f"local embedding model {path} does not exist; set embedding.local.model to a .gguf file "
                "or to hf:<owner>/<repo>/<file>"
            )
        return path.resolve()

    async def _download(self, uri: str) -> Path:
        parts = uri[3:].strip("/").split("/")
        if len(parts) < 3 or not all(parts):
            raise EmbeddingError(f"embedding.local.model {uri!r} must look like hf:<owner>/<repo>/<file>.gguf")
        repo_id, filename = "/".join(parts[:2]), "/".join(parts[2:])
        try:
            import huggingface_hub
        except ImportError:
            raise EmbeddingError(MISSING_EXTRA) from None
        cache_dir = str(self.settings.cache_dir.expanduser()) if self.settings.cache_dir else None

        def fetch() -> str:
            cached = huggingface_hub.try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
            if isinstance(cached, str) and os.path.isfile(cached):
                return cached  # no network round trip when the file is already here
            # Offline, the hub client retries a failed name lookup with growing pauses; ask once, fail fast.
            socket.getaddrinfo(urllib.parse.urlparse(huggingface_hub.constants.ENDPOINT).hostname, 443)
            log.info("downloading %s once (later starts use the cached copy)", uri)
            return huggingface_hub.hf_hub_download(repo_id, filename, cache_dir=cache_dir)

        try:
            return Path(await anyio.to_thread.run_sync(fetch))
        except Exception as exc:
            raise EmbeddingError(
                f"could not download the local embedding model {uri} ({type(exc).__name__}: {_first_line(exc)}). "
                "Offline? Download the .gguf file elsewhere and set embedding.local.model to its local path",
                retryable=True,
            ) from exc

    # Embedding ----------------------------------------------------------------------------------

    def _require(self) -> SharedModel:
        if self._shared is None:
            raise EmbeddingError("the local embedding provider is not started (call start() first)")
        return self._shared

    async def embed_query(self, text: str) -> list[float]:
        shared = self._require()
        seqs = await anyio.to_thread.run_sync(tokenize, shared, [self.query_prefix + text])
        (vector,) = await anyio.to_thread.run_sync(decode, shared, seqs)
        return vector

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        shared = self._require()
        if not texts:
            return []
        prefix = self.document_prefix
        seqs = await anyio.to_thread.run_sync(tokenize, shared, [prefix + t for t in texts])
        out: list[list[float]] = [[] for _ in texts]
        # One decode per worker-thread call, so a query waits for one decode, never a whole batch.
        for group in groups(shared, seqs):
            vectors = await anyio.to_thread.run_sync(decode, shared, [seqs[i] for i in group])
            for i, vector in zip(group, vectors, strict=True):
                out[i] = vector
        return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else "no details"


__all__ = ["KNOWN_PREFIXES", "LocalProvider", "known_prefixes"]

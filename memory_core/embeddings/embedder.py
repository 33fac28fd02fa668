"""The embedding side of the index: the provider's lifecycle, the embedding cache, vector identity.

The provider starts in the background (a model load or a 300 MB download must never hold up
keyword indexing, a search or the MCP handshake). A provider that cannot start for a reason that
may pass (network, server) is tried again with backoff; one that fails while indexing gives way to
the configured fallback. Vectors are checked (size, finite, not all zero) before they reach the
cache, which is keyed by provider, model and fingerprint and never serves a vector of another size.

A chunk is embedded as its parts (:func:`~..text.chunking.vector_parts`: itself, or windows of its lines
with ``embedding.window_tokens``); the cache holds each part's text's vector.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from ..config_sections import EmbeddingSettings
from ..errors import EmbeddingError
from ..stores.base import IndexOwner
from ..stores.records import VECTOR_LAYOUT, CacheKey
from ..text.chunking import vector_parts
from ..textutil import sha256_hex
from .base import EmbeddingProvider, check_vectors
from .factory import ProviderFactory, open_provider

logger = logging.getLogger(__name__)

RETRY_FIRST = 2.0  # seconds before a provider that could not start is tried again; doubles each time
RETRY_MAX = 300.0


@dataclass(frozen=True)
class EmbedderStatus:
    """The running provider (None while none runs) and what to know about embeddings now."""

    provider: str | None
    model: str | None
    note: str | None  # why embeddings are off or starting, or the last failure
    failed: bool  # the last embedding call failed (note says how)


class Embedder:
    """Turns chunk texts into vectors for one index, through the cache."""

    def __init__(
        self, settings: EmbeddingSettings, index: IndexOwner, factory: ProviderFactory = open_provider
    ) -> None:
        self.settings = settings
        self.index = index
        self._factory = factory
        self.provider: EmbeddingProvider | None = None
        self._note: str | None = "embeddings are starting"
        self._failure: str | None = None  # the last embedding failure, until embedding works again
        self.settled = anyio.Event()  # the first start attempt is over (provider or keyword-only)
        self._starting = False
        self._excluded: set[str] = set()  # providers given up on for the fallback

    # Lifecycle ----------------------------------------------------------------------------------

    def start_soon(self, start_soon: Callable[..., Any], on_ready: Callable[[], None]) -> None:
        """Start the provider in a background task (once); ``on_ready`` runs when it is up."""
        if not self._starting:
            self._starting = True
            start_soon(self._run, on_ready)

    async def _run(self, on_ready: Callable[[], None]) -> None:
        delay = RETRY_FIRST
        while True:
            choice = await self._factory(self.settings, frozenset(self._excluded))
            self.provider, self._note = choice.provider, choice.note
            self.settled.set()
            if choice.provider is not None:
                on_ready()
                return
            if not choice.retryable:
                return
            logger.info("embeddings unavailable for now; trying again in %.0fs", delay)
            await anyio.sleep(delay)
            delay = min(RETRY_MAX, delay * 2)

    async def switch_to_fallback(self, start_soon: Callable[..., Any], on_ready: Callable[[], None]) -> bool:
        """After the provider failed while indexing, move to the configured fallback; False if there is none."""
        fallback, current = self.settings.fallback, self.provider
        if current is None or fallback in ("none", current.id) or fallback in self._excluded:
            return False
        logger.warning("switching embeddings from %s to fallback %s; the index will be rebuilt", current.id, fallback)
        self._excluded.add(current.id)
        self.provider, self._starting, self.settled = None, False, anyio.Event()
        await current.aclose()
        self.start_soon(start_soon, on_ready)
        return True

    def status(self) -> EmbedderStatus:
        """Which provider runs and what to know about it (its last failure first)."""
        p = self.provider
        note = self._failure or self._note
        return EmbedderStatus(p.id if p else None, p.model if p else None, note, self._failure is not None)

    def decline(self, stored: dict[str, Any]) -> None:
        """Note that this process keeps to keyword search: the index holds vectors of a provider that
        ``auto`` did not resolve to here (see :meth:`adopts`)."""
        running = self.provider.id if self.provider else "none"
        self._note = (
            f"the index holds {stored['provider']} vectors and embedding.provider is auto, which "
            f"resolved to {running} here: keyword search in this process (set the provider to use it)"
        )

    async def aclose(self) -> None:
        if self.provider is not None:
            await self.provider.aclose()
            self.provider = None

    # Identity -----------------------------------------------------------------------------------

    def identity(self) -> dict[str, Any] | None:
        """What the running provider's vectors are (None: no provider yet)."""
        p = self.provider
        if p is None:
            return None
        return {
            "provider": p.id,
            "model": p.model,
            "fingerprint": p.fingerprint,
            "dims": p.dims,
            "layout": VECTOR_LAYOUT,
            "window_tokens": self.settings.window_tokens,
        }

    def adopts(self, stored: dict[str, Any] | None) -> bool:
        """True when vectors built as ``stored`` should be rebuilt with this provider.

        With ``provider = "auto"``, two processes may resolve to different providers (one has
        llama-cpp-python, another an API key): the one whose choice differs from the index's uses
        keyword search instead of rebuilding the index back and forth.
        """
        wanted = self.identity()
        if wanted is None or stored is None or stored == wanted:
            return False
        return self.settings.provider != "auto" or stored.get("provider") == wanted["provider"]

    def _key(self) -> CacheKey:
        assert self.provider is not None
        return CacheKey(self.provider.id, self.provider.model, self.provider.fingerprint)

    # Vectors ------------------------------------------------------------------------------------

    async def cached(self, texts: dict[str, str], conn: Any = None) -> dict[str, list[list[float]]]:
        """The vectors of the chunks (texts by hash) whose every part is in the cache (no model call)."""
        parts = self._parts(texts)
        return self._assembled(parts, await self._cached_parts(_texts_of(parts), conn))

    async def embed(
        self, texts: dict[str, str], conn: Any = None, *, bulk: bool = False
    ) -> dict[str, list[list[float]]]:
        """The vectors of every part of the chunks (texts by hash): cached ones plus fresh ones (then cached).

        Raises EmbeddingError when the provider fails or returns unusable vectors.
        """
        parts = self._parts(texts)
        return self._assembled(parts, await self._embed_parts(_texts_of(parts), conn, bulk=bulk))

    def _parts(self, texts: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
        """Each chunk's parts as (hash, text), by chunk hash."""
        window = self.settings.window_tokens
        return {h: [(sha256_hex(p), p) for p in vector_parts(text, window)] for h, text in texts.items()}

    @staticmethod
    def _assembled(
        parts: dict[str, list[tuple[str, str]]], vectors: dict[str, list[float]]
    ) -> dict[str, list[list[float]]]:
        return {h: [vectors[ph] for ph, _ in chunk] for h, chunk in parts.items() if all(ph in vectors for ph, _ in chunk)}

    async def _cached_parts(self, texts: dict[str, str], conn: Any) -> dict[str, list[float]]:
        if self.provider is None or not texts:
            return {}
        return await self.index.write(self.index.ops.cached_vectors, self._key(), list(texts), self.provider.dims, conn=conn)

    async def _embed_parts(self, texts: dict[str, str], conn: Any, *, bulk: bool) -> dict[str, list[float]]:
        provider = self.provider
        if provider is None or not texts:
            return {}
        vectors = await self._cached_parts(texts, conn)
        missing = [h for h in texts if h not in vectors]
        if missing:
            try:
                fresh = await provider.embed_batch([texts[h] for h in missing], bulk=bulk)
                check_vectors(fresh, len(missing), provider.dims, f"{provider.id} {provider.model}")
            except EmbeddingError as exc:
                self._failure = f"{provider.id} embeddings failed: {exc}"
                raise
            new = dict(zip(missing, fresh, strict=True))
            await self.index.write(self.index.ops.cache_vectors, self._key(), new, conn=conn)
            vectors.update(new)
        self._failure = None
        return vectors


def _texts_of(parts: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """Every distinct part text, by hash (equal texts are embedded once)."""
    return {ph: text for chunk in parts.values() for ph, text in chunk}

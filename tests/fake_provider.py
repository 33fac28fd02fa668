"""A deterministic embedding provider for engine tests: no model, no network, always available.

A text's vector is the normalised sum of one hash-seeded random unit vector per word, so texts that
share words are near each other and a query finds the chunks that contain its words: enough for
tests of the vector plumbing (cache, backfill, rebuilds, RAM copy), not for ranking quality, which
the real-model tests cover. Faults are scripted through plain attributes.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

import anyio
import numpy as np

from memdex.memory_core.embeddings.factory import ProviderChoice
from memdex.memory_core.errors import EmbeddingError

_WORD = re.compile(r"\w+")


def word_vector(word: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(word.lower().encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dims)
    return vector / np.linalg.norm(vector)


def embed_text(text: str, dims: int) -> list[float]:
    total = np.zeros(dims)
    for word in _WORD.findall(text):
        total += word_vector(word, dims)
    norm = float(np.linalg.norm(total))
    if norm == 0:
        total = word_vector("", dims)  # a text without words still gets a unit vector
        norm = 1.0
    return [float(x) for x in total / norm]


class HashProvider:
    """An EmbeddingProvider with scripted faults: ``fail`` (raise), ``hold`` (wait for an event),
    ``wrong_dims`` / ``nan`` (return bad vectors)."""

    id = "hash"
    max_input_tokens = 512

    def __init__(self, dims: int = 32, model: str = "hash-words") -> None:
        self.dims = dims
        self.model = model
        self.fingerprint = f"{model}-{dims}"
        self.fail = False
        self.hold: anyio.Event | None = None
        self.wrong_dims = False
        self.nan = False
        self.texts_embedded = 0
        self.bulk_calls = 0

    async def start(self) -> None:
        return None

    async def embed_query(self, text: str) -> list[float]:
        if self.fail:
            raise EmbeddingError("scripted outage", retryable=True)
        if self.nan:
            return [math.nan] * self.dims
        return embed_text(text, self.dims)

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        if self.hold is not None:
            await self.hold.wait()
        if self.fail:
            raise EmbeddingError("scripted outage", retryable=True)
        self.texts_embedded += len(texts)
        self.bulk_calls += bulk
        if self.wrong_dims:
            return [embed_text(t, self.dims * 2) for t in texts]
        if self.nan:
            return [[math.nan] * self.dims for _ in texts]
        return [embed_text(t, self.dims) for t in texts]

    async def aclose(self) -> None:
        return None


class HashFactory:
    """A provider factory for ``MemoryEngine(provider_factory=...)``.

    ``down`` makes starting fail (retryably) until cleared; ``gate`` makes starting wait for an
    event (a model download that hangs); ``starts`` counts the attempts.
    """

    def __init__(self, provider: HashProvider | None = None) -> None:
        self.provider = provider or HashProvider()
        self.down = False
        self.gate: anyio.Event | None = None
        self.starts = 0

    async def __call__(self, settings: object, exclude: frozenset[str] = frozenset()) -> ProviderChoice:
        self.starts += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            return ProviderChoice(None, "keyword search only: hash: scripted outage", retryable=True)
        return ProviderChoice(self.provider)

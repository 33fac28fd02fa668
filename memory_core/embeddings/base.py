"""The one interface every embedding provider implements, and helpers they share."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..errors import EmbeddingError


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns text into L2-normalised vectors.

    ``fingerprint`` changes whenever the same text would get a different vector (model, endpoint,
    dimensions, prefixes): the index and the embedding cache are keyed by it. ``dims`` is known once
    :meth:`start` has returned. Query and document prefixes (for e5/nomic/EmbeddingGemma-style
    models) are applied by the provider itself.
    """

    id: str
    model: str
    fingerprint: str
    dims: int
    max_input_tokens: int

    async def start(self) -> None:
        """Load the model or check the endpoint; after this ``dims`` is set. Idempotent."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """One search query's vector."""
        ...

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        """Document vectors, in order. The provider splits the batch as its limits require.

        ``bulk`` says the texts are a whole planned backfill or rebuild, never a live edit: a
        provider may then use a slower bulk path (e.g. OpenAI's Batch API).
        """
        ...

    async def aclose(self) -> None:
        """Release the model or HTTP client."""
        ...


def check_vectors(vectors: Sequence[Sequence[float]], count: int, dims: int, source: str) -> None:
    """Raise EmbeddingError unless there are ``count`` vectors of ``dims`` finite numbers, none all zero.

    A bad vector must never reach the embedding cache: it would be reused for the same text forever.
    """
    if len(vectors) != count:
        raise EmbeddingError(f"{source} returned {len(vectors)} vectors for {count} texts")
    for vector in vectors:
        if len(vector) != dims:
            raise EmbeddingError(
                f"{source} returned a {len(vector)}-dimension vector where the index holds {dims} dimensions; "
                "if the model changed, restart memdex so that it rebuilds the index"
            )
        if not all(math.isfinite(x) for x in vector) or not any(vector):
            raise EmbeddingError(f"{source} returned a vector that is all zeros or not finite; it was not stored")


def l2_normalize(vector: Sequence[float]) -> list[float]:
    """The vector scaled to length 1; a zero vector stays zero, and a vector with a non-finite value comes back
    with NaN or infinity in it, never quietly repaired, so :func:`check_vectors` refuses it."""
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        return values
    norm = math.sqrt(sum(x * x for x in values))
    return values if norm < 1e-12 else [x / norm for x in values]


def fingerprint(**parts: Any) -> str:
    """A short stable hash of everything that shapes a provider's vectors."""
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]

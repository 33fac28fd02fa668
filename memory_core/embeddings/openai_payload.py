"""An OpenAI-compatible embeddings response body, decoded and checked: the vectors in input order, or an error
that says what was malformed (never retried: a server that answers so will answer so again)."""

from __future__ import annotations

import base64
import sys
from array import array

from ..errors import EmbeddingError
from .base import l2_normalize


def vectors(payload: object, expected: int, dims: int | None, where: str) -> list[list[float]]:
    """Normalised vectors from a response ``payload`` for ``expected`` inputs, sorted by ``index``; ``dims`` is
    the length every vector must have (None: any one length, as when the provider learns it)."""
    data = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise malformed(where, "no 'data' list of embeddings")
    if len(data) != expected:
        raise malformed(where, f"{len(data)} vectors for {expected} inputs")
    indexes = [item.get("index") for item in data]
    if all(index is None for index in indexes):
        ordered = data
    elif sorted(i for i in indexes if isinstance(i, int)) == list(range(expected)):
        ordered = sorted(data, key=lambda item: item["index"])
    else:
        raise malformed(where, f"indexes {indexes} do not match {expected} inputs")
    found = [_decode(item.get("embedding"), where) for item in ordered]
    sizes = {len(vector) for vector in found}
    if len(sizes) != 1 or (dims is not None and sizes != {dims}):
        raise malformed(where, f"vector lengths {sorted(sizes)} where {dims or 'one length'} was expected")
    return [l2_normalize(vector) for vector in found]


def _decode(value: object, where: str) -> list[float]:
    """One embedding given as a list of numbers or as base64 little-endian float32."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raise malformed(where, "an embedding string that is not base64") from None
        if not raw or len(raw) % 4:
            raise malformed(where, "a base64 embedding that is not float32 data")
        floats = array("f", raw)
        if sys.byteorder == "big":
            floats.byteswap()
        return floats.tolist()
    if isinstance(value, list) and value and all(type(x) in (int, float) for x in value):
        return [float(x) for x in value]
    raise malformed(where, "an embedding that is not a list of numbers")


def malformed(where: str, detail: str) -> EmbeddingError:
    """The error for a response from ``where`` (the endpoint, for the message) that is not what the API promises."""
    return EmbeddingError(
        f"{where} sent a malformed embeddings response ({detail}); check that base_url points at an"
        " OpenAI-compatible API and model names an embedding model",
        retryable=False,
    )

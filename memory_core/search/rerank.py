"""The optional rerank stage: a cross-encoder behind an HTTP ``/rerank`` endpoint reorders search candidates.

One request shape serves llama.cpp's server (a reranker GGUF), Cohere, Jina and Voyage-style APIs:
``POST {base_url}/rerank`` with ``{"model", "query", "documents", "top_n"}``, answered by
``{"index", "relevance_score"}`` items under ``results`` (llama.cpp, Cohere, Jina) or ``data`` (Voyage).
Every failure is a :class:`RerankError`; :func:`rerank_order` turns a failure or a timeout into a
warning so search keeps the fused order instead.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import anyio
import httpx

from ..config_sections import RerankSettings
from ..errors import ConfigError, RerankError

logger = logging.getLogger(__name__)

_DETAIL_CHARS = 200  # longest server error text quoted in a RerankError


class Reranker:
    """A client of one ``/rerank`` endpoint. Call :meth:`aclose` when done."""

    def __init__(self, settings: RerankSettings) -> None:
        if not settings.base_url:
            raise ConfigError("the reranker needs rerank.base_url, e.g. http://127.0.0.1:8080/v1")
        self.url = f"{settings.base_url.rstrip('/')}/rerank"
        self.model = settings.model
        self.timeout = settings.timeout
        headers = {"Authorization": f"Bearer {settings.api_key.get_secret_value()}"} if settings.api_key else {}
        self._client = httpx.AsyncClient(headers=headers, timeout=settings.timeout)

    async def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in input order (higher is more relevant)."""
        if not documents:
            return []
        request = {"model": self.model, "query": query, "documents": list(documents), "top_n": len(documents)}
        try:
            response = await self._client.post(self.url, json=request)
        except httpx.TimeoutException:
            raise RerankError(f"no answer from the reranker at {self.url} within {self.timeout:g}s") from None
        except httpx.HTTPError as exc:
            raise RerankError(f"cannot reach the reranker at {self.url}: {_one_line(str(exc) or repr(exc))}") from None
        if response.is_error:
            detail = _one_line(response.text)
            raise RerankError(f"HTTP {response.status_code} from the reranker at {self.url}{': ' if detail else ''}{detail}")
        try:
            return _parse(response.json(), len(documents))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise RerankError(f"malformed answer from the reranker at {self.url}: {_one_line(str(exc))}") from None

    async def aclose(self) -> None:
        """Close the HTTP connections."""
        await self._client.aclose()


def open_reranker(settings: RerankSettings) -> Reranker | None:
    """The reranker ``settings`` ask for, or None when reranking is off."""
    return Reranker(settings) if settings.provider == "http" else None


async def rerank_order(
    reranker: Reranker, query: str, texts: Sequence[str], timeout: float
) -> tuple[list[int] | None, str | None]:
    """The indexes of ``texts``, most relevant first (ties keep their order), and no note; or, when the
    reranker fails or takes over ``timeout`` seconds, None and a note for the answer's warnings."""
    with anyio.move_on_after(timeout):
        try:
            scores = await reranker.scores(query, texts)
        except RerankError as exc:
            logger.warning("rerank skipped: %s", exc)
            return None, f"the reranker failed ({exc}); results are in fused order"
        return sorted(range(len(texts)), key=lambda i: -scores[i]), None
    logger.warning("rerank skipped: no answer from %s within %gs", reranker.url, timeout)
    return None, f"the reranker took over {timeout:g}s; results are in fused order"


def _parse(body: Any, count: int) -> list[float]:
    """The scores of ``count`` documents from a rerank answer; ValueError when it is not well-formed."""
    items = body.get("results", body.get("data")) if isinstance(body, dict) else None
    if not isinstance(items, list):
        raise ValueError("no 'results' or 'data' list")
    found: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score") if isinstance(item, dict) else None
        if type(index) is not int or not 0 <= index < count or index in found:
            raise ValueError(f"bad or repeated index {index!r} for {count} documents")
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(score):
            raise ValueError(f"bad relevance_score {score!r} for document {index}")
        found[index] = float(score)
    if len(found) < count:
        raise ValueError(f"scored {len(found)} of {count} documents")
    return [found[i] for i in range(count)]


def _one_line(text: str) -> str:
    """``text`` on one line, cut to a readable length."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"

"""Embeddings from any OpenAI-compatible endpoint: OpenAI itself, proxies, llama.cpp, vLLM, Ollama.

Requests are split by input count and estimated tokens, retried on rate limits, server errors,
timeouts and dropped connections (exponential backoff with jitter, or the server's Retry-After), and
never retried when retrying cannot help: a refused key or an exhausted quota fail at once, as does
a response that is not a well-formed embeddings list. Large indexing runs may go through OpenAI's
asynchronous Batch API, behind a circuit breaker that falls back to plain requests.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import random
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Literal, TypeVar

import anyio
import openai
from openai.types import Batch

from ..config_sections import OpenAIEmbeddingSettings
from ..errors import EmbeddingAuthError, EmbeddingError, EmbeddingQuotaError, EmbeddingTimeout
from ..text.chunking import CHARS_PER_TOKEN, text_cost
from .base import fingerprint
from .openai_payload import malformed
from .openai_payload import vectors as vectors_of

logger = logging.getLogger(__name__)

T = TypeVar("T")
TimeoutKey = Literal["query_timeout", "batch_timeout"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_PROBE_TEXT = "dimension probe"
_QUOTA_CODES = frozenset({"insufficient_quota", "credit_balance_exhausted"})
_QUOTA_WORDS = re.compile(r"quota|billing", re.IGNORECASE)
_SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|cookie", re.IGNORECASE)
_RETRYABLE_4XX = frozenset({408, 409, 429})
_BATCH_FINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_BATCH_MAX_REQUESTS = 50_000
_BATCH_MAX_BYTES = 190 * 1024 * 1024


def estimate_tokens(text: str) -> int:
    """Tokens a text is assumed to cost: the chunker's budget (4 characters, or 1 CJK character, each)."""
    return -(-text_cost(text) // CHARS_PER_TOKEN)


def retry_after_seconds(headers: Mapping[str, str], cap: float) -> float | None:
    """The wait a response asks for (``retry-after-ms``, or ``retry-after`` as seconds or an HTTP date), capped."""
    seconds: float | None = None
    if raw_ms := headers.get("retry-after-ms"):
        try:
            seconds = float(raw_ms) / 1000
        except ValueError:
            pass
    if seconds is None and (raw := headers.get("retry-after")):
        try:
            seconds = float(raw)
        except ValueError:
            try:
                when = parsedate_to_datetime(raw)
            except (TypeError, ValueError):
                return None
            when = when if when.tzinfo else when.replace(tzinfo=UTC)
            seconds = (when - datetime.now(UTC)).total_seconds()
    if seconds is None or not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), cap)


class OpenAIProvider:
    """An :class:`~memory_core.embeddings.base.EmbeddingProvider` over an OpenAI-compatible API.

    The class attributes are tunables; tests shrink the delays on an instance.
    """

    id = "openai"
    retry_base_delay: float = 0.5  # first backoff, doubled per retry, plus 0-25 % jitter
    retry_max_delay: float = 30.0  # backoff cap, before jitter
    retry_after_cap: float = 60.0  # longest Retry-After honoured
    batch_poll_interval: float = 2.0  # seconds between Batch API status checks
    batch_wait_timeout: float = 3600.0  # give up on a Batch API job (and cancel it) after this long
    batch_failure_limit: int = 2  # consecutive Batch API failures that disable it for this provider

    def __init__(self, settings: OpenAIEmbeddingSettings, query_prefix: str = "", document_prefix: str = "") -> None:
        key = settings.api_key.get_secret_value() if settings.api_key else os.environ.get("OPENAI_API_KEY", "")
        if not key.strip():
            raise EmbeddingAuthError(
                "no API key for OpenAI-compatible embeddings; set api_key in [embedding.openai] or OPENAI_API_KEY"
                " (a local server that needs no key accepts any string)"
            )
        self.base_url = (settings.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.max_input_tokens = settings.max_input_tokens  # longer texts are cut to fit
        self.model = settings.model
        self.dims = settings.dimensions or 0
        self.fingerprint = fingerprint(
            provider=self.id,
            base_url=self.base_url,
            model=settings.model,
            dimensions=settings.dimensions,
            headers=sorted((k.lower(), v) for k, v in settings.headers.items() if not _SECRET_HEADER.search(k)),
            query_prefix=query_prefix,
            document_prefix=document_prefix,
        )
        self._settings = settings
        self._key = key
        self._query_prefix = query_prefix
        self._document_prefix = document_prefix
        self._where = f"OpenAI-compatible embeddings at {self.base_url}"
        self._started = False
        self._batch_failures = 0
        self._batch_disabled = False
        self._client = openai.AsyncOpenAI(
            api_key=key,
            base_url=self.base_url,
            default_headers=dict(settings.headers) or None,
            max_retries=0,
            timeout=max(settings.query_timeout, settings.batch_timeout),
        )

    async def start(self) -> None:
        """Embed one probe text: checks the key and endpoint and learns ``dims``."""
        if self._started:
            return
        [vector] = await self._embed_group([_PROBE_TEXT], "query_timeout")
        wanted = self._settings.dimensions
        if wanted and len(vector) != wanted:
            raise EmbeddingError(
                f"{self._where} returned {len(vector)}-dimension vectors for model {self.model!r} but"
                f" [embedding.openai] dimensions is {wanted}; unset dimensions or use a model that supports it"
            )
        self.dims = len(vector)
        self._started = True
        logger.info("%s ready: model %s, %d dimensions", self._where, self.model, self.dims)

    async def embed_query(self, text: str) -> list[float]:
        """One search query's vector (with the query prefix)."""
        await self.start()
        [vector] = await self._embed_group([self._fit(self._query_prefix + text)], "query_timeout")
        return vector

    async def embed_batch(self, texts: Sequence[str], *, bulk: bool = False) -> list[list[float]]:
        """Document vectors in input order (with the document prefix).

        ``bulk`` marks a whole planned backfill or rebuild: only then, and when enabled, may the
        asynchronous Batch API (minutes to hours per job) serve it.
        """
        if not texts:
            return []
        await self.start()
        docs = [self._fit(self._document_prefix + text) for text in texts]
        if bulk and self._settings.batch_api and not self._batch_disabled and len(docs) > self._settings.max_batch_inputs:
            vectors = await self._try_batch_api(docs)
            if vectors is not None:
                return vectors
        vectors_by_index: dict[int, list[float]] = {}
        for group in self._plan(docs):
            vectors = await self._embed_group([docs[i] for i in group], "batch_timeout")
            vectors_by_index.update(zip(group, vectors, strict=True))
        return [vectors_by_index[i] for i in range(len(docs))]

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()

    # Plain requests ---------------------------------------------------------------------------

    def _fit(self, text: str) -> str:
        """The text cut to the per-input token limit (by the same estimate batching uses); never empty."""
        limit = min(self.max_input_tokens, self._settings.max_batch_tokens)
        while (cost := estimate_tokens(text)) > limit:
            logger.debug("%s: cutting a text of about %d tokens to %d", self._where, cost, limit)
            text = text[: max(1, len(text) * limit // cost - 1)]
        return text or " "  # the API rejects empty strings

    def _plan(self, texts: Sequence[str]) -> list[list[int]]:
        """Indexes of ``texts`` grouped into requests within max_batch_inputs and max_batch_tokens."""
        groups: list[list[int]] = []
        current: list[int] = []
        tokens = 0
        for i, text in enumerate(texts):
            cost = estimate_tokens(text)
            full = len(current) >= self._settings.max_batch_inputs or tokens + cost > self._settings.max_batch_tokens
            if current and full:
                groups.append(current)
                current, tokens = [], 0
            current.append(i)
            tokens += cost
        if current:
            groups.append(current)
        return groups

    async def _embed_group(self, inputs: list[str], timeout_key: TimeoutKey) -> list[list[float]]:
        """One /embeddings request, retried as needed; normalised vectors in input order."""
        dimensions = self._settings.dimensions or openai.omit
        raw = await self._call(
            lambda: self._client.embeddings.with_raw_response.create(
                model=self.model, input=inputs, encoding_format="base64", dimensions=dimensions
            ),
            "an embeddings request",
            timeout_key,
        )
        try:
            payload = json.loads(raw.http_response.content)
        except ValueError:
            raise malformed(self._where, "the body is not JSON") from None
        return self._vectors(payload, len(inputs))

    def _vectors(self, payload: object, expected: int) -> list[list[float]]:
        """Normalised vectors from an embeddings response body, checked (:func:`.openai_payload.vectors`)."""
        return vectors_of(payload, expected, self.dims if self._started else None, self._where)

    # Retries and error classification ---------------------------------------------------------

    async def _call(self, send: Callable[[], Awaitable[T]], what: str, timeout_key: TimeoutKey) -> T:
        """Run ``send`` under the timeout, retrying transient failures; raise the right EmbeddingError."""
        timeout: float = getattr(self._settings, timeout_key)
        attempt = 0
        while True:
            attempt += 1
            wait: float | None = None
            timed_out = False
            cause: Exception
            try:
                with anyio.fail_after(timeout):
                    return await send()
            except (TimeoutError, openai.APITimeoutError) as exc:
                cause, timed_out = exc, True
                reason = f"gave no answer to {what} within {timeout:g}s"
                advice = f"check the server or raise [embedding.openai] {timeout_key}"
            except openai.APIConnectionError as exc:
                cause = exc
                reason = f"could not be reached for {what} ({self._one_line(str(exc.__cause__ or exc))})"
                advice = "check [embedding.openai] base_url and that the server is running"
            except openai.APIStatusError as exc:
                terminal = self._terminal_error(exc, what)
                if terminal is not None:
                    raise terminal from exc
                cause = exc
                wait = retry_after_seconds(exc.response.headers, self.retry_after_cap)
                reason = f"answered {what} with {exc.status_code} ({self._detail(exc)})"
                advice = (
                    "wait a minute or raise [embedding.openai] max_retries"
                    if exc.status_code == 429
                    else "the server may be overloaded or down; try again later"
                )
            if attempt > self._settings.max_retries:
                kind = EmbeddingTimeout if timed_out else EmbeddingError
                tries = f"{attempt} attempts failed" if attempt > 1 else "no retries are configured"
                raise kind(f"{self._where} {reason}; {tries}; {advice}", retryable=True) from cause
            delay = wait if wait is not None else self.retry_delay(attempt)
            logger.warning(
                "%s %s; retry %d of %d in %.2fs", self._where, reason, attempt, self._settings.max_retries, delay
            )
            await anyio.sleep(delay)

    def retry_delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) when the server names no delay."""
        base = min(float(self.retry_max_delay), self.retry_base_delay * 2.0 ** (attempt - 1))
        return base * (1 + random.uniform(0.0, 0.25))

    def _terminal_error(self, exc: openai.APIStatusError, what: str) -> EmbeddingError | None:
        """The error to raise at once for a status retrying cannot fix, or None if it is transient."""
        status = exc.status_code
        detail = self._detail(exc)
        if status == 401:
            return EmbeddingAuthError(
                f"{self._where} refused the API key (401); check [embedding.openai] api_key or OPENAI_API_KEY"
            )
        if status == 403:
            return EmbeddingAuthError(
                f"{self._where} refused access (403: {detail}); check that the key in [embedding.openai] api_key"
                f" or OPENAI_API_KEY may use model {self.model!r}"
            )
        codes = {str(exc.code), str(exc.type)}
        if status == 402 or (400 <= status < 500 and (codes & _QUOTA_CODES or _QUOTA_WORDS.search(detail))):
            return EmbeddingQuotaError(
                f"{self._where} says the account is out of quota or credit ({status}: {detail}); add credit or raise"
                " the usage limit with the provider, or choose another [embedding] provider"
            )
        if status in _RETRYABLE_4XX or status >= 500:
            return None
        return EmbeddingError(
            f"{self._where} rejected {what} ({status}: {detail});"
            " check [embedding.openai] model, dimensions and base_url",
            retryable=False,
        )

    def _detail(self, exc: openai.APIStatusError) -> str:
        """The server's own error message, one line, short, without the key."""
        body = exc.body
        if isinstance(body, dict):
            text = str(body.get("message") or body.get("code") or json.dumps(body))
        else:
            text = str(body or exc.response.reason_phrase or "no details")
        return self._one_line(text)

    def _one_line(self, text: str) -> str:
        text = " ".join(text.split())
        if len(self._key) >= 8:
            text = text.replace(self._key, "***")
        return text if len(text) <= 200 else text[:199] + "…"

    # Batch API --------------------------------------------------------------------------------

    async def _try_batch_api(self, docs: list[str]) -> list[list[float]] | None:
        """Vectors from one Batch API job, or None (after logging why) to fall back to plain requests."""
        try:
            vectors = await self._batch_api(docs)
        except Exception as exc:  # any failure of the job means "use plain requests this time"
            unsupported = isinstance(exc.__cause__, openai.NotFoundError)
            self._batch_failures += self.batch_failure_limit if unsupported or isinstance(exc, TimeoutError) else 1
            message = self._one_line(str(exc) or type(exc).__name__)
            if self._batch_failures >= self.batch_failure_limit:
                self._batch_disabled = True
                logger.warning(
                    "%s: Batch API failed (%d/%d), disabled until restart; using plain requests: %s",
                    self._where, self._batch_failures, self.batch_failure_limit, message,
                )
            else:
                logger.warning(
                    "%s: Batch API failed (%d/%d); using plain requests this time: %s",
                    self._where, self._batch_failures, self.batch_failure_limit, message,
                )
            return None
        if vectors is not None:
            self._batch_failures = 0
        return vectors

    async def _batch_api(self, docs: list[str]) -> list[list[float]] | None:
        """Upload one JSONL request per group, wait for the job, and reassemble the vectors in order."""
        groups = self._plan(docs)
        lines = [
            json.dumps({"custom_id": str(n), "method": "POST", "url": "/v1/embeddings", "body": body})
            for n, body in enumerate(self._body(docs, group) for group in groups)
        ]
        jsonl = ("\n".join(lines) + "\n").encode("utf-8")
        if len(lines) > _BATCH_MAX_REQUESTS or len(jsonl) > _BATCH_MAX_BYTES:
            logger.info(
                "%s: %d requests (%d bytes) exceed one Batch API job; using plain requests",
                self._where, len(lines), len(jsonl),
            )
            return None
        upload = await self._call(
            lambda: self._client.files.create(file=("memdex-embeddings.jsonl", jsonl), purpose="batch"),
            "the Batch API upload",
            "batch_timeout",
        )
        batch = await self._call(
            lambda: self._client.batches.create(
                input_file_id=upload.id, endpoint="/v1/embeddings", completion_window="24h"
            ),
            "the Batch API job creation",
            "batch_timeout",
        )
        try:
            with anyio.fail_after(self.batch_wait_timeout):
                batch = await self._wait_for(batch)
        except TimeoutError:
            await self._cancel(batch.id)
            raise TimeoutError(f"Batch API job {batch.id} not done after {self.batch_wait_timeout:g}s") from None
        if batch.status != "completed" or not batch.output_file_id:
            errors = "; ".join(e.message or e.code or "" for e in (batch.errors.data or [])) if batch.errors else ""
            raise EmbeddingError(f"Batch API job {batch.id} ended {batch.status}{': ' + errors if errors else ''}")
        output_id = batch.output_file_id
        content = await self._call(
            lambda: self._client.files.content(output_id), "the Batch API download", "batch_timeout"
        )
        by_request: dict[str, list[list[float]]] = {}
        for line in content.content.decode("utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                response = record.get("response") or {}
                if response.get("status_code") != 200:
                    problem = record.get("error") or response
                    raise EmbeddingError(f"Batch API request {record.get('custom_id')} failed: {problem}")
                custom_id = str(record["custom_id"])
                by_request[custom_id] = self._vectors(response.get("body"), len(groups[int(custom_id)]))
        if len(by_request) != len(groups):
            raise EmbeddingError(f"Batch API output has {len(by_request)} of {len(groups)} requests")
        vectors: list[list[float]] = [[] for _ in docs]
        for n, group in enumerate(groups):
            for i, vector in zip(group, by_request[str(n)], strict=True):
                vectors[i] = vector
        logger.info("%s: Batch API job %s embedded %d texts", self._where, batch.id, len(docs))
        return vectors

    def _body(self, texts: Sequence[str], group: list[int]) -> dict[str, Any]:
        """A Batch API line's /v1/embeddings request body for ``texts[i] for i in group``."""
        body: dict[str, Any] = {"model": self.model, "input": [texts[i] for i in group], "encoding_format": "base64"}
        if self._settings.dimensions:
            body["dimensions"] = self._settings.dimensions
        return body

    async def _cancel(self, batch_id: str) -> None:
        """Ask the server to stop a job whose results will not be used (best effort)."""
        with anyio.move_on_after(self._settings.query_timeout):
            try:
                await self._client.batches.cancel(batch_id)
            except openai.OpenAIError as exc:
                logger.debug("%s: could not cancel Batch API job %s: %s", self._where, batch_id, exc)

    async def _wait_for(self, batch: Batch) -> Batch:
        while batch.status not in _BATCH_FINAL:
            await anyio.sleep(self.batch_poll_interval)
            batch = await self._call(
                functools.partial(self._client.batches.retrieve, batch.id), "a Batch API status check", "query_timeout"
            )
        return batch

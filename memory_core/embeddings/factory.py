"""Choose and start the embedding provider the settings ask for, with auto-selection and fallback."""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config_sections import EmbeddingSettings
from ..errors import EmbeddingError
from .base import EmbeddingProvider

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ProviderChoice:
    """The provider in use (None = keyword-only) and, when it is not the first choice, why."""

    provider: EmbeddingProvider | None
    note: str | None = None
    retryable: bool = False  # no provider, but one failed in a way that may pass (network, server)
    tried: bool = True  # False: no provider was configured or available to try (keyword-only by choice)


def build(name: str, settings: EmbeddingSettings) -> EmbeddingProvider:
    """An unstarted provider by name ('local' or 'openai')."""
    if name == "local":
        from .local import LocalProvider

        return LocalProvider(settings.local, settings.query_prefix, settings.document_prefix)
    from .remote import OpenAIProvider

    return OpenAIProvider(settings.openai, settings.query_prefix or "", settings.document_prefix or "")


def candidates(settings: EmbeddingSettings) -> tuple[list[str], list[str]]:
    """Providers to try in order, and why auto-selection skipped others."""
    if settings.provider == "none":
        return [], ["embedding.provider is 'none'"]
    skipped: list[str] = []
    if settings.provider == "auto":
        names = []
        if importlib.util.find_spec("llama_cpp") is not None:
            names.append("local")
        else:
            skipped.append("local: llama-cpp-python is not installed (pip install 'memdex-mcp[local]')")
        if settings.openai.api_key is not None or os.environ.get("OPENAI_API_KEY"):
            names.append("openai")
        else:
            skipped.append("openai: no API key (set embedding.openai.api_key or OPENAI_API_KEY)")
    else:
        names = [settings.provider]
    if settings.fallback != "none" and settings.fallback not in names:
        names.append(settings.fallback)
    return names, skipped


async def open_provider(settings: EmbeddingSettings, exclude: frozenset[str] = frozenset()) -> ProviderChoice:
    """Start the first provider that works; keyword-only (with the reasons) when none does."""
    names, problems = candidates(settings)
    retryable = False
    for name in names:
        if name in exclude:
            continue
        provider = None
        try:
            provider = build(name, settings)
            await provider.start()
        except EmbeddingError as exc:
            logger.warning("embedding provider %s unavailable: %s", name, exc)
            problems.append(f"{name}: {exc}")
            retryable |= exc.retryable
            if provider is not None:
                await provider.aclose()
            continue
        note = f"using {name} because " + "; ".join(problems) if problems and settings.provider != "auto" else None
        logger.info("embeddings: %s %s (%d dims)", provider.id, provider.model, provider.dims)
        return ProviderChoice(provider, note)
    note = "keyword search only: " + ("; ".join(problems) or "no embedding provider")
    return ProviderChoice(None, note, retryable, tried=any(name not in exclude for name in names))


ProviderFactory = Callable[[EmbeddingSettings, frozenset[str]], Awaitable[ProviderChoice]]

"""Embedding providers: a local GGUF model (llama-cpp-python) or any OpenAI-compatible API."""

from .base import EmbeddingProvider, l2_normalize

__all__ = ["EmbeddingProvider", "l2_normalize"]

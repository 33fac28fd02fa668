"""Which embedding models read only English, and the warning for a memory written in another script.

Vectors from a model trained on English text place Chinese, Japanese or Korean notes almost at random, so
hybrid search there is keyword search plus noise. Multilingual models (the default EmbeddingGemma,
OpenAI's text-embedding-3, bge-m3, multilingual-e5, jina-embeddings-v3, Qwen3-Embedding, nomic-embed-text
v2) need no warning; the families below were trained on English.
"""

from __future__ import annotations

import re
from collections import Counter

from ..text.scripts import letters_by_script

# Lower-cased name fragments of English-only model families (a GGUF file name or an API model id).
_ENGLISH_ONLY = re.compile(
    r"all-minilm|all-mpnet|multi-qa-minilm|multi-qa-mpnet|bge-(?:small|base|large)-en|(?<!multilingual-)e5-(?:small|base|large)"
    r"|gte-(?:small|base|large)(?!-?multilingual)|nomic-embed-text-v1|mxbai-embed|snowflake-arctic-embed-(?:xs|s|m|l)(?!-v2)"
)
_SHARE = 0.5  # warn when more than this share of the memory's letters is in scripts other than Latin


def english_only(model: str) -> bool:
    """True when ``model`` (a path, hf: reference or API id) is of a family trained on English text only."""
    return _ENGLISH_ONLY.search(model.lower()) is not None


def reads_query(model: str, query: str) -> bool:
    """False when ``model`` reads only English and most of ``query``'s letters are in other scripts: its vector
    would rank notes at random (JSQuAD through an English-only model: hybrid nDCG@10 0.62 against keyword 0.93)."""
    return not english_only(model) or not _mostly_other_scripts(letters_by_script(query))


def _mostly_other_scripts(letters: Counter[str]) -> bool:
    """True when more than :data:`_SHARE` of ``letters`` (counts by script) are not Latin."""
    total = sum(letters.values())
    return total - letters.get("Latin", 0) > _SHARE * total


def script_warning(model: str, letters: Counter[str]) -> str | None:
    """A warning when ``model`` reads only English and most of ``letters`` (counts by script) are not Latin."""
    if not english_only(model) or not _mostly_other_scripts(letters):
        return None
    total = sum(letters.values())
    script, count = max(((name, n) for name, n in letters.items() if name != "Latin"), key=lambda x: x[1])
    return (
        f"{100 * count / total:.0f}% of the memory's letters are {script}, but the embedding model {model} was "
        "trained on English only: its vectors add noise to those searches. Use a multilingual model (the "
        "default EmbeddingGemma, or OpenAI's text-embedding-3-small), or embedding.provider = none for keyword only."
    )

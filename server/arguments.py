"""Tool arguments the input schema refuses, explained in one line, like memdex's own errors.

The SDK validates arguments against each tool's schema before the tool runs and reports a failure as
pydantic's multi-line dump (error types, input values, a documentation URL). :func:`explain_refusal` turns it
into ``maxChars must be an integer from 200 to 12000 (got 5)``: the argument, what it must be (read
from the same JSON schema the client sees) and what was sent.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from memdex.memory_core import shown


def explain_refusal(schema: dict[str, Any], error: ValidationError) -> str:
    """One line for every refused argument of a tool whose input schema is ``schema``."""
    properties = {_key(name): spec for name, spec in schema.get("properties", {}).items()}
    problems = []
    for detail in error.errors():
        name = ".".join(str(part) for part in detail["loc"]) or "arguments"
        spec = properties.get(_key(str(detail["loc"][0]))) if detail["loc"] else None
        if detail["type"] == "missing":
            problems.append(f"{name} is missing; pass {spec.get('description', 'it') if spec else 'it'}")
        elif spec is None:
            problems.append(f"{name}: {detail['msg']}")
        else:
            problems.append(f"{name} must be {_expected(spec)} (got {shown(detail['input'])})")
    return "; ".join(problems)


def _key(name: str) -> str:
    """Spellings the tools accept for one argument (maxResults, max_results, from_) compare equal."""
    return name.replace("_", "").lower()


def _expected(spec: dict[str, Any]) -> str:
    """What a JSON-schema property accepts, in words."""
    variants = spec.get("anyOf", [spec])
    kinds = [_kind(v) for v in variants if v.get("type") != "null"]
    return " or ".join(kinds) + (", or omitted" if len(kinds) < len(variants) else "")


def _kind(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " or ".join(repr(value) for value in spec["enum"])
    kind = spec.get("type")
    if kind == "boolean":
        return "true or false"
    if kind == "string":
        noun = "a non-empty string" if spec.get("minLength") else "a string"
        high = spec.get("maxLength")
        return noun if high is None else f"{noun} of at most {high:,} characters"
    noun = {"integer": "an integer", "number": "a number"}.get(str(kind), f"a JSON {kind}")
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        return f"{noun} from {low:g} to {high:g}"
    if low is not None:
        return f"{noun} of {low:g} or more"
    if high is not None:
        return f"{noun} of {high:g} or less"
    return noun

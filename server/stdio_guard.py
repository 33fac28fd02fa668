"""Every line a stdio client sends gets an answer.

The SDK's stdio loop reads each line as a JSON-RPC message and silently drops one it cannot read: a line that
is not JSON, a request without ``"jsonrpc": "2.0"``, ``params`` that are not an object, text with a lone
surrogate (``"\\ud800"``). The client then waits forever for an answer to its request. :class:`AnsweredLines`
sits between stdin and that loop: a line the SDK would drop is answered here with the JSON-RPC error that says
why (the request's id when it has one, else null, as JSON-RPC 2.0 asks), and never reaches the SDK. A
malformed *response* from the client (to a server request) is logged and dropped: there is no one to answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import ObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def refusal(line: str) -> types.JSONRPCError | None:
    """The error that answers ``line``, or None when the SDK can take it (or it is blank, or a client's response)."""
    if not line.strip():
        return None
    try:
        data: Any = json.loads(line)
    except RecursionError:
        return _error(None, PARSE_ERROR, "Parse error: the JSON is nested too deep to read")
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: the line is not JSON; send one JSON-RPC 2.0 message per line")
    if not isinstance(data, dict):
        kind = "a batch (an array)" if isinstance(data, list) else f"{_json_kind(data)}, not an object"
        return _error(None, INVALID_REQUEST, f"Invalid Request: the line is {kind}; send one JSON-RPC 2.0 object per line")
    if "method" not in data and ("result" in data or "error" in data):
        if not _readable(line):
            logger.warning("dropped a malformed JSON-RPC response from the client (id %r)", data.get("id"))
        return None
    if "id" in data and not _valid_id(data["id"]):  # the SDK would take it as a notification and never answer
        return _error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if _readable(line):
        return None
    return _error(data.get("id"), *_problem(data))


def _readable(line: str) -> bool:
    """True when the SDK reads ``line`` as a JSON-RPC message."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return False
    return True


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _problem(data: dict[str, Any]) -> tuple[int, str]:
    """Why a JSON object is not a message the server can take: an error code and a message that says what to fix."""
    if data.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid Request: every message needs "jsonrpc": "2.0"'
    if not isinstance(data.get("method"), str):
        return INVALID_REQUEST, 'Invalid Request: a request needs a "method" string (and an "id" unless a notification)'
    if "params" in data and not isinstance(data["params"], dict):
        return INVALID_PARAMS, f'Invalid params: "params" must be an object, not {_json_kind(data["params"])}'
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return INVALID_PARAMS, "Invalid params: the message holds a lone surrogate escape (e.g. \\ud800), not Unicode text"
    return INVALID_REQUEST, "Invalid Request: the message does not follow the MCP JSON-RPC schema"


def _json_kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


class AnsweredLines:
    """The lines of ``source`` that the SDK can read; the others are answered on ``write`` (see :meth:`answer_on`)."""

    def __init__(self, source: AsyncIterable[str]) -> None:
        self._source = source
        self._write: ObjectSendStream[SessionMessage] | None = None
        self._ready = anyio.Event()

    def answer_on(self, write: ObjectSendStream[SessionMessage]) -> None:
        """Answer refused lines on the stream the server writes its own messages to (one writer, whole frames)."""
        self._write = write
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._source:
            error = refusal(line)
            if error is None:
                yield line
                continue
            logger.warning("answered an unreadable stdio message with error %d: %s", error.error.code, error.error.message)
            await self._ready.wait()
            assert self._write is not None
            await self._write.send(SessionMessage(error))

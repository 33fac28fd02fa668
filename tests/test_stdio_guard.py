"""Over stdio every request gets an answer: lines the SDK's loop would drop get a JSON-RPC error instead."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import stop_process

from memdex.server.stdio_guard import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, refusal

INITIALIZE = {
    "jsonrpc": "2.0", "id": "init", "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
}  # fmt: skip

# (raw line, the id the answer must carry, its error code)
MALFORMED = [
    ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}', 1, INVALID_PARAMS),
    ('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"}', 2, INVALID_PARAMS),
    ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":1}', 3, INVALID_PARAMS),
    ('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"\\ud800"}}}', 4, INVALID_PARAMS),
    ('{"jsonrpc":"2.0","id":"s5","method":"tools/call","params":{"name":"memory_get","arguments":{"path":"\\udfff.md"}}}', "s5", INVALID_PARAMS),
    ('{"id":6,"method":"tools/list"}', 6, INVALID_REQUEST),
    ('{"jsonrpc":"1.0","id":7,"method":"tools/list"}', 7, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":8}', 8, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":9,"method":5}', 9, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":true,"method":"ping"}', None, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', None, INVALID_REQUEST),
    ('{"jsonrpc":"2.0","id":null,"method":"ping"}', None, INVALID_REQUEST),
    ("not json at all", None, PARSE_ERROR),
    ('{"jsonrpc":"2.0","id":14,', None, PARSE_ERROR),
    ("[]", None, INVALID_REQUEST),
    ('[{"jsonrpc":"2.0","id":16,"method":"ping"}]', None, INVALID_REQUEST),
    ('"a string"', None, INVALID_REQUEST),
    ("42", None, INVALID_REQUEST),
    ("null", None, INVALID_REQUEST),
    ("[" * 50_000 + "]" * 50_000, None, PARSE_ERROR),
    ('{"jsonrpc":"2.0","method":"notifications/initialized","params":[]}', None, INVALID_PARAMS),
]


@pytest.mark.parametrize(("line", "request_id", "code"), MALFORMED, ids=range(len(MALFORMED)))
def test_refusal_names_the_id_and_the_problem(line: str, request_id: object, code: int) -> None:
    error = refusal(line)
    assert error is not None, line[:80]
    assert (error.id, error.error.code) == (request_id, code), error.error.message


def test_readable_lines_blank_lines_and_client_responses_pass() -> None:
    assert refusal(json.dumps(INITIALIZE)) is None
    assert refusal('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"q":"乌龙茶"}}}') is None
    assert refusal("   ") is None
    assert refusal('{"jsonrpc":"2.0","id":"srv-1","result":"not an object"}') is None  # a response: no one to answer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], queue.Queue[dict[str, object]]]]:
    workspace = tmp_path / "ws"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The deploy key is ORBIT-7734.\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMDEX_")} | {"MEMDEX_EMBEDDING__PROVIDER": "none"}
    command = [sys.executable, "-m", "memdex.server.cli", "serve", "--workspace", str(workspace),
               "--index", str(tmp_path / "idx.sqlite")]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answers: queue.Queue[dict[str, object]] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            answers.put(json.loads(raw))

    threading.Thread(target=read, daemon=True).start()
    try:
        yield process, answers
    finally:
        stop_process(process)


def _send(process: subprocess.Popen[bytes], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line.encode("utf-8", errors="surrogatepass") + b"\n")
    process.stdin.flush()


def test_every_malformed_line_gets_an_error_and_the_session_goes_on(
    server: tuple[subprocess.Popen[bytes], queue.Queue[dict[str, object]]],
) -> None:
    """Each shape, sent to a real `memdex serve` over stdio, is answered in turn (the SDK alone answered none of
    them), and a good request after them all is still served."""
    process, answers = server
    _send(process, json.dumps(INITIALIZE))
    assert answers.get(timeout=60)["id"] == "init"
    _send(process, '{"jsonrpc":"2.0","method":"notifications/initialized"}')
    for line, request_id, code in MALFORMED:
        _send(process, line)
        answer = answers.get(timeout=30)
        assert answer["id"] == request_id and answer["error"]["code"] == code, (line[:80], answer)  # type: ignore[index]
    _send(process, '{"jsonrpc":"2.0","id":"last","method":"tools/list"}')
    last = answers.get(timeout=30)
    assert last["id"] == "last" and "memory_search" in json.dumps(last)

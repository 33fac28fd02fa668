"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 for the remote embedding tests.

Every request is recorded (path without the ``/v1`` prefix). A test queues replies for a path with
:meth:`FakeOpenAI.script`; a request with no queued reply gets the default behaviour: deterministic
embeddings (listed in reverse order, base64 when asked for), and a Batch API whose jobs reach
``batch_status`` on the second status check.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import threading
from collections import defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def fake_vector(text: str, dims: int) -> list[float]:
    """The (unnormalised) vector the fake gives ``text``: derived from its SHA-256, never zero."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [digest[i % len(digest)] - 127.5 for i in range(dims)]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: JSON-encoded ``body`` (bytes are sent as they are), after ``delay`` seconds."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    method: str
    path: str
    headers: Mapping[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class FakeOpenAI:
    """The server; ``url`` is its ``/v1`` base URL. Call :meth:`close` when done."""

    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self.batch_status = "completed"  # what jobs become on the second status check
        self.requests: list[Seen] = []
        self.files: dict[str, bytes] = {}
        self._script: defaultdict[str, deque[Reply]] = defaultdict(deque)
        self._batches: dict[str, dict[str, Any]] = {}
        self._polls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def script(self, path: str, *replies: Reply) -> None:
        """Answer the next requests to ``path`` with ``replies``, in order, before the default behaviour."""
        with self._lock:
            self._script[path].extend(replies)

    def paths(self) -> list[str]:
        return [seen.path for seen in self.requests]

    def inputs(self) -> list[list[str]]:
        """The ``input`` list of each /embeddings request received."""
        return [seen.json()["input"] for seen in self.requests if seen.path == "/embeddings"]

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def handle(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            queued = self._script.get(seen.path)
            if queued:
                return queued.popleft()
            return self._default(seen)

    def embeddings_body(self, inputs: list[str], *, as_base64: bool) -> dict[str, Any]:
        """An /embeddings response for ``inputs``, its items listed in reverse order."""
        data = []
        for index, text in reversed(list(enumerate(inputs))):
            vector = fake_vector(text, self.dims)
            encoded = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        return {"object": "list", "model": "fake", "data": data, "usage": {"prompt_tokens": 0, "total_tokens": 0}}

    def _default(self, seen: Seen) -> Reply:
        parts = seen.path.strip("/").split("/")
        if seen.method == "POST" and parts == ["embeddings"]:
            request = seen.json()
            inputs = [request["input"]] if isinstance(request["input"], str) else request["input"]
            return Reply(body=self.embeddings_body(inputs, as_base64=request.get("encoding_format") == "base64"))
        if seen.method == "POST" and parts == ["files"]:
            purpose, content = _multipart(seen.headers["content-type"], seen.body)
            return Reply(body=self._store_file(content, purpose))
        if seen.method == "GET" and parts[0] == "files" and parts[-1] == "content" and parts[1] in self.files:
            return Reply(body=self.files[parts[1]], headers={"content-type": "application/octet-stream"})
        if seen.method == "POST" and parts == ["batches"]:
            request = seen.json()
            batch_id = f"batch-{len(self._batches) + 1}"
            self._batches[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request["endpoint"],
                "input_file_id": request["input_file_id"],
                "completion_window": request["completion_window"],
                "status": "validating",
                "created_at": 0,
            }
            return Reply(body=self._batches[batch_id])
        if parts[0] == "batches" and len(parts) > 1 and parts[1] in self._batches:
            batch = self._batches[parts[1]]
            if parts[2:] == ["cancel"]:
                batch["status"] = "cancelling"
            else:
                self._polls[batch["id"]] += 1
                batch["status"] = self.batch_status if self._polls[batch["id"]] >= 2 else "in_progress"
                if batch["status"] == "completed" and "output_file_id" not in batch:
                    batch["output_file_id"] = self._store_file(self._run(batch["input_file_id"]), "batch_output")["id"]
                if batch["status"] == "failed":
                    batch["errors"] = {"object": "list", "data": [{"code": "scripted", "message": "scripted failure"}]}
            return Reply(body=batch)
        return Reply(404, {"error": {"message": f"no route for {seen.method} {seen.path}", "type": "invalid_request"}})

    def _store_file(self, content: bytes, purpose: str) -> dict[str, Any]:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": 0,
            "filename": "upload.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    def _run(self, input_file_id: str) -> bytes:
        """A completed job's output file: one response line per input line, in reverse order."""
        lines = [json.loads(line) for line in self.files[input_file_id].decode().splitlines() if line.strip()]
        out = []
        for request in reversed(lines):
            inputs, as_base64 = request["body"]["input"], request["body"].get("encoding_format") == "base64"
            body = self.embeddings_body(inputs, as_base64=as_base64)
            response = {"status_code": 200, "request_id": "req", "body": body}
            out.append(json.dumps({"custom_id": request["custom_id"], "response": response, "error": None}))
        return ("\n".join(out) + "\n").encode()


def _multipart(content_type: str, body: bytes) -> tuple[str, bytes]:
    """The ``purpose`` field and ``file`` content of a multipart/form-data upload."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():  # type: ignore[attr-defined]
        fields[part.get_param("name", header="content-disposition")] = part.get_payload(decode=True)
    return fields["purpose"].decode(), fields["file"]


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.removeprefix("/v1")
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = fake.handle(Seen(self.command, path, headers, body))
        if reply.delay:
            fake.closing.wait(reply.delay)
        data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
        try:
            self.send_response(reply.status)
            headers_out = {"content-type": "application/json", **reply.headers, "content-length": str(len(data))}
            for name, value in headers_out.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client gave up (a timeout test)
            pass

    do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

"""A small OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It is a real HTTP/1.1 server (keep-alive, one thread per connection), so the official ``openai``
SDK talks to it exactly as to vLLM or api.openai.com::

    with FakeOpenAIServer(reply="B", top_logprobs={"A": -1.0, "B": -2.0}) as srv:
        model = get_model(f"openai/fake-model@{srv.base_url}", api_key=srv.api_key)
        srv.fail_next(429, times=1)         # the next request is rate limited
        ...
        assert len(srv.requests) == 2

Behaviour per request, in order: a wrong ``Authorization`` key gets 401; an unknown model gets
404; the failure ``fail_if(body)`` returns, if any, is served (e.g. llama.cpp's HTTP 400 for a
prompt longer than the context: :data:`CONTEXT_EXCEEDED`); a queued failure (:meth:`fail_next`)
is served (a status of 200 serves an error body with HTTP 200, as some servers and proxies do);
otherwise, after ``delay`` seconds, a normal
completion whose text is ``reply`` (a string or a function of the request body). When the request
asks for ``logprobs``, every completion token carries ``top_logprobs`` built from the
``top_logprobs`` mapping (token -> logprob), cut to the number the request asked for.

Run it standalone with ``python -m seerbench.testing.fake_openai --port 8000 --delay 0.05``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = str | Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Failure:
    """An HTTP error to serve instead of a completion."""

    status: int
    message: str = "simulated failure"
    retry_after: float | None = None


#: llama.cpp's answer to a prompt longer than the context (vLLM also answers HTTP 400).
CONTEXT_EXCEEDED = Failure(400, "the request exceeds the available context size, try increasing it")


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: many clients may connect at once
    fake: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server
    # Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and the
    # client's delayed ACK add ~40 ms to every answer.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        fake = self.server.fake
        if self.path.rstrip("/").endswith("/models"):
            self._send(
                200,
                {
                    "object": "list",
                    "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in fake.models
                    ],
                },
            )
        else:
            self._send(404, _error(f"no route {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        status, body, headers, delay = self.server.fake.handle(
            self.path, dict(self.headers.items()), self.rfile.read(length)
        )
        if delay:
            time.sleep(delay)
        self._send(status, body, headers)


class FakeOpenAIServer:
    """See the module docstring. Use as a context manager or call :meth:`start` / :meth:`stop`."""

    def __init__(
        self,
        *,
        reply: Reply = "A",
        top_logprobs: Mapping[str, float] | None = None,
        models: tuple[str, ...] = ("fake-model",),
        api_key: str | None = "test-key",
        delay: float = 0.0,
        port: int = 0,
        fail_if: Callable[[dict[str, Any]], Failure | None] | None = None,
    ) -> None:
        self.reply = reply
        self.fail_if = fail_if
        self.top_logprobs = dict(top_logprobs or {})
        self.models = models
        self.api_key = api_key
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self._failures: deque[Failure] = deque()
        self._lock = threading.Lock()
        self._count = 0
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # -- control -------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fail_next(
        self, status: int, *, times: int = 1, message: str | None = None, retry_after: float | None = None
    ) -> None:
        """Serve HTTP ``status`` to the next ``times`` well-formed requests."""
        with self._lock:
            for _ in range(times):
                self._failures.append(Failure(status, message or f"simulated HTTP {status}", retry_after))

    @property
    def request_count(self) -> int:
        with self._lock:
            return self._count

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() would wait forever for a loop never started
            self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def serve_forever(self) -> None:
        self._httpd.serve_forever()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def handle(
        self, path: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[int, dict[str, Any], dict[str, str], float]:
        """Answer one POST: (status, JSON body, extra headers, seconds to wait before sending)."""
        try:
            body: dict[str, Any] = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return 400, _error("body is not JSON", "invalid_request_error"), {}, 0.0
        headers = {k.lower(): v for k, v in headers.items()}  # recorded with lower-case names
        self._record(path, headers, body)
        if not path.rstrip("/").endswith("/chat/completions"):
            return 404, _error(f"no route {path}", "invalid_request_error"), {}, 0.0
        auth = headers.get("authorization")
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, _error("Incorrect API key provided.", "invalid_request_error"), {}, 0.0
        if body.get("model") not in self.models:
            return (
                404,
                _error(f"The model `{body.get('model')}` does not exist.", "invalid_request_error"),
                {},
                0.0,
            )
        failure = self.fail_if(body) if self.fail_if is not None else None
        if failure is None:
            failure = self._next_failure()
        if failure is not None:
            extra = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            return failure.status, _error(failure.message, "server_error"), extra, 0.0
        return 200, self._completion(body), {}, self.delay

    async def serve_asyncio(self) -> None:
        """Serve on the same port from an asyncio event loop instead of threads (one thread for
        every connection; cheaper when many clients wait on ``delay`` at once). Runs until
        cancelled; do not also call :meth:`start`."""
        sock = self._httpd.socket
        server = await asyncio.start_server(self._serve_connection, sock=sock, backlog=1024)
        async with server:
            await server.serve_forever()

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                lower = {k.lower(): v for k, v in headers.items()}
                raw = await reader.readexactly(int(lower.get("content-length", 0)))
                if method == "POST":
                    status, body, extra, delay = self.handle(path, headers, raw)
                else:
                    status, body, extra, delay = (
                        404,
                        _error(f"no route {method} {path}", "invalid_request_error"),
                        {},
                        0.0,
                    )
                if delay:
                    await asyncio.sleep(delay)
                data = json.dumps(body).encode()
                reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
                out = [
                    f"HTTP/1.1 {status} {reason}",
                    "Content-Type: application/json",
                    f"Content-Length: {len(data)}",
                ]
                out += [f"{k}: {v}" for k, v in extra.items()]
                writer.write(("\r\n".join(out) + "\r\n\r\n").encode() + data)
                await writer.drain()
                if lower.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    # -- internals -----------------------------------------------------------------------------
    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self._count += 1
            self.requests.append({"path": path, "headers": headers, "body": body})

    def _next_failure(self) -> Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
        text = self.reply(body) if callable(self.reply) else self.reply
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 256)
        tokens = text.split(" ")[:max_tokens] if text else []
        tokens = [t if i == 0 else " " + t for i, t in enumerate(tokens)]
        text = "".join(tokens)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "length" if len(tokens) == max_tokens else "stop",
            "logprobs": None,
        }
        if body.get("logprobs"):
            k = int(body.get("top_logprobs") or 0)
            top = sorted(self.top_logprobs.items(), key=lambda kv: -kv[1])[:k]
            content = []
            for t in tokens:
                lp = self.top_logprobs.get(t, -0.01)
                content.append(
                    {
                        "token": t,
                        "logprob": lp,
                        "bytes": list(t.encode()),
                        "top_logprobs": [
                            {"token": a, "logprob": b, "bytes": list(a.encode())} for a, b in top
                        ],
                    }
                )
            choice["logprobs"] = {"content": content, "refusal": None}
        return {
            "id": f"chatcmpl-fake-{self.request_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(tokens),
                "total_tokens": prompt_tokens + len(tokens),
            },
        }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Fake OpenAI-compatible chat-completions server on 127.0.0.1.")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds before each answer")
    ap.add_argument("--reply", default="A")
    ap.add_argument("--api-key", default=None, help="require this key (default: accept any)")
    ap.add_argument("--asyncio", action="store_true", help="serve from an asyncio loop instead of threads")
    ap.add_argument(
        "--model", action="append", default=None, help="served model name(s) (default: fake-model)"
    )
    a = ap.parse_args(argv)
    srv = FakeOpenAIServer(
        reply=a.reply, api_key=a.api_key, delay=a.delay, port=a.port, models=tuple(a.model or ["fake-model"])
    )
    print(f"serving on {srv.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        if a.asyncio:
            asyncio.run(srv.serve_asyncio())
        else:
            srv.serve_forever()


if __name__ == "__main__":
    main()

"""A real chat-completions server for tests, on 127.0.0.1 (stdlib ``http.server`` in a thread).

It speaks the OpenAI protocol the ``openai`` executor uses: ``POST /v1/chat/completions``
answered as one JSON completion, or as server-sent events when the request asks to
``stream`` (content and tool-call arguments arrive in pieces; usage in a last chunk when
``stream_options.include_usage`` is set). What it answers comes from a *brain*: a list of
replies used in order, or a function of the request body. Every request, its headers and the
reply (with the usage it reported) are recorded for the test to inspect. ``refuse`` makes it
a server without some request parameters: a request carrying one (``response_format``...)
is answered with that ``Failure`` before the brain is asked (recorded like any reply).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any


@dataclass
class Completion:
    """A model answer: text and/or tool calls ``(name, raw argument text)``; ``usage`` is
    ``(prompt_tokens, completion_tokens)`` (None: the server reports none); ``id`` the
    completion's id and ``model`` the model that answered (None: the one asked for)."""

    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    usage: tuple[int, int] | None = (0, 0)
    finish_reason: str | None = None
    id: str = "chatcmpl-test"
    model: str | None = None


@dataclass
class Failure:
    """An HTTP error answer."""

    status: int
    message: str = "failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Trickle:
    """A stream that never finishes: a piece of text every ``interval_s`` for ``seconds``."""

    seconds: float = 10.0
    interval_s: float = 0.05


Reply = Completion | Failure | Trickle
Brain = Callable[[dict[str, Any]], Reply]


def usage_for(body: dict[str, Any], content: str) -> tuple[int, int]:
    """A usage the server can compute from what it saw: ~4 characters a token."""
    prompt = len(json.dumps(body.get("messages", []), ensure_ascii=False)) // 4 + 1
    return prompt, len(content) // 4 + 1


class ModelServer:
    """``with ModelServer(brain) as server: ... server.url`` (the ``/v1`` base URL)."""

    def __init__(
        self, brain: Brain | list[Reply], *, api_key: str = "", refuse: dict[str, Failure] | None = None
    ) -> None:
        self._script = list(brain) if isinstance(brain, list) else None
        self._brain = brain if callable(brain) else None
        self.api_key = api_key
        self.refuse = dict(refuse or {})
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.replies: list[Reply] = []
        self.disconnects = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def completions(self) -> list[Completion]:
        """The completions answered (not the failures), in order."""
        return [r for r in self.replies if isinstance(r, Completion)]

    def reported_tokens(self) -> int:
        """Total tokens of every usage the server reported."""
        return sum(sum(r.usage) for r in self.completions() if r.usage)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            refused = next((failure for name, failure in self.refuse.items() if name in body), None)
            if refused is not None:
                reply: Reply = refused
            elif self._script is not None:
                reply = self._script.pop(0) if self._script else Failure(500, "the test script ran out")
            else:
                assert self._brain is not None
                reply = self._brain(body)
            self.replies.append(reply)
            return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (ChatCompletionsHandler,), {"model_server": self})


class ChatCompletionsHandler(BaseHTTPRequestHandler):
    """Answers ``POST /v1/chat/completions`` the way its ``model_server`` scripts it."""

    model_server: ModelServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with self.model_server._lock:
            self.model_server.headers.append({k.lower(): v for k, v in self.headers.items()})
        if not self.path.endswith("/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        if self.model_server.api_key and self.headers.get("authorization") != f"Bearer {self.model_server.api_key}":
            self._json(401, {"error": {"message": "Incorrect API key provided"}})
            return
        reply = self.model_server._next(body)
        if isinstance(reply, Failure):
            self._json(reply.status, {"error": {"message": reply.message}}, reply.headers)
        elif isinstance(reply, Trickle):
            self._trickle(body, reply)
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._json(200, self._completion(body, reply))

    def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(raw)

    @staticmethod
    def _calls(reply: Completion) -> list[dict[str, Any]]:
        return [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]

    def _finish(self, reply: Completion) -> str:
        return reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")

    def _completion(self, body: dict[str, Any], reply: Completion) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.tool_calls:
            message["tool_calls"] = self._calls(reply)
        data: dict[str, Any] = {
            "id": reply.id,
            "object": "chat.completion",
            "created": 0,
            "model": reply.model or body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish(reply)}],
        }
        if reply.usage is not None:
            data["usage"] = {
                "prompt_tokens": reply.usage[0],
                "completion_tokens": reply.usage[1],
                "total_tokens": sum(reply.usage),
            }
        return data

    def _trickle(self, body: dict[str, Any], reply: Trickle) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "t", "object": "chat.completion.chunk", "created": 0, "model": body["model"]}
        chunk["choices"] = [{"index": 0, "delta": {"content": "and "}, "finish_reason": None}]
        deadline = time.monotonic() + reply.seconds
        try:
            while time.monotonic() < deadline:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
                time.sleep(reply.interval_s)
        except (BrokenPipeError, ConnectionResetError):
            with self.model_server._lock:
                self.model_server.disconnects += 1

    def _stream(self, body: dict[str, Any], reply: Completion) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        base = {"id": reply.id, "object": "chat.completion.chunk", "created": 0, "model": reply.model or body["model"]}

        def send(choices: list[dict[str, Any]], **extra: Any) -> None:
            event = {**base, "choices": choices, **extra}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()

        send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        text = reply.content
        for start in range(0, len(text), 25):
            send([{"index": 0, "delta": {"content": text[start : start + 25]}, "finish_reason": None}])
        for i, call in enumerate(self._calls(reply)):
            args = call["function"]["arguments"]
            half = len(args) // 2
            first = {"index": i, "id": call["id"], "type": "function"}
            first["function"] = {"name": call["function"]["name"], "arguments": args[:half]}
            send([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])
            rest = {"index": i, "function": {"arguments": args[half:]}}
            send([{"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": None}])
        send([{"index": 0, "delta": {}, "finish_reason": self._finish(reply)}])
        if reply.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
            usage = {
                "prompt_tokens": reply.usage[0],
                "completion_tokens": reply.usage[1],
                "total_tokens": sum(reply.usage),
            }
            send([], usage=usage)
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@contextmanager
def host_on_model(settings: Any, brain: Any, **options: Any) -> Iterator[SimpleNamespace]:
    """A fresh runtime host whose default brain is the ``openai`` executor talking to a
    ``ModelServer`` run by ``brain`` (model ``review-model``); ``options`` override more
    ``settings.TEAMCLAW`` keys. Yields ``{host, server, brain}``; the host is reset after."""
    from runs import host as host_module

    with ModelServer(brain) as server:
        settings.TEAMCLAW = {
            **settings.TEAMCLAW,
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-e2e-secret-key",
            "MODEL": "review-model",
            "EXECUTOR": "openai",
            **options,
        }
        host_module.reset_host()
        try:
            yield SimpleNamespace(host=host_module.get_host(), server=server, brain=brain)
        finally:
            host_module.reset_host()

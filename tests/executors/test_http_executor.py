"""The ``http`` executor for plugin capabilities (US-12) against real HTTP servers on
127.0.0.1: params POSTed as JSON, responses validated, and every SSRF door closed
(hosts not allowed, names resolving to internal addresses, metadata addresses, redirects,
huge bodies)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from teamclaw.runtime import CardSpec, ExecutorRegistry, InvokeRequest, OfflineExecutor, Runtime
from teamclaw.runtime.executors.http import (
    MAX_RESPONSE_BYTES,
    HttpExecutor,
    check_plugin_url,
    parse_allowed_hosts,
)
from teamclaw.strict_json import MAX_DEPTH, too_deep_message
from tests.factories import object_schema, small_snapshot

Answer = tuple[int, dict[str, str], bytes]


class PluginServer:
    """A plugin on 127.0.0.1: ``answer(path, body) -> (status, headers, bytes)``; records requests."""

    def __init__(self, answer: Callable[[str, dict[str, Any]], Answer]) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"null")
                server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers.items())})
                status, headers, raw = server.answer(self.path, body)
                self.send_response(status)
                for key, value in {"content-length": str(len(raw)), **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def url(self, path: str = "/run", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> PluginServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def shout(path: str, body: dict[str, Any]) -> Answer:
    return 200, {"content-type": "application/json"}, json.dumps({"text": body["text"].upper()}).encode()


def plugin_card(url: str, idempotent: bool | None = None) -> CardSpec:
    schema = object_schema(text={"type": "string"})
    return CardSpec(
        "shout", "Shout", "a plugin", "generation", schema, schema, "1.0.0", ("b",), executor="http",
        executor_config={"url": url}, idempotent=idempotent,
    )  # fmt: skip


async def call_plugin(
    url: str, allowed: list[str], resolver: Any = None, text: str = "hello", idempotent: bool | None = None
) -> Any:
    registry = ExecutorRegistry({"offline": OfflineExecutor(), "http": HttpExecutor(allowed, resolver=resolver)})
    snapshot = small_snapshot(cards=[plugin_card(url, idempotent)])
    runtime = Runtime(snapshot=snapshot, executors=registry, backoff_base_s=0.001)
    try:
        return await runtime.invoke(InvokeRequest("shout", {"text": text}, target_role="b"), from_role="a")
    finally:
        await runtime.stop()


def resolving_to(*addresses: str) -> Any:
    async def resolve(host: str, port: int) -> list[str]:
        return list(addresses)

    return resolve


async def test_params_are_posted_as_json_and_the_answer_is_the_result():
    with PluginServer(shout) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"], text="quiet words")
    assert result.success, result.error
    assert result.data == {"text": "QUIET WORDS"}
    (request,) = plugin.requests
    assert request["body"] == {"text": "quiet words"}
    assert request["headers"]["X-TeamClaw-Capability"] == "shout"
    assert request["headers"]["X-TeamClaw-Role"] == "b"


async def test_by_default_no_host_is_allowed():
    with PluginServer(shout) as plugin:
        result = await call_plugin(plugin.url(), [])
    assert not result.success
    assert result.error.code == "executor_error"
    assert "TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS" in result.error.message
    assert plugin.requests == []


async def test_a_port_other_than_the_allowed_one_is_refused():
    with PluginServer(shout) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port + 1}"])
    assert not result.success
    assert "not in TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS" in result.error.message
    assert plugin.requests == []


async def test_an_allowed_name_that_resolves_to_an_internal_address_is_refused():
    with PluginServer(shout) as plugin:
        url = plugin.url(host="plugins.example.com")
        result = await call_plugin(url, ["plugins.example.com"], resolver=resolving_to("127.0.0.1"))
    assert not result.success
    assert result.error.code == "executor_error"
    assert "internal address" in result.error.message
    assert plugin.requests == []


@pytest.mark.parametrize("address", ["169.254.169.254", "0.0.0.0", "224.0.0.1", "::ffff:169.254.169.254"])
async def test_metadata_unspecified_and_multicast_addresses_are_refused_even_when_listed(address):
    host = f"[{address}]" if ":" in address else address
    result = await call_plugin(f"http://{host}:8080/run", [f"{host}:8080"])
    assert not result.success
    assert result.error.code == "executor_error"
    assert "link-local, multicast, unspecified or reserved" in result.error.message


async def test_localhost_listed_by_name_is_called_with_its_host_header():
    with PluginServer(shout) as plugin:
        result = await call_plugin(plugin.url(host="localhost"), ["localhost"], resolver=resolving_to("127.0.0.1"))
    assert result.success, result.error
    assert plugin.requests[0]["headers"]["Host"] == f"localhost:{plugin.port}"


async def test_a_redirect_to_another_host_is_not_followed():
    with PluginServer(shout) as elsewhere:

        def redirect(path: str, body: Any) -> Answer:
            return 307, {"location": elsewhere.url(host="localhost")}, b""

        with PluginServer(redirect) as plugin:
            allowed = [f"127.0.0.1:{plugin.port}", "localhost"]
            result = await call_plugin(plugin.url(), allowed, resolver=resolving_to("127.0.0.1"))
    assert not result.success
    assert result.error.code == "executor_error"
    assert "redirected to another host (localhost)" in result.error.message
    assert elsewhere.requests == []


async def test_a_307_redirect_on_the_same_host_is_followed_with_the_post():
    def moved(path: str, body: Any) -> Answer:
        if path == "/old":
            return 307, {"location": "/run"}, b""
        return shout(path, body)

    with PluginServer(moved) as plugin:
        result = await call_plugin(plugin.url("/old"), [f"127.0.0.1:{plugin.port}"])
    assert result.success, result.error
    assert [r["path"] for r in plugin.requests] == ["/old", "/run"]
    assert plugin.requests[1]["body"] == {"text": "hello"}


async def test_a_302_that_would_turn_the_post_into_a_get_is_not_followed():
    with PluginServer(lambda path, body: (302, {"location": "/elsewhere"}, b"")) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert "302" in result.error.message
    assert len(plugin.requests) == 1


async def test_a_huge_response_is_cut_off():
    def huge(path: str, body: Any) -> Answer:
        return 200, {"content-type": "application/json"}, b'{"text": "' + b"x" * (MAX_RESPONSE_BYTES + 10) + b'"}'

    with PluginServer(huge) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "executor_error"
    assert "exceeded" in result.error.message


@pytest.mark.parametrize(
    ("raw", "reason"),
    [(b"<html>oops</html>", "not JSON"), (b"[1, 2]", "JSON list, not an object")],
)
async def test_an_answer_that_is_not_a_json_object_is_an_executor_error(raw, reason):
    with PluginServer(lambda path, body: (200, {}, raw)) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "executor_error"
    assert reason in result.error.message


@pytest.mark.parametrize("depth", [1_000, 100_000])
async def test_an_answer_nested_too_deeply_is_an_executor_error_naming_the_depth(depth):
    raw = b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
    with PluginServer(lambda path, body: (200, {}, raw)) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "executor_error"
    assert too_deep_message(MAX_DEPTH) in result.error.message


async def test_an_answer_that_breaks_the_output_schema_is_output_invalid():
    with PluginServer(lambda path, body: (200, {}, b'{"text": 42}')) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "output_invalid"
    assert result.error.details["errors"][0]["pointer"] == "/text"


async def test_a_plugin_500_is_not_repeated_unless_the_card_is_idempotent():
    with PluginServer(lambda path, body: (500, {}, b"boom after charging the card")) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "unavailable"
    assert len(plugin.requests) == 1 == result.attempts  # the work may have been done: once only
    with PluginServer(lambda path, body: (503, {}, b"down for maintenance")) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"], idempotent=True)
    assert result.error.code == "unavailable"
    max_retries = small_snapshot().constraints_for("b").max_retries
    assert len(plugin.requests) == max_retries + 1 == result.attempts


@pytest.mark.parametrize("status", [408, 429])
async def test_a_plugin_that_says_it_did_not_take_the_request_is_retried(status):
    with PluginServer(lambda path, body: (status, {}, b"not now")) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert result.error.code == "unavailable"
    assert len(plugin.requests) == small_snapshot().constraints_for("b").max_retries + 1


class DroppingServer:
    """Reads each request, counts it and closes the connection without answering."""

    def __init__(self) -> None:
        self.requests = 0
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                self.requests += 1

    def __enter__(self) -> DroppingServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


async def test_a_dropped_connection_after_sending_is_not_repeated_unless_idempotent():
    with DroppingServer() as plugin:
        url = f"http://127.0.0.1:{plugin.port}/run"
        result = await call_plugin(url, [f"127.0.0.1:{plugin.port}"])
        assert result.error.code == "unavailable"
        assert result.error.details["sent"] is True
        assert plugin.requests == 1 == result.attempts
        again = await call_plugin(url, [f"127.0.0.1:{plugin.port}"], idempotent=True)
        assert again.attempts == small_snapshot().constraints_for("b").max_retries + 1
        assert plugin.requests == 1 + again.attempts


async def test_a_refused_connection_never_sent_anything_so_it_is_retried():
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens there: connection refused
    result = await call_plugin(f"http://127.0.0.1:{port}/run", [f"127.0.0.1:{port}"])
    assert result.error.code == "unavailable"
    assert result.error.details["sent"] is False
    assert result.attempts == small_snapshot().constraints_for("b").max_retries + 1


def test_plugin_urls_are_checked_before_registration():
    allowed = parse_allowed_hosts(["plugins.example.com", "10.0.0.5:9000"])
    assert check_plugin_url("https://plugins.example.com/run", allowed) == []
    assert check_plugin_url("http://10.0.0.5:9000/x", allowed) == []
    assert check_plugin_url("http://10.0.0.5:9001/x", allowed)
    assert "user name or password" in check_plugin_url("https://me:pw@plugins.example.com/", allowed)[0]
    assert "http:// or https://" in check_plugin_url("file:///etc/passwd", allowed)[0]
    assert check_plugin_url("https://PLUGINS.example.com./run", allowed) == []
    assert check_plugin_url(None, allowed) == ["a URL is required"]


@pytest.mark.parametrize("entry", ["https://example.com", "*.example.com", "user@host", ":80"])
def test_malformed_allowed_host_entries_are_refused(entry):
    with pytest.raises(ValueError, match=r"not a host|no host|host or host:port"):
        parse_allowed_hosts([entry])


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000\\@evil.example/run",  # backslash: hosts differ between URL parsers
        "http://evil.example#@127.0.0.1:9000/run",
        "http://127.0.0.1:9000@evil.example/run",
        "http://evil.example/run?next=http://127.0.0.1:9000/",
    ],
)
def test_urls_that_parsers_read_differently_are_refused(url):
    assert check_plugin_url(url, parse_allowed_hosts(["127.0.0.1:9000"]))


async def test_plain_http_is_sent_to_the_address_that_was_checked():
    executor = HttpExecutor(["localhost"], resolver=resolving_to("127.0.0.1"))
    target = await executor.target("http://localhost:8080/run?q=1#fragment")
    assert (target.url, target.host_header, target.address) == (
        "http://127.0.0.1:8080/run?q=1",
        "localhost:8080",
        "127.0.0.1",
    )


@pytest.mark.parametrize("token", [b"NaN", b"Infinity", b"-Infinity"])
async def test_a_plugin_answering_nan_or_infinity_is_output_invalid_naming_the_field(token):
    raw = b'{"text": "ok", "extra": {"score": ' + token + b"}}"
    with PluginServer(lambda path, body: (200, {}, raw)) as plugin:
        result = await call_plugin(plugin.url(), [f"127.0.0.1:{plugin.port}"])
    assert not result.success
    assert result.error.code == "output_invalid"
    assert [e["pointer"] for e in result.error.details["errors"]] == ["/extra/score"]
    assert len(plugin.requests) == 1  # a bad answer is not retried

"""A real OTLP/HTTP trace receiver for tests, on 127.0.0.1 (stdlib ``http.server`` in a thread).

It accepts ``POST /v1/traces`` with a protobuf ``ExportTraceServiceRequest`` body (gzip or
deflate encoded or not), as an OpenTelemetry collector does, answers an empty
``ExportTraceServiceResponse``, and keeps every span it received, flattened to a
``ReceivedSpan``, with the request headers. Anything else is answered 404 / 415.
"""

from __future__ import annotations

import gzip
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

PROTOBUF = "application/x-protobuf"


def any_value(value: AnyValue) -> Any:
    """An OTLP ``AnyValue`` as a Python value (arrays as tuples)."""
    which = value.WhichOneof("value")
    if which == "array_value":
        return tuple(any_value(v) for v in value.array_value.values)
    if which == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if which is None:
        return None
    return getattr(value, which)


def attributes(pairs: Iterator[KeyValue] | Any) -> dict[str, Any]:
    return {pair.key: any_value(pair.value) for pair in pairs}


@dataclass(frozen=True)
class ReceivedSpan:
    """One received span: ids as hex (``parent_id`` '' for a root), times in ns, ``kind`` the
    OTLP enum name (``SPAN_KIND_INTERNAL``...), ``status`` ``(code name, message)``, ``links``
    the ``(trace id, span id)`` of each span it links to."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: tuple[str, str]
    events: tuple[str, ...]
    resource: dict[str, Any]
    links: tuple[tuple[str, str], ...] = ()

    def __getitem__(self, key: str) -> Any:
        return self.attributes[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.attributes.get(key, default)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (an exporter closing its keep-alive connection) is no error;
        anything else is printed, as the standard server does."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class OtlpReceiver:
    """``with OtlpReceiver() as receiver: ... receiver.url`` (the base endpoint, for
    ``OTEL_EXPORTER_OTLP_ENDPOINT``); ``receiver.spans`` and ``receiver.headers`` (one dict
    per export request) fill as exports arrive. ``port`` picks the port (0: a free one)."""

    def __init__(self, port: int = 0) -> None:
        self.spans: list[ReceivedSpan] = []
        self.headers: list[dict[str, str]] = []
        self.requests = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="otlp-receiver", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def wait_for(self, predicate: Any, timeout: float = 20) -> list[ReceivedSpan]:
        """The spans once ``predicate(spans)`` is true; AssertionError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                spans = list(self.spans)
            if predicate(spans):
                return spans
            time.sleep(0.05)
        raise AssertionError(f"the receiver got {len(self.spans)} spans in {self.requests} requests; not enough")

    def _take(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        received = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    received.append(
                        ReceivedSpan(
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_id=span.parent_span_id.hex(),
                            kind=Span.SpanKind.Name(span.kind),
                            start_ns=span.start_time_unix_nano,
                            end_ns=span.end_time_unix_nano,
                            attributes=attributes(span.attributes),
                            status=(Status.StatusCode.Name(span.status.code), span.status.message),
                            events=tuple(e.name for e in span.events),
                            resource=resource,
                            links=tuple((link.trace_id.hex(), link.span_id.hex()) for link in span.links),
                        )
                    )
        with self._lock:
            self.requests += 1
            self.headers.append(headers)
            self.spans.extend(received)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                if self.headers.get("Content-Type") != PROTOBUF:
                    self.send_error(415)
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                receiver._take(body, {k.lower(): v for k, v in self.headers.items()})
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", PROTOBUF)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        return Handler

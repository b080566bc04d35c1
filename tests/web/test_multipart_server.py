"""Uploads through a real server (daphne, as ``make run`` serves): an empty or malformed
``multipart/form-data`` body to every endpoint that takes one is refused by the application
in the API's error shape (400 ``{"detail", "errors"}``), never with the bare
"400 Bad Request" (no headers, no body) that Twisted answered before the application saw
the request (``teamclaw.asgi.leave_request_bodies_to_django``)."""

from __future__ import annotations

import http.client
import json

import pytest
from rest_framework.authtoken.models import Token

from tests.processes import Server, process_env

pytestmark = pytest.mark.django_db(transaction=True)

UPLOADS = ["/api/v1/knowledge/sources", "/api/v1/skills", "/api/v1/prompts/pm/persona/versions"]
MALFORMED = {
    "no boundary": ("multipart/form-data", b"garbage"),
    "not multipart": ("multipart/form-data; boundary=b", b"garbage"),
    "cut off": (
        "multipart/form-data; boundary=b",
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n',
    ),
    "empty": ("multipart/form-data; boundary=b", b""),
}
VALID = (
    b'--b\r\nContent-Disposition: form-data; name="file"; filename="notes.md"\r\nContent-Type: text/markdown\r\n\r\n'
    b"# Notes\n\nThe shop ships books.\r\n"
    b'--b\r\nContent-Disposition: form-data; name="role"\r\n\r\npm\r\n--b--\r\n'
)


def post(server: Server, path: str, content_type: str, body: bytes) -> tuple[int, bytes, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        headers = {"Authorization": f"Token {server.token}", "Content-Type": content_type}
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read(), response.getheader("Content-Type") or ""
    finally:
        connection.close()


def test_malformed_multipart_bodies_get_the_api_error_shape_from_a_real_server(builtin, staff_user, tmp_path):
    server = Server(process_env(), tmp_path / "server.log", Token.objects.create(user=staff_user).key)
    try:
        for path in UPLOADS:
            for what, (content_type, body) in MALFORMED.items():
                status, raw, answered_as = post(server, path, content_type, body)
                assert status == 400, (path, what, status, raw)
                assert answered_as.startswith("application/json"), (path, what, answered_as, raw)
                answer = json.loads(raw)
                assert set(answer) >= {"detail", "errors"} and answer["detail"], (path, what, answer)
        status, raw, _ = post(server, UPLOADS[0], "multipart/form-data; boundary=b", VALID)
        assert status == 201, raw
        assert json.loads(raw)["chunk_count"] >= 1
    finally:
        server.stop()

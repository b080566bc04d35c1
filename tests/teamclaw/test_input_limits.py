"""One bounded JSON parser and one YAML policy behind every entry point (issue 31), each
answering in its own protocol's shape: REST a 400 (413 past the size), MCP and A2A a JSON-RPC
parse error (-32700), a live socket a close 4400 (1009 past its frame size), the config import and skill upload a 400
naming the document. JSON nested 1,000 and 100,000 deep and bodies over the size limit are
sent through the real entry points (Django's test client, the ASGI application that mounts
/mcp and /a2a, a websocket through channels' communicator)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from interop import role_tokens
from teamclaw.strict_json import MAX_DEPTH, too_deep_message
from tests.live_helpers import close, open_socket
from tests.prompts.test_pages import edit
from web.sockets.consumers import CLOSE_BAD_REQUEST, CLOSE_MESSAGE_TOO_BIG, MAX_CLIENT_FRAME_BYTES

DEPTHS = [1_000, 100_000, MAX_DEPTH + 1]
"""Past Python's recursion limit (1,000), far past it, and just past the limit (valid JSON
Python parses happily): every entry point answers all three alike."""

TOO_DEEP = too_deep_message(MAX_DEPTH)
"""The one wording of a depth refusal, for JSON and YAML alike."""

SIZE_LIMIT = 20_000
"""``DATA_UPLOAD_MAX_MEMORY_SIZE`` in the tests that send an oversize body (bytes)."""


def nested(depth: int) -> str:
    """A JSON-RPC request nesting ``depth`` levels in all (its ``params`` hold the arrays)."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return '{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": ' + inner + "}}"


def oversize() -> str:
    """A well-formed JSON-RPC request larger than ``SIZE_LIMIT``."""
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "x" * 2 * SIZE_LIMIT}})


# -- REST -------------------------------------------------------------------------------------


def test_rest_answers_a_400_naming_the_depth_and_a_413_past_the_size(api, builtin, settings):
    for depth in DEPTHS:
        response = api.generic("POST", "/api/v1/tasks", nested(depth), content_type="application/json")
        assert response.status_code == 400, (depth, response.content[:200])
        assert response.json() == {"detail": f"JSON parse error - {TOO_DEEP}", "errors": {}}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = SIZE_LIMIT
    response = api.generic("POST", "/api/v1/tasks", oversize(), content_type="application/json")
    assert response.status_code == 413
    assert f"larger than {SIZE_LIMIT:,} bytes" in response.json()["detail"]


# -- MCP and A2A, through the ASGI application that mounts them ---------------------------------


async def _chunks(text: str) -> AsyncIterator[bytes]:
    """``text`` sent in pieces without a Content-Length (chunked)."""
    data = text.encode()
    for start in range(0, len(data), 8_192):
        yield data[start : start + 8_192]


def post_rpc(path: str, body: str, secret: str, *, chunked: bool = False) -> httpx.Response:
    """POST ``body`` to ``path`` of ``teamclaw.asgi.application`` as a JSON-RPC client does."""
    from teamclaw.asgi import application

    headers = {
        "Authorization": f"Bearer {secret}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "A2A-Version": "1.0",
    }

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            content: Any = _chunks(body) if chunked else body
            return await client.post(path, content=content, headers=headers)

    return asyncio.run(call())


def assert_parse_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text[:300]
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, body
    assert body["error"]["code"] == -32700, body
    assert words in body["error"]["message"], body


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "status"), [("/mcp", 400), ("/a2a", 200)])
def test_json_rpc_endpoints_answer_a_parse_error_for_too_deep_or_too_large(builtin, settings, path, status):
    """-32700 (JSON-RPC 2.0 §5.1, parse error) under the HTTP status each SDK gives a body
    that is not JSON (MCP 400, A2A 200); 413 past the size, with or without Content-Length."""
    secret = role_tokens.issue("main", "client").secret
    for depth in DEPTHS:
        assert_parse_error(post_rpc(path, nested(depth), secret), status, TOO_DEEP)
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = SIZE_LIMIT
    for chunked in (False, True):
        response = post_rpc(path, oversize(), secret, chunked=chunked)
        assert_parse_error(response, 413, f"the limit is {SIZE_LIMIT:,} bytes")


# -- live sockets ------------------------------------------------------------------------------


async def close_code_after(communicator: Any, text: str) -> int:
    """Send ``text`` and return the close code the socket answers with (state frames skipped)."""
    await communicator.send_to(text_data=text)
    while True:
        output = await communicator.receive_output(timeout=10)
        if output["type"] == "websocket.close":
            return int(output.get("code", 1000))


@pytest.mark.parametrize("depth", DEPTHS)
async def test_a_live_socket_closes_on_a_frame_too_deep_or_too_large(runtime_host, staff_user, depth):
    """4400 for a frame nested too deeply; a frame over ``MAX_CLIENT_FRAME_BYTES`` is refused
    before it is parsed (1009, the frame-size rule), however deep it is."""
    frame = nested(depth)
    expected = CLOSE_MESSAGE_TOO_BIG if len(frame.encode()) > MAX_CLIENT_FRAME_BYTES else CLOSE_BAD_REQUEST
    communicator, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    assert await close_code_after(communicator, frame) == expected
    await close(communicator)


# -- config import and skill upload --------------------------------------------------------------

CONFIG_IMPORT = "/api/v1/config/import?dry_run=true"
SKILL_UPLOAD = "/api/v1/skills"


def test_config_import_and_skill_upload_refuse_deep_documents_naming_the_document(api, builtin):
    for depth in DEPTHS:
        document = '{"format": "teamclaw-config/1", "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
        imported = api.post(CONFIG_IMPORT, data=document.encode(), content_type="application/json")
        assert imported.status_code == 400, imported.content[:200]
        assert imported.json()["errors"] == {"document": [TOO_DEEP]}
        as_yaml = api.post(CONFIG_IMPORT, data=document.encode(), content_type="application/yaml")
        assert as_yaml.status_code == 400
        assert TOO_DEEP in as_yaml.json()["errors"]["line 1"][0]
        skill = api.post(SKILL_UPLOAD, data=document.encode(), content_type="application/yaml")
        assert skill.status_code == 400, skill.content[:200]
        assert "skill-index.yaml" in skill.json()["detail"]
        assert skill.json()["errors"] == {"document": [f"{TOO_DEEP} (line 1)"]}


def test_config_import_and_skill_upload_refuse_oversize_documents(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MAX_CONFIG_BYTES": SIZE_LIMIT}
    imported = api.post(CONFIG_IMPORT, data=oversize().encode(), content_type="application/json")
    assert imported.status_code == 413
    assert f"the limit is {SIZE_LIMIT:,} bytes" in imported.json()["detail"]
    skill = api.post(SKILL_UPLOAD, data=("skill: '" + "x" * 300_000 + "'\n").encode(), content_type="application/yaml")
    assert skill.status_code == 400
    assert "skill-index.yaml" in skill.json()["detail"]
    assert "the limit is 262,144 bytes" in skill.json()["errors"]["document"][0]


# -- one YAML policy -------------------------------------------------------------------------------


def yaml_errors(api, url: str, text: str) -> dict[str, list[str]]:
    response = api.post(url, data=text.encode(), content_type="application/yaml")
    assert response.status_code == 400, response.content[:300]
    return response.json()["errors"]


def as_config_errors(skill_errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """A skill upload's ``{path: ["<message> (line N)"]}`` in the config import's words:
    ``{"line N": ["<path>: <message>"]}`` (no path for the whole document)."""
    out: dict[str, list[str]] = {}
    for path, reasons in skill_errors.items():
        for reason in reasons:
            found = re.fullmatch(r"(.*) \(line (\d+)\)", reason, flags=re.DOTALL)
            assert found, reason
            said = found.group(1) if path == "document" else f"{path}: {found.group(1)}"
            out.setdefault(f"line {found.group(2)}", []).append(said)
    return out


@pytest.mark.parametrize(
    "text",
    [
        "a: &base [1, 2]\nb: *base\n",
        "a: [1, 2]\nb: *nowhere\n",
        "format: !!python/object:os.system {}\n",
        "format: !!python/object/apply:os.system ['true']\n",
        "format: !secret x\n",
        "a: 1\nb: {<<: {c: 2}}\n",
    ],
)
def test_the_skill_loader_and_the_config_import_refuse_yaml_alike(api, builtin, text):
    """The same document, the same reasons on the same lines from both."""
    config = yaml_errors(api, CONFIG_IMPORT, text)
    skill = yaml_errors(api, SKILL_UPLOAD, text)
    assert {k: sorted(v) for k, v in config.items()} == {k: sorted(v) for k, v in as_config_errors(skill).items()}


def test_a_python_object_tag_is_refused_by_both(api, builtin):
    text = "format: !!python/object:builtins.dict {}\n"
    refused = "format: the tag !!python/object:builtins.dict is not accepted (only plain YAML values)"
    assert yaml_errors(api, CONFIG_IMPORT, text) == {"line 1": [refused]}
    assert as_config_errors(yaml_errors(api, SKILL_UPLOAD, text)) == {"line 1": [refused]}


def test_an_alias_is_refused_by_both_with_the_same_message(api, builtin):
    text = "format: teamclaw-config/1\nshared: &shared {a: 1}\nagain: *shared\n"
    config = yaml_errors(api, CONFIG_IMPORT, text)
    skill = yaml_errors(api, SKILL_UPLOAD, text)
    alias = "aliases (*shared) are not accepted; write the value out in full"
    assert config == {"line 2": ["anchors (&shared) are not accepted"], "line 3": [alias]}
    assert skill == {"document": ["anchors (&shared) are not accepted (line 2)", f"{alias} (line 3)"]}


# -- page forms that read JSON ----------------------------------------------------------------------


@pytest.mark.parametrize("depth", DEPTHS)
def test_the_prompt_editor_names_a_too_deep_variables_field(page_client, builtin, depth):
    response = edit(page_client, "Keep this text", variables="[" * depth + "]" * depth)
    assert response.status_code == 400
    assert TOO_DEEP in response.content.decode()

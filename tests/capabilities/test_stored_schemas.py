"""One check for every JSON Schema the product stores (issue 31): a ``$ref`` cycle that reads
no input is refused at save naming the path of the cycle, a ``$ref`` outside the schema is
refused, recursive schemas that describe a tree stay accepted. Through the real API: plugin
cards (``POST /api/v1/capabilities``), skills' ``llmConfig.functions[].parameters``
(``POST /api/v1/skills``) and the tools an MCP tool source lists (``POST /api/v1/mcp-sources``,
a real stdio server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from capabilities.models import CapabilityCard, Skill
from tests.factories import PLUGIN
from tests.skills.support import skill_yaml, upload

PAIR = {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
"""Two ``$defs`` that only refer to each other: no value is ever checked there."""
TREE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    "required": ["name"],
}
"""A tree node whose ``children`` items are nodes: recursive, but each step reads one level deeper."""


@pytest.fixture
def plugin_hosts(settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}


def register(api, input_schema: dict):
    return api.post("/api/v1/capabilities", {**PLUGIN, "input_schema": input_schema}, format="json")


@pytest.mark.parametrize(
    ("schema", "where", "cycle"),
    [
        (
            {"type": "object", "properties": {"q": {"$ref": "#/$defs/a"}}, "$defs": PAIR},
            "/$defs/b/$ref",
            "#/$defs/a -> #/$defs/b -> #/$defs/a",
        ),
        (
            {
                "type": "object",
                "properties": {"q": {"$ref": "#first"}},
                "$defs": {"a": {"$anchor": "first", "$ref": "#second"}, "b": {"$anchor": "second", "$ref": "#first"}},
            },
            "/$defs/b/$ref",
            "#/$defs/a -> #/$defs/b -> #/$defs/a",
        ),
    ],
    ids=["pointers", "anchors"],
)
def test_a_card_whose_refs_only_cycle_is_refused_naming_the_cycle(api, builtin, plugin_hosts, schema, where, cycle):
    response = register(api, schema)
    assert response.status_code == 400, response.content
    (reason,) = response.json()["errors"]["input_schema"]
    assert reason.startswith(f"{where}: ") and reason.endswith(f"({cycle})"), reason
    assert not CapabilityCard.objects.filter(capability_id=PLUGIN["id"]).exists()


def test_a_card_ref_that_resolves_to_nothing_is_refused_and_a_tree_is_accepted(api, builtin, plugin_hosts):
    dangling = register(api, {"type": "object", "properties": {"q": {"$ref": "#/$defs/missing"}}})
    assert dangling.status_code == 400, dangling.content
    assert response_reasons(dangling, "input_schema") == [
        "/properties/q/$ref: '#/$defs/missing' refers to nothing inside the schema"
    ]
    tree = register(api, {"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "$defs": {"node": TREE}})
    assert tree.status_code == 201, tree.content


def test_a_card_whose_embedded_resources_share_an_id_is_refused(api, builtin, plugin_hosts):
    shared = {"$id": "https://schemas.example.com/q.json", "type": "string"}
    schema = {"type": "object", "properties": {"a": shared, "b": {**shared, "minLength": 2}}}
    response = register(api, schema)
    assert response.status_code == 400, response.content
    assert response_reasons(response, "input_schema") == [
        "/properties/b/$id: 'https://schemas.example.com/q.json' names the same resource as the $id of /properties/a"
    ]


def response_reasons(response, field: str) -> list[str]:
    return response.json()["errors"][field]


def skill_with_function(skill_id: str, parameters: dict) -> str:
    function = f"    functions:\n      - name: lookup\n        parameters: {json.dumps(parameters)}\n"
    return skill_yaml(skill_id, "ping") + "  llmConfig:\n" + function


PARAMETERS = "skill.llmConfig.functions[0].parameters"


@pytest.mark.parametrize(
    "ref",
    [
        "https://schemas.example.com/q.json",
        "http://schemas.example.com/q.json#/q",
        "file:///etc/passwd",
        "urn:example:q",
        "common.json",
        "../schemas/q.json#/q",
    ],
)
def test_a_skill_function_parameter_ref_outside_the_schema_is_refused(api, builtin, ref):
    response = upload(api, skill_with_function("refs", {"type": "object", "properties": {"q": {"$ref": ref}}}))
    assert response.status_code == 400, response.content
    (reason,) = response_reasons(response, PARAMETERS)
    assert "/properties/q/$ref: only references inside the schema" in reason and repr(ref) in reason
    assert not Skill.objects.filter(skill_id="refs").exists()


def test_a_skill_function_parameter_cycle_is_refused_and_a_tree_is_accepted(api, builtin):
    looping = {"type": "object", "properties": {"q": {"$ref": "#/$defs/a"}}, "$defs": PAIR}
    response = upload(api, skill_with_function("loops", looping))
    assert response.status_code == 400, response.content
    (reason,) = response_reasons(response, PARAMETERS)
    assert "(#/$defs/a -> #/$defs/b -> #/$defs/a)" in reason
    tree = {"type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "$defs": {"node": TREE}}
    assert upload(api, skill_with_function("loops", tree)).status_code == 201


SERVER = Path(__file__).parent.parent / "interop" / "mcp_ref_server.py"


def test_an_mcp_tool_whose_input_schema_refers_outside_or_cycles_is_left_out_with_a_note(
    api, builtin, settings, tmp_path
):
    command = tmp_path / "refs-mcp"
    command.write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER}\n")
    command.chmod(0o755)
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MCP_STDIO_ALLOWLIST": [str(command)]}
    response = api.post("/api/v1/mcp-sources", {"name": "refs", "command": "refs-mcp", "args": []}, format="json")
    assert response.status_code == 201, response.content
    source = response.json()
    assert source["state"] == "connected", source
    assert [tool["name"] for tool in source["tools"]] == ["lookup"]
    (remote,) = [note for note in source["notes"] if "'remote'" in note]
    assert "'https://schemas.example.com/q.json'" in remote and "only references inside the schema" in remote
    (looping,) = [note for note in source["notes"] if "'looping'" in note]
    assert "#/$defs/a -> #/$defs/b -> #/$defs/a" in looping

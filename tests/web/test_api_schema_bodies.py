"""Issue 31 item 4: request bodies the domain checks are documented field by field, from the
product's own rules and schemas, and the server agrees with the document on each sample below
(what the schema allows is taken, what it forbids is refused with a 400 naming the field)."""

from __future__ import annotations

import re

import pytest
import yaml
from drf_spectacular.generators import SchemaGenerator
from jsonschema import Draft7Validator

from capabilities.projects import working_directory_problem
from capabilities.published_schemas import load_schema
from teamclaw import api_docs
from teamclaw.api_docs import NO_NUL
from teamclaw.plain_text import hidden_character_problem


@pytest.fixture
def schema(db) -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def body_schema(schema: dict, path: str, method: str, media: str = "application/json") -> dict:
    """The request body's schema of one operation, its component resolved."""
    found = schema["paths"][path][method]["requestBody"]["content"][media]["schema"]
    reference = found.get("$ref", "")
    return schema["components"]["schemas"][reference.rsplit("/", 1)[1]] if reference else found


def validator(schema: dict, path: str, method: str, media: str = "application/json") -> Draft7Validator:
    """A validator of the body as the document describes it (``nullable`` read as null)."""
    return Draft7Validator(nullable_as_null(body_schema(schema, path, method, media)))


def nullable_as_null(value):
    if isinstance(value, list):
        return [nullable_as_null(item) for item in value]
    if not isinstance(value, dict):
        return value
    result = {key: nullable_as_null(item) for key, item in value.items() if key != "nullable"}
    if value.get("nullable"):
        return {"anyOf": [result, {"type": "null"}]}
    return result


def test_a_plugin_card_body_is_closed_and_names_what_it_needs(schema, api):
    card = body_schema(schema, "/api/v1/capabilities", "post")
    assert card["additionalProperties"] is False
    assert {"id", "name", "description", "category", "input_schema", "version", "owner_roles"} <= set(card["required"])
    check = validator(schema, "/api/v1/capabilities", "post")
    good = {
        "id": "summarise_notes",
        "name": "Summarise notes",
        "description": "Summarises meeting notes.",
        "category": "analysis",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "output_schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
        "version": "1.0.0",
        "owner_roles": ["pm"],
        "executor_config": {"url": "https://plugins.example.com/summarise"},
    }
    assert check.is_valid(good)
    for bad in ({**good, "colour": "red"}, {**good, "version": "1.0"}, {**good, "name": "a\u202eb"}):
        assert not check.is_valid(bad)
        answer = api.post("/api/v1/capabilities", bad, format="json")
        assert answer.status_code == 400, answer.content
        assert set(answer.json()["errors"]) & {"colour", "version", "name"}, answer.json()


def test_a_new_project_body_says_what_the_project_check_takes(schema, api):
    project = body_schema(schema, "/api/v1/projects", "post")
    assert project["additionalProperties"] is False
    assert set(project["required"]) == {"slug", "name"}
    check = validator(schema, "/api/v1/projects", "post")
    assert check.is_valid({"slug": "shop", "name": "Shop", "working_directory": "/srv/projects/shop"})
    for bad in (
        {"slug": "Shop!", "name": "Shop"},
        {"slug": "shop", "name": "   "},
        {"slug": "shop", "name": "Shop", "working_directory": "relative/path"},
        {"slug": "shop", "name": "Shop", "description": "a\x07b"},
    ):
        assert not check.is_valid(bad), bad
        answer = api.post("/api/v1/projects", bad, format="json")
        assert answer.status_code == 400 and answer.json()["errors"], (bad, answer.content)


@pytest.mark.parametrize(
    "path",
    ["", "/", "/.", "/./", "/srv", "/srv/", "//srv", "/srv/../x", "/srv/..", "/srv/...", "/./a", "a/b", "/a/./b", "."],
)
def test_the_working_directory_pattern_is_the_project_check(schema, path):
    pattern = body_schema(schema, "/api/v1/projects", "post")["properties"]["working_directory"]["pattern"]
    assert (re.search(pattern, path) is not None) == (working_directory_problem(path) is None), path


def test_plain_text_patterns_refuse_what_the_plain_text_check_refuses(schema):
    name = body_schema(schema, "/api/v1/projects", "post")["properties"]["name"]["pattern"]
    description = body_schema(schema, "/api/v1/projects", "post")["properties"]["description"]["pattern"]
    for text in ("Shop", "商店", "a\tb", "a\u202eb", "a\x00b", "\x1b[31m", "line\nline"):
        plain = hidden_character_problem(text) is None
        assert (re.search(description, text) is not None) == plain, text
        assert (re.search(name, text) is not None) == (plain and bool(text.strip())), text


def test_an_mcp_source_is_one_of_the_two_transports(schema, api):
    check = validator(schema, "/api/v1/mcp-sources", "post")
    assert check.is_valid({"name": "clock", "command": "mcp-server-time"})
    assert check.is_valid({"name": "docs", "url": "https://mcp.example.com/"})
    both = {"name": "clock", "command": "mcp-server-time", "url": "https://mcp.example.com/"}
    assert not check.is_valid(both)
    answer = api.post("/api/v1/mcp-sources", both, format="json")
    assert answer.status_code == 400 and "url" in answer.json()["errors"], answer.content


def test_workflow_and_skill_bodies_are_the_published_schemas(schema, api):
    workflow = body_schema(schema, "/api/v1/workflows", "post", "application/yaml")
    assert workflow["required"] == ["orchestration"] and workflow["additionalProperties"] is False
    check = validator(schema, "/api/v1/workflows", "post", "application/yaml")
    switch_without_cases = {"orchestration": {"id": "wf", "name": "W", "steps": [{"id": "a", "type": "switch"}]}}
    assert not check.is_valid(switch_without_cases)
    answer = api.post("/api/v1/workflows", yaml.safe_dump(switch_without_cases), content_type="application/yaml")
    assert answer.status_code == 400
    assert set(answer.json()["errors"]) == {"orchestration.steps[0].condition", "orchestration.steps[0].cases"}
    skill = body_schema(schema, "/api/v1/skills", "post", "application/yaml")
    assert skill["required"] == ["skill"] and "$ref" not in str(skill)
    assert Draft7Validator(nullable_as_null(skill)).is_valid({"skill": {"id": "x", "name": "X", "version": "1.0.0"}})


def test_the_dialect_keeps_the_published_rules():
    converted = api_docs.openapi_dialect(load_schema("skill-index"))
    text = str(converted)
    assert "$defs" not in text and "'const'" not in text and "'if'" not in text
    dependencies = converted["properties"]["skill"]["properties"]["dependencies"]["items"]
    assert "anyOf" in dependencies["allOf"][0]


def test_every_body_text_is_documented_without_nul(schema):
    card = body_schema(schema, "/api/v1/capabilities", "post")
    assert card["properties"]["executor_config"]["properties"]["url"]["pattern"] == NO_NUL
    project_note = body_schema(schema, "/api/v1/projects", "post")["properties"]["note"]
    assert project_note["pattern"] == NO_NUL


@pytest.mark.parametrize(
    ("url", "name", "params"),
    [
        ("/api/v1/confirmations", "task_id", {}),
        ("/api/v1/knowledge/search", "q", {}),
        ("/api/v1/tasks/{task_id}/compare", "with", {}),
    ],
)
def test_a_blank_query_text_the_server_refuses_is_documented_as_not_blank(schema, api, url, name, params):
    parameter = next(p for p in schema["paths"][url]["get"]["parameters"] if p["name"] == name)
    pattern = parameter["schema"]["pattern"]
    assert re.search(pattern, "  ") is None and re.search(pattern, "") is None
    assert re.search(pattern, "abc") is not None
    answer = api.get(url.replace("{task_id}", "t1"), {**params, name: "  "})
    assert answer.status_code in (400, 404), answer.content
    if answer.status_code == 400:
        assert name in answer.json()["errors"], answer.content


def test_format_json_on_a_yaml_body_is_refused_naming_format(api):
    answer = api.post(
        "/api/v1/config/import?format=json&dry_run=true",
        data=b"format: teamclaw-config/1\n",
        content_type="application/yaml",
    )
    assert answer.status_code == 400
    assert list(answer.json()["errors"]) == ["format"], answer.content
    plain = api.post(
        "/api/v1/config/import?format=json&dry_run=true",
        data=b'{"format": "teamclaw-config/1"}',
        content_type="text/plain",
    )
    assert plain.status_code == 200, plain.content


def test_a_declared_query_parameter_given_twice_is_refused_naming_it(api):
    """Only the last of a repeated key would be read (and the others never checked): an
    invalid ``format`` followed by a valid one is refused, not exported."""
    answer = api.get("/api/v1/config/export?format=nope&format=yaml")
    assert answer.status_code == 400, answer.content
    assert list(answer.json()["errors"]) == ["format"]
    assert api.get("/api/v1/config/export?format=yaml&utm_source=mail").status_code == 200


@pytest.mark.parametrize(
    ("field", "value"),
    [("capabilities", False), ("permissions", []), ("responsibilities", 0), ("copy_prompts_from", False)],
)
def test_a_new_role_field_of_the_wrong_type_is_refused_even_when_it_is_falsy(schema, api, field, value):
    """``false`` or ``0`` is no empty list: the document says which types each field takes,
    and the server refuses another one naming the field instead of reading it as "none"."""
    body = {"role": "scribe", "display_name": "Scribe", field: value}
    assert not validator(schema, "/api/v1/roles", "post").is_valid(body)
    answer = api.post("/api/v1/roles", body, format="json")
    assert answer.status_code == 400, answer.content
    assert list(answer.json()["errors"]) == [field], answer.content


def test_a_new_role_body_is_closed_and_names_what_it_needs(schema, api):
    role = body_schema(schema, "/api/v1/roles", "post")
    assert role["additionalProperties"] is False and set(role["required"]) == {"role", "display_name"}
    check = validator(schema, "/api/v1/roles", "post")
    good = {"role": "scribe", "display_name": "Scribe", "responsibilities": "Take notes\nShare them"}
    assert check.is_valid(good)
    assert api.post("/api/v1/roles", good, format="json").status_code == 201
    for bad in (
        {"role": "operator", "display_name": "Op"},
        {"role": "Scribe2", "display_name": "S", "permissions": {"x": 1}},
    ):
        assert not check.is_valid(bad)
        assert api.post("/api/v1/roles", bad, format="json").status_code == 400

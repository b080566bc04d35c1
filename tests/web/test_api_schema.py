"""The OpenAPI schema behind /api/v1/docs/ is generated without a warning or error: every
operation has its own id and every view says what it answers (drf-spectacular)."""

from __future__ import annotations

import yaml
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator


def test_the_schema_generates_without_warnings_and_validates(db, tmp_path):
    GENERATOR_STATS.reset()  # warnings of earlier generations in this process do not count
    target = tmp_path / "schema.yml"
    # --fail-on-warn raises SchemaGenerationError on any warning or error, --validate on an invalid document
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text(encoding="utf-8"))
    ids = [op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op]
    assert len(ids) == len(set(ids))
    assert "/api/v1/metrics/{capability_id}" in schema["paths"]
    assert {"tasks_list", "tasks_retrieve", "roles_list", "roles_retrieve"} <= set(ids)


def generated_schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                yield path, method, operation


def test_strict_bodies_refuse_unknown_keys_in_the_schema_and_every_operation_documents_its_errors(db):
    schema = generated_schema()
    components = schema["components"]["schemas"]
    error = components["Error"]
    assert set(error["required"]) == {"detail", "errors"}
    strict = 0
    for path, method, operation in operations(schema):
        for media in (operation.get("requestBody") or {}).get("content", {}).values():
            ref = media["schema"].get("$ref", "")
            if ref:
                component = components[ref.rsplit("/", 1)[1]]
                assert component.get("additionalProperties") is False, (path, method, ref)
                strict += 1
        responses = operation["responses"]
        codes = {"400"} | ({"401", "403"} if path != "/api/v1/auth/token" else set())
        if "{" in path:
            codes.add("404")
        if method != "get" and path != "/api/v1/auth/token":
            codes.add("409")
        assert codes <= set(responses), (path, method, sorted(responses))
        for code in codes:
            assert responses[code]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}
    assert strict > 30
    invoke = components["Invoke"]
    assert invoke["additionalProperties"] is False and "from_role" in invoke["properties"]


PATH_VALUES = {"role": "pm", "template_type": "system_prompt", "capability_id": "code_review", "name": "skill-index"}


def bad_values(parameter: dict) -> list[str]:
    schema = parameter.get("schema", {})
    if "enum" in schema:
        return ["", "no-such-value"]
    if schema.get("type") == "integer":
        return ["false", "1.5", "-1", *([str(schema["maximum"] + 1)] if "maximum" in schema else [])]
    if schema.get("type") == "boolean":
        return ["maybe"]
    return []


def test_every_typed_query_parameter_of_every_read_refuses_a_bad_value_naming_it(api, builtin):
    """Every GET operation's query parameters declared with an enum, as whole numbers or as
    booleans (in the generated document) refuse a value outside them with a 400 naming the
    parameter: ``?category=`` and ``?page_size=false`` are not silently ignored."""
    checked = []
    for path, method, operation in operations(generated_schema()):
        if method != "get":
            continue
        names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
        if not names <= set(PATH_VALUES):
            continue
        url = path
        for name in names:
            url = url.replace("{" + name + "}", PATH_VALUES[name])
        required = {p["name"]: "x" for p in operation.get("parameters", []) if p["in"] == "query" and p.get("required")}
        for parameter in operation.get("parameters", []):
            if parameter["in"] != "query":
                continue
            for value in bad_values(parameter):
                response = api.get(url, {**required, parameter["name"]: value})
                assert response.status_code == 400, (url, parameter["name"], value, response.content[:300])
                body = response.json()
                assert parameter["name"] in body["errors"], (url, parameter["name"], value, body)
                checked.append((url, parameter["name"]))
    assert ("/api/v1/capabilities", "category") in checked
    assert ("/api/v1/messages", "page_size") in checked
    assert len({url for url, _ in checked}) >= 10


def test_a_page_out_of_range_says_what_the_range_is(api, builtin):
    """``?page=0`` is a 400 naming ``page`` and the bound (not "between 1 and any"), and a
    page past the last is a 404 saying how many pages there are (not "Invalid page.")."""
    low = api.get("/api/v1/confirmations", {"page": "0"})
    assert low.status_code == 400
    assert low.json()["errors"]["page"] == ["must be a whole number >= 1"]
    past = api.get("/api/v1/confirmations", {"page": "999"})
    assert past.status_code == 404
    assert "page 999 is past the last page (1)" in past.json()["detail"], past.json()


def test_the_schema_promises_only_what_the_server_takes(db):
    """Issue 31: JSON-object bodies document JSON only, a body with required fields must be
    sent, version fields are >= 0, non-blank text has minLength 1, ``since`` is a date or a
    date-time and free-text path and query parameters hold no NUL."""
    schema = generated_schema()
    paths = schema["paths"]
    for path, method in [
        ("/api/v1/roles", "post"),
        ("/api/v1/capabilities", "post"),
        ("/api/v1/mcp-sources", "post"),
        ("/api/v1/permissions/invoke-matrix", "put"),
        ("/api/v1/permissions/tool-matrix/what-if", "post"),
        ("/api/v1/tasks/{task_id}/answers", "post"),
    ]:
        assert list(paths[path][method]["requestBody"]["content"]) == ["application/json"], (path, method)
    assert paths["/api/v1/knowledge/sources"]["post"]["requestBody"]["content"].keys() == {"multipart/form-data"}
    matrix_body = paths["/api/v1/permissions/invoke-matrix"]["put"]["requestBody"]
    assert matrix_body["required"] is True
    component = matrix_body["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    properties = schema["components"]["schemas"][component]["properties"]
    assert properties["version"]["minimum"] == 0
    assert properties["matrix"]["type"] == "object"
    tokens = paths["/api/v1/auth/role-tokens"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    token_fields = schema["components"]["schemas"][tokens["$ref"].rsplit("/", 1)[1]]["properties"]
    assert token_fields["name"]["minLength"] == 1
    since = next(p for p in paths["/api/v1/stats/tokens"]["get"]["parameters"] if p["name"] == "since")
    assert {option["format"] for option in since["schema"]["anyOf"]} == {"date", "date-time"}
    since_version = next(
        p for p in paths["/api/v1/config/changes"]["get"]["parameters"] if p["name"] == "since_version"
    )
    assert since_version["schema"]["minimum"] == 0
    q = next(p for p in paths["/api/v1/config/changes"]["get"]["parameters"] if p["name"] == "q")
    assert q["schema"]["pattern"] == "^[^\\x00]*$"

"""An integer too large for the product is refused: in YAML past ``2**63 - 1`` in magnitude,
decimal, hex and octal alike, naming its line; in JSON past 4,300 digits (Python's
int-conversion limit) as a number refusal. A 400 at every entry point that reads a document,
never a 500 (``capabilities.strict_yaml``, ``teamclaw.strict_json``)."""

from __future__ import annotations

import json

import pytest

from tests.skills.support import skill_yaml

TOO_LARGE = "the number is too large"
NUMBERS = ["9" * 5000, "0x" + "f" * 5000, "0o" + "7" * 30, "9223372036854775808"]


@pytest.mark.parametrize("number", NUMBERS)
def test_config_import_refuses_a_too_large_number_naming_its_line(api, page_client, builtin, number):
    text = f"format: teamclaw-config/1\nconfig_version: {number}\n"
    response = api.post("/api/v1/config/import?dry_run=true", data=text.encode(), content_type="application/yaml")
    assert response.status_code == 400, response.content[:300]
    assert TOO_LARGE in response.json()["errors"]["line 2"][0]
    page = page_client.post("/config/transfer/", {"text": text, "action": "preview"})
    assert page.status_code == 400
    assert TOO_LARGE in page.content.decode()


@pytest.mark.parametrize("number", NUMBERS)
def test_skill_upload_refuses_a_too_large_number_naming_its_line(api, page_client, builtin, number):
    as_version = skill_yaml("big", version=number)
    as_duration = skill_yaml("big", extra=f"alerting:\n  rules:\n    - name: slow\n      duration: {number}\n")
    for text in (as_version, as_duration):
        raw = api.post("/api/v1/skills", text.encode(), content_type="application/yaml")
        assert raw.status_code == 400, raw.content[:300]
        assert TOO_LARGE in json.dumps(raw.json()["errors"])
        wrapped = api.post("/api/v1/skills", {"yaml": text}, format="json")
        assert wrapped.status_code == 400, wrapped.content[:300]
        assert TOO_LARGE in json.dumps(wrapped.json()["errors"])
        page = page_client.post("/skills/_upload/", {"yaml": text})
        assert page.status_code == 400
        assert TOO_LARGE in page.content.decode()


@pytest.mark.parametrize("number", NUMBERS)
def test_a_workflow_with_a_too_large_number_is_a_400(api, builtin, number):
    response = api.post("/api/v1/workflows", {"yaml": f"id: x\nversion: {number}\n"}, format="json")
    assert response.status_code == 400, response.content[:300]
    assert TOO_LARGE in json.dumps(response.json())


def test_a_json_integer_too_large_is_a_400_saying_so(api, builtin):
    body = '{"format": "teamclaw-config/1", "config_version": ' + "9" * 5000 + "}"
    imported = api.post("/api/v1/config/import?dry_run=true", data=body.encode(), content_type="application/json")
    assert imported.status_code == 400, imported.content[:300]
    assert TOO_LARGE in json.dumps(imported.json())
    rest = api.post("/api/v1/workflows", data='{"yaml": ' + "9" * 5000 + "}", content_type="application/json")
    assert rest.status_code == 400
    assert TOO_LARGE in rest.json()["detail"]

"""Every seed 003 skill-index.yaml imports, or is refused naming the missing field and then
imports once it is added; YAML's implicit typing surprises are reported, not converted."""

from __future__ import annotations

import pytest

from capabilities.models import Skill
from capabilities.skill_index import SkillIndexError, capability_cards, read_skill_index
from tests.skills.support import SEED_COMPLETE, SEED_MISSING, add_fields, seed_text, upload


@pytest.mark.parametrize("name", SEED_COMPLETE)
def test_complete_seed_examples_import_as_discovered(api, builtin, name):
    response = upload(api, seed_text(name))
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "DISCOVERED"
    skill = Skill.objects.get(skill_id=body["skillId"])
    assert skill.status == "DISCOVERED"
    assert skill.source == seed_text(name)
    declared = [c["name"] for c in skill.document["skill"].get("capabilities", [])]
    listed = api.get(f"/api/v1/skills/{skill.skill_id}").json()["capabilities"]
    assert sorted(c["name"] for c in listed) == sorted(declared)


@pytest.mark.parametrize(("name", "missing"), sorted(SEED_MISSING.items()))
def test_incomplete_seed_examples_are_refused_naming_the_missing_field(api, builtin, name, missing):
    response = upload(api, seed_text(name))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert sorted(errors) == sorted(missing)
    assert all("required" in reason for path in missing for reason in errors[path])
    assert not Skill.objects.exists()


@pytest.mark.parametrize(("name", "missing"), sorted(SEED_MISSING.items()))
def test_incomplete_seed_examples_import_once_the_field_is_added(api, builtin, name, missing):
    fields = {path.split(".")[-1]: ("1.0.0" if path.endswith("version") else "Added name") for path in missing}
    response = upload(api, add_fields(seed_text(name), **fields))
    assert response.status_code == 201, response.content
    assert Skill.objects.get(skill_id=response.json()["skillId"]).status == "DISCOVERED"


def test_the_seed_shorthand_dependency_is_an_address(builtin):
    index = read_skill_index(add_fields(seed_text("weather-service"), name="Weather", version="1.0.0"))
    assert index.skill["dependencies"] == [
        {"skillId": "http-client", "capability": "default", "required": True, "config": {}}
    ]


def test_the_full_schema_template_is_refused_with_each_placeholder_named(builtin):
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index(seed_text("full-schema-template"))
    errors = caught.value.as_errors()
    assert "semantic version" in errors["skill.version"][0]
    assert "SCENE, PROVIDER, DRIVER, INTERNAL" in errors["skill.skillForm"][0]
    assert "skill.capabilities[0].type" in errors
    assert "cap://" in errors["skill.capabilities[0].address"][0]
    assert "not a boolean" in errors["skill.dependencies[0].required"][0]
    assert all("(line " in reasons[0] for reasons in errors.values())


def test_provider_addresses_are_kept_as_declared_aliases(builtin):
    index = read_skill_index(add_fields(seed_text("llm-provider"), version="1.0.0"))
    cards = {c["name"]: c for c in capability_cards(index)}
    assert cards["chat"]["address"] == "cap://llm/default"
    assert cards["chat"]["executor"] == "provider"
    priorities = [i["priority"] for i in cards["chat"]["executor_config"]["implementations"]]
    assert priorities == [100, 90, 50]


def test_parameters_become_json_schemas(builtin):
    index = read_skill_index(seed_text("smart-assistant"))
    chat = next(c for c in capability_cards(index) if c["name"] == "chat")
    assert chat["input_schema"] == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "用户问题"},
            "context": {"type": "object", "description": "额外上下文"},
        },
        "required": ["query"],
    }


@pytest.mark.parametrize(
    ("line", "path", "words"),
    [
        ("  version: 1.10", "skill.version", ["1.10", "quote"]),
        ("  version: 2", "skill.version", ["number", "quote"]),
        ("  name: 2024-03-22", None, None),
    ],
)
def test_numbers_where_text_is_expected_are_reported_with_a_fix(builtin, line, path, words):
    text = f"skill:\n  id: typed\n{line}\n" + ("  name: typed\n" if "name" not in line else "  version: 1.0.0\n")
    if path is None:
        assert read_skill_index(text).skill["name"] == "2024-03-22"  # no date conversion
        return
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index(text)
    reason = caught.value.as_errors()[path][0]
    assert all(word in reason for word in words), reason


def test_yaml11_booleans_are_kept_as_text_and_reported(api, builtin):
    text = (
        "skill:\n  id: norway\n  name: NO\n  version: 1.0.0\n"
        "  dependencies:\n    - skillId: maps\n      capability: lookup\n      config: {country: NO, enabled: on}\n"
    )
    response = upload(api, text)
    assert response.status_code == 201, response.content
    warnings = {w["path"]: w["message"] for w in response.json()["warnings"]}
    assert "boolean false in YAML 1.1" in warnings["skill.name"]
    assert "boolean true in YAML 1.1" in warnings["skill.dependencies[0].config.enabled"]
    skill = Skill.objects.get(skill_id="norway")
    assert skill.name == "NO"
    assert skill.document["skill"]["dependencies"][0]["config"] == {"country": "NO", "enabled": "on"}


def test_a_yaml11_boolean_in_a_boolean_field_is_refused_with_the_fix(builtin):
    text = "skill:\n  id: b\n  name: b\n  version: 1.0.0\n"
    text += "  dependencies:\n    - {skillId: x, capability: y, required: NO}\n"
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index(text)
    reason = caught.value.as_errors()["skill.dependencies[0].required"][0]
    assert "YAML 1.1" in reason
    assert "false" in reason


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("a: &x [1, 2]\nb: *x\n", ["anchors", "aliases"]),
        ("skill: !!python/object/apply:os.system ['true']\n", ["!!python/object/apply:os.system"]),
        ("skill: !!python/name:os.system\n", ["not accepted"]),
        ("skill:\n  id: a\n  id: b\n", ["duplicate key 'id' (first at line 2)"]),
        ("skill:\n  <<: {id: a}\n", ["merge keys"]),
        ("---\nskill: {}\n---\nskill: {}\n", ["only one YAML document"]),
        ("skill: [" * 70 + "]" * 70, ["nests too deeply: more than 64 levels"]),
        ("skill:\n  id: [unclosed\n", ["syntax error"]),
        ("", ["empty"]),
        ("skill: \x07\n", ["not readable", "control"]),
        ("- just\n- a list\n", ["must be a mapping"]),
    ],
)
def test_hostile_or_broken_yaml_is_refused_with_the_reason(builtin, text, words):
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index(text)
    message = str(caught.value)
    assert any(word in message for word in words), message


def test_an_alias_bomb_is_refused_before_it_expands(builtin):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 30)]
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index("\n".join(lines))
    assert "aliases" in str(caught.value)


def test_oversized_and_binary_uploads_are_refused(api, builtin):
    big = upload(
        api, "skill:\n  id: big\n  name: big\n  version: 1.0.0\n  spec: {description: '" + "x" * 300_000 + "'}\n"
    )
    assert big.status_code == 400
    assert "limit" in big.json()["detail"] + str(big.json()["errors"])
    binary = api.post("/api/v1/skills", b"\x89PNG\r\n\x1a\n\x00\x00", content_type="application/yaml")
    assert binary.status_code == 400


def test_unknown_fields_are_refused_with_a_suggestion(api, builtin):
    response = upload(api, "skill:\n  id: typo\n  name: t\n  version: 1.0.0\n  capabilites: []\n")
    assert response.status_code == 400
    assert "did you mean 'capabilities'" in response.json()["errors"]["skill.capabilites"][0]


def test_semantic_problems_are_all_listed(builtin):
    text = (
        "skill:\n  id: sem\n  name: s\n  version: 1.0.0\n"
        "  capabilities:\n"
        "    - {name: a, type: EXPOSED}\n"
        "    - {name: a, type: ENTRY}\n"
        "    - {name: b, type: EXPOSED, address: 'cap://sem/b?x=1'}\n"
        "    - name: c\n      type: EXPOSED\n"
        "      inputParameters:\n        - {name: n, type: integer, defaultValue: x}\n"
        "  dependencies:\n    - {skillId: sem, capability: a}\n"
        "  implementations:\n    - {provider: P}\n"
        "alerting:\n  rules:\n    - {name: r, condition: 'success_rate < 150%', severity: warning}\n"
    )
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index(text)
    errors = caught.value.as_errors()
    assert "declared twice" in errors["skill.capabilities[1].name"][0]
    assert "query" in errors["skill.capabilities[2].address"][0]
    assert "declared type" in errors["skill.capabilities[3].inputParameters[0].defaultValue"][0]
    assert "itself" in errors["skill.dependencies[0]"][0]
    assert "PROVIDER" in errors["skill.implementations"][0]
    assert "fraction" in errors["alerting.rules[0].condition"][0]


def test_a_viewer_cannot_upload_and_anonymous_gets_401(client, viewer_user, builtin):
    from rest_framework.test import APIClient

    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    assert upload(viewer, seed_text("hr-assistant")).status_code == 403
    assert viewer.get("/api/v1/skills").status_code == 200
    assert upload(APIClient(), seed_text("hr-assistant")).status_code == 401
    assert not Skill.objects.exists()


def test_nul_characters_from_escapes_are_refused(builtin):
    with pytest.raises(SkillIndexError) as caught:
        read_skill_index('skill:\n  id: nul\n  name: "a\\0b"\n  version: 1.0.0\n')
    assert "NUL" in caught.value.as_errors()["skill.name"][0]


def test_wrong_media_types_and_unknown_ids_get_clear_4xx(api, builtin):
    wrong = api.post("/api/v1/skills", b"skill: {}", content_type="text/plain")
    assert wrong.status_code == 415
    assert "text/plain" in wrong.json()["detail"]
    as_json = api.post("/api/v1/skills", {"yaml": seed_text("hr-assistant")}, format="json")
    assert as_json.status_code == 201
    missing = api.get("/api/v1/skills/nope")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "there is no skill 'nope'"
    assert api.post("/api/v1/skills/nope/install", {}, format="json").status_code == 404
    assert api.get("/api/v1/workflows/nope").json()["detail"] == "there is no workflow 'nope'"

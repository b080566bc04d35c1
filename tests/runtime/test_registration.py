"""The registry validates a card before it joins the index (PRD §4.2 注册流程), listing every error."""

from __future__ import annotations

import copy

from teamclaw.runtime.schemas import validate_card

CARD = {
    "id": "invoice_parse",
    "name": "Invoice parse",
    "description": "Parse an invoice",
    "category": "analysis",
    "version": "1.2.0",
    "owner_roles": ["coderB"],
    "required_tools": ["file_read"],
    "timeout": 30,
    "tags": ["finance"],
    "input_schema": {"type": "object", "properties": {"pdf": {"type": "string"}}, "required": ["pdf"]},
    "output_schema": {
        "type": "object",
        "properties": {"total": {"type": "number", "minimum": 0}},
        "required": ["total"],
    },
}


def test_a_complete_card_is_valid():
    assert validate_card(CARD, {"coderB"}) == {}


def test_every_problem_is_reported_at_once():
    card = copy.deepcopy(CARD)
    del card["name"]
    card["version"] = "1.2"
    card["category"] = "magic"
    card["owner_roles"] = ["ghost"]
    card["required_tools"] = ["teleport"]
    card["timeout"] = 0
    card["output_schema"]["properties"]["total"]["mininum"] = 0
    card["input_schema"]["required"] = ["pdf", "password"]
    errors = validate_card(card, {"coderB"})
    assert set(errors) == {
        "name",
        "version",
        "category",
        "owner_roles",
        "required_tools",
        "timeout",
        "input_schema",
        "output_schema",
    }
    assert any("mininum" in reason for reason in errors["output_schema"])
    assert any("'password' is required but no property defines it" in r for r in errors["input_schema"])


def test_schemas_must_pass_the_2020_12_meta_schema_and_declare_properties():
    card = copy.deepcopy(CARD)
    card["input_schema"] = {"type": "object", "properties": {"pdf": {"type": "strng"}}, "required": ["pdf"]}
    card["output_schema"] = {"type": "object"}
    errors = validate_card(card, {"coderB"})
    assert any("strng" in r or "is not valid" in r for r in errors["input_schema"])
    assert any("declare its properties" in r for r in errors["output_schema"])


def test_nested_unknown_keywords_are_found_with_their_path():
    card = copy.deepcopy(CARD)
    card["input_schema"]["properties"]["items"] = {"type": "array", "items": {"type": "string", "maxLenght": 3}}
    errors = validate_card(card, {"coderB"})
    assert errors["input_schema"] == ["/properties/items/items/maxLenght: unknown JSON Schema keyword 'maxLenght'"]

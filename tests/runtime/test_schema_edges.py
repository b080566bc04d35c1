"""Card schemas at the edges (issue 17): formats the server cannot check, ``$ref`` loops
that read no input."""

from __future__ import annotations

import jsonschema_rs
import pytest

from teamclaw.runtime.schemas import CHECKED_FORMATS, validate_card


def card(schema: dict) -> dict:
    return {
        "id": "sample", "name": "Sample", "description": "d", "category": "analysis", "version": "1.0.0",
        "owner_roles": ["dba"], "input_schema": schema,
        "output_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
    }  # fmt: skip


def test_the_checked_formats_are_exactly_what_jsonschema_rs_checks():
    for fmt in CHECKED_FORMATS:
        validator = jsonschema_rs.Draft202012Validator(
            {"format": fmt}, validate_formats=True, ignore_unknown_formats=False
        )
        assert not validator.is_valid("\x00 not [valid"), fmt
    for fmt in ("phone", "int32", "binary", "byte", "password", "url"):
        with pytest.raises(Exception, match="Unknown format"):
            jsonschema_rs.Draft202012Validator({"format": fmt}, validate_formats=True, ignore_unknown_formats=False)


@pytest.mark.parametrize("fmt", CHECKED_FORMATS)
def test_a_checked_format_is_accepted(fmt):
    schema = {"type": "object", "properties": {"a": {"type": "string", "format": fmt}}}
    assert validate_card(card(schema)) == {}


def test_an_unchecked_format_is_refused_naming_its_path_and_the_checked_formats():
    schema = {
        "type": "object",
        "properties": {"phones": {"type": "array", "items": {"type": "string", "format": "phone"}}},
    }
    (reason,) = validate_card(card(schema))["input_schema"]
    assert reason.startswith("/properties/phones/items/format: format 'phone' is not checked")
    assert "date-time" in reason and "uuid" in reason


def object_with(**properties) -> dict:
    return {"type": "object", "properties": properties}


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({**object_with(a={"type": "string"}), "$ref": "#"}, "/$ref: '#' loops back to /"),
        (object_with(a={"$ref": "#/properties/a"}), "/properties/a/$ref: '#/properties/a' loops back to /properties/a"),
        (
            object_with(
                a={"type": "object", "properties": {"b": {"allOf": [{"$ref": "#/properties/a/properties/b"}]}}}
            ),
            "/properties/a/properties/b/allOf/0/$ref",
        ),
        (
            {
                **object_with(a={"$ref": "#/$defs/x"}),
                "$defs": {"x": {"$ref": "#/$defs/y"}, "y": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/x"}]}},
            },
            "/$defs/",
        ),
        (object_with(a={"not": {"$ref": "#/properties/a"}}), "/properties/a/not/$ref"),
    ],
)
def test_a_ref_loop_that_reads_no_input_is_refused_naming_its_path(schema, where):
    reasons = validate_card(card(schema)).get("input_schema", [])
    assert len(reasons) == 1, reasons
    assert where in reasons[0]
    assert "without reading any input" in reasons[0]


def test_a_ref_that_recurses_one_level_deeper_each_time_is_a_tree_and_fine():
    node = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
    }
    schema = {
        **object_with(root={"$ref": "#/$defs/node"}, again={"$ref": "#/properties/root"}),
        "$defs": {"node": node},
    }
    assert validate_card(card(schema)) == {}
    assert validate_card(card({**object_with(self={"$ref": "#"})})) == {}


def test_non_finite_numbers_are_found_at_their_pointers_however_the_value_is_built():
    from teamclaw.runtime import schemas
    from teamclaw.runtime.schemas import compile_schema, non_finite_errors, schema_errors

    class Ratio(float):
        pass

    value = {"a": [1, float("nan"), {"b": float("-inf")}], "c": (1.5, Ratio("inf")), "d": "nan", "e": None}
    assert [e["pointer"] for e in non_finite_errors(value)] == ["/a/1", "/a/2/b", "/c/1"]
    assert non_finite_errors({"table": "users", "rows": 3, "ok": True, "score": 0.5}) == []
    shared = [0.5]
    assert non_finite_errors({"x": shared, "y": shared}) == []  # shared, not a cycle
    looped: dict = {}
    looped["self"] = looped
    assert schema_errors(compile_schema({"type": "object"}), looped)[0]["keyword"] == "invalid"
    many = {"items": [{"n": i, "w": 0.25} for i in range(schemas.WALK_BUDGET)]}  # past the quick walk
    assert non_finite_errors(many) == []
    many["items"][-1]["w"] = float("nan")
    assert [e["pointer"] for e in non_finite_errors(many)] == [f"/items/{schemas.WALK_BUDGET - 1}/w"]

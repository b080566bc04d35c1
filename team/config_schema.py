"""The published JSON Schema (2020-12) of a config document (US-10 import/export).

``GET /api/v1/config/schema`` serves ``config_document_schema()``; an import is validated
against it before anything else, and every violation is reported with its JSON pointer.

Two scopes share one format (``format: teamclaw-config/1``):

- ``scope: global`` - roles, capability cards, the invoke and tool matrices (PRD §4.7),
  constraints and the active prompt templates (PRD §4.5), optionally with history;
- ``scope: project`` - a ``project`` block and that project's overrides only: role and
  card switches, matrix cells, constraint fields and its prompt layer; ``null`` resets a
  value to the global one.

Constraint bounds come from the model validators (``role_constraints.bounds``); tools,
modes, categories and template types from the runtime's and the prompts app's constants.
Executor settings (``executor_config``: URLs, keys) are never part of a document.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from capabilities.models import CAPABILITY_ID, ROLE_SLUG
from capabilities.role_constraints import FILE_SCOPE_MAX, bounds
from capabilities.snapshot import CONSTRAINT_FIELDS, DEFAULT_WHEN_NULL
from prompts.models import TEMPLATE_TYPES
from prompts.render import MAX_TEMPLATE_CHARS
from teamclaw.runtime.config import CATEGORIES, TOOLS, ToolMode

FORMAT = "teamclaw-config/1"
SEMVER = r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
EXECUTOR = r"^[a-z][a-z0-9_]{0,39}$"
PROJECT_SLUG = r"^[a-z0-9][a-z0-9_-]{0,63}$"


def _string(max_length: int, min_length: int = 0) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": max_length}
    if min_length:
        schema["minLength"] = min_length
    return schema


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def openapi_schema(schema: Any) -> Any:
    """``schema`` (JSON Schema, as the config document is checked with) in OpenAPI 3.0's
    dialect, which has no ``null`` type: ``anyOf: [X, {"type": "null"}]`` becomes X with
    ``nullable: true``, at any depth."""
    if isinstance(schema, list):
        return [openapi_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    options = schema.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (other,) = [option for option in options if option != {"type": "null"}]
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        return {**openapi_schema(other), **openapi_schema(rest), "nullable": True}
    return {key: openapi_schema(value) for key, value in schema.items()}


def _by_role(value: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "propertyNames": {"pattern": ROLE_SLUG}, "additionalProperties": value}


def constraint_fields_schema(project: bool) -> dict[str, Any]:
    """JSON Schema of one role's constraint values ``{field: value}`` (PRD §4.7), bounds from
    the model: in a project every field may be ``null`` (inherit); globally only the
    ``DEFAULT_WHEN_NULL`` fields (``memory_tokens``: the process default). The config
    document's and the constraints API's schema alike."""
    limits = bounds()
    fields: dict[str, Any] = {}
    for name in CONSTRAINT_FIELDS:
        if name == "file_scope":
            schema: dict[str, Any] = _string(FILE_SCOPE_MAX, 1)
        else:
            schema = {"type": "integer", **limits[name]}
        if name == "memory_tokens":
            schema["description"] = "estimated tokens of history a model-backed agent replays (seed 003 MemoryContext)"
        fields[name] = _nullable(schema) if project or name in DEFAULT_WHEN_NULL else schema
    return {"type": "object", "additionalProperties": False, "properties": fields}


def _prompt() -> dict[str, Any]:
    version: dict[str, Any] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["version", "content"],
        "properties": {
            "version": {"type": "string", "pattern": SEMVER},
            "content": _string(MAX_TEMPLATE_CHARS),
            "variables": {
                "type": "array",
                "maxItems": 50,
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": False,
                    "properties": {
                        "name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"},
                        "description": _string(500),
                        "required": {"type": "boolean"},
                        "default": {},
                    },
                },
            },
            "language": _string(16, 1),
        },
    }
    active = {**version, "properties": {**version["properties"], "history": {"type": "array", "items": version}}}
    return active


def _prompts() -> dict[str, Any]:
    return _by_role(
        {"type": "object", "propertyNames": {"enum": list(TEMPLATE_TYPES)}, "additionalProperties": _prompt()}
    )


def _global_document() -> dict[str, Any]:
    role = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "display_name": _string(100, 1),
            "emoji": _string(16),
            "description": _string(2000),
            "responsibilities": {"type": "array", "maxItems": 20, "items": _string(200, 1)},
            "enabled": {"type": "boolean"},
        },
    }
    card = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": _string(200, 1),
            "description": _string(20_000, 1),
            "category": {"enum": list(CATEGORIES)},
            "input_schema": {"type": "object"},
            "output_schema": {"type": "object"},
            "version": {"type": "string", "pattern": SEMVER},
            "owner_roles": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": ROLE_SLUG},
            },
            "required_tools": {"type": "array", "uniqueItems": True, "items": {"enum": list(TOOLS)}},
            "timeout": {"type": "integer", "minimum": 1, "maximum": 3600},
            "tags": {"type": "array", "maxItems": 20, "items": _string(50, 1)},
            "enabled": {"type": "boolean"},
            "executor": {"type": "string", "pattern": EXECUTOR},
            # Whether running the card twice does no harm: only then is a failure after its
            # request was sent retried (docs/architecture.md §6, Invoke); null: the executor's
            # default (no for http plugins, yes otherwise).
            "idempotent": {"type": ["boolean", "null"]},
        },
    }
    return {
        "type": "object",
        "properties": {
            "roles": _by_role(role),
            "capabilities": {
                "type": "object",
                "propertyNames": {"pattern": CAPABILITY_ID},
                "additionalProperties": card,
            },
            "invoke_matrix": _by_role(_by_role({"type": "boolean"})),
            "tool_matrix": _by_role(
                {
                    "type": "object",
                    "propertyNames": {"enum": list(TOOLS)},
                    "additionalProperties": {"enum": [m.value for m in ToolMode]},
                }
            ),
            "constraints": _by_role(constraint_fields_schema(project=False)),
            "prompts": _prompts(),
        },
    }


def _project_document() -> dict[str, Any]:
    switch = {
        "type": "object",
        "additionalProperties": False,
        "required": ["enabled"],
        "properties": {"enabled": {"type": ["boolean", "null"]}},
    }
    return {
        "type": "object",
        "required": ["project"],
        "properties": {
            "project": {
                "type": "object",
                "additionalProperties": False,
                "required": ["slug", "name"],
                "properties": {
                    "slug": {"type": "string", "pattern": PROJECT_SLUG},
                    "name": _string(200, 1),
                    "description": _string(5000),
                    "tech_stack": _string(500),
                    "working_directory": _string(1000),
                },
            },
            "roles": _by_role(switch),
            "capabilities": {
                "type": "object",
                "propertyNames": {"pattern": CAPABILITY_ID},
                "additionalProperties": switch,
            },
            "invoke_matrix": _by_role(_by_role({"type": ["boolean", "null"]})),
            "tool_matrix": _by_role(
                {
                    "type": "object",
                    "propertyNames": {"enum": list(TOOLS)},
                    "additionalProperties": {"enum": [*(m.value for m in ToolMode), None]},
                }
            ),
            "constraints": _by_role(constraint_fields_schema(project=True)),
            "prompts": _prompts(),
        },
    }


def config_document_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) every imported document must satisfy."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:teamclaw:config-document:1",
        "title": "TeamClaw configuration document",
        "description": (
            "Roles, capability cards, invoke and tool matrices, constraints and prompts (PRD §4.1, §4.5, §4.7), "
            "globally (scope: global) or one project's overrides (scope: project; null = reset to global). "
            "Executor settings and secrets are never included."
        ),
        "type": "object",
        "required": ["format"],
        "properties": {
            "format": {"const": FORMAT},
            "scope": {"enum": ["global", "project"], "default": "global"},
            "config_version": {"type": "integer", "minimum": 0, "description": "informational"},
            "exported_at": {"type": "string", "description": "informational"},
            "project": {},
            "roles": {},
            "capabilities": {},
            "invoke_matrix": {},
            "tool_matrix": {},
            "constraints": {},
            "prompts": {},
        },
        "additionalProperties": False,
        "if": {"properties": {"scope": {"const": "project"}}, "required": ["scope"]},
        "then": {"$ref": "#/$defs/project_document"},
        "else": {"$ref": "#/$defs/global_document"},
        "$defs": {"global_document": _global_document(), "project_document": _project_document()},
    }


def pointer(parts: Any) -> str:
    """RFC 6901 JSON pointer of a path (``/`` for the whole document)."""
    text = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    return text or "/"


def schema_errors(data: Any) -> dict[str, list[str]]:
    """Every violation of the published schema: ``{json pointer: [messages]}`` in document order."""
    validator = Draft202012Validator(config_document_schema())
    errors: dict[str, list[str]] = {}
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        message = error.message
        if len(message) > 300:
            message = message[:297] + "..."
        errors.setdefault(pointer(error.absolute_path), []).append(message)
    return errors

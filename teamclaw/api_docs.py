"""The API's OpenAPI document and its interactive page (``/api/v1/docs/``, Swagger UI from
drf-spectacular's sidecar): what the generated document says of every endpoint at once, the
strict bodies (``StrictSerializerSchema``) and the error answers
(``document_error_responses``, a postprocessing hook in ``SPECTACULAR_SETTINGS``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI, its init script served from ``?script`` and its styles from files, so the
    Content-Security-Policy needs no inline script or style; a refusal (401 without a login,
    403) is answered like every API error, ``{"detail", "errors": {}}`` in JSON, instead of a
    bare "401 Unauthorized" text page."""

    template_name = "api_docs/swagger_ui.html"

    def handle_exception(self, exc: Exception) -> Response:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class StrictSerializerSchema(OpenApiSerializerExtension):
    """Every ``StrictSerializer`` (``teamclaw.api_fields``) refuses keys it does not declare
    (400 naming each), so its body's schema says ``additionalProperties: false``: a client
    generated from the document, or a fuzzer, learns that a misspelt key is refused."""

    target_class = "teamclaw.api_fields.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        # drf-spectacular's documented way for an extension to map the fields as usual
        schema: dict[str, Any] = auto_schema._map_basic_serializer(self.target, direction)  # noqa: SLF001
        schema["additionalProperties"] = False
        for name, field in self.target.fields.items():
            mapped = schema.get("properties", {}).get(name, {})
            if _refuses_blank(field) and mapped.get("type") == "string" and "minLength" not in mapped:
                mapped["minLength"] = 1
            if getattr(field, "documented_required", False) and name not in schema.get("required", []):
                schema.setdefault("required", []).append(name)
        return schema


class DocumentedFieldSchema(OpenApiSerializerFieldExtension):
    """A ``DocumentedField`` is documented with the JSON Schema it was given (the rules of the
    domain check that validates it), its help text as the description."""

    target_class = "teamclaw.api_fields.DocumentedField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> dict[str, Any]:
        schema = dict(self.target.schema)
        if self.target.help_text and "description" not in schema:
            schema["description"] = str(self.target.help_text)
        return schema


def _refuses_blank(field: Any) -> bool:
    """Whether ``field`` is a text field that refuses ``""`` (DRF's ``allow_blank=False``)."""
    return isinstance(field, serializers.CharField) and not field.allow_blank and not field.read_only  # noqa: TID251


ERROR_COMPONENT = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The API's one error shape (teamclaw.api_errors): a sentence for a person and the "
    "fields at fault with their reasons ({} when no field is); some refusals add keys of their own "
    "(a 409's current_version and current, a skill refusal's errorCode...).",
    "properties": {
        "detail": {"type": "string"},
        "errors": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    },
    "required": ["detail", "errors"],
}
ERROR_RESPONSES = {
    "400": "Refused: a body, field or query parameter that is not valid (named in errors).",
    "401": "Not signed in: no or an unknown token or session.",
    "403": "Signed in, but not allowed to do this.",
    "404": "Nothing there: an unknown id, name or project in the path or the query, or a page past the last.",
    "409": "Conflict: the version you loaded is stale (the answer has the current one), or the "
    "object is in a state that refuses this (a task already ended, a skill others depend on).",
}
WRITES = frozenset({"post", "put", "patch", "delete"})


def document_error_responses(result: dict[str, Any], generator: Any, request: Any, public: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the ``Error`` component and, on every operation,
    the 4xx answers it can give in that shape (PRD-independent, docs/architecture.md §9): 400
    everywhere (bodies, query parameters, pagination), 401 and 403 wherever a login is needed,
    404 where the path names something, 409 on writes (stale versions, states that refuse the
    change). A 4xx an operation declares with a component of its own is kept."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            document_what_the_server_takes(result, operation)
            codes = ["400"]
            signed_in = operation.get("security") not in ([{}], [])
            if signed_in:
                codes += ["401", "403"]
            names = {p.get("name") for p in operation.get("parameters", [])}
            if "{" in path or names & {"project", "page"}:  # a page past the last is a 404 too
                codes.append("404")
            if method in WRITES and signed_in:
                codes.append("409")
            responses = operation.setdefault("responses", {})
            for code in codes:
                declared = responses.get(code, {}).get("content", {}).get("application/json", {}).get("schema", {})
                if "$ref" not in declared:  # none, or a bare "object": the one error shape
                    responses[code] = {
                        "description": ERROR_RESPONSES[code],
                        "content": {"application/json": {"schema": reference}},
                    }
    return result


NO_NUL = "^[^\\x00]*$"
"""Pattern of a path or query text: ``teamclaw.middleware`` refuses a URL holding ``%00`` (400)."""


def document_what_the_server_takes(result: dict[str, Any], operation: dict[str, Any]) -> None:
    """What every operation's inputs may hold, said once for the whole document (issue 31):
    a request body whose schema requires fields must be sent (``requestBody.required``; the
    server refuses a missing one with 400 naming the fields), and a free-text path or query
    parameter, or a text anywhere in a request body, holds no NUL character (``NO_NUL``: the
    JSON parser, ``teamclaw.api_parsers``, and the YAML readers refuse it, naming its path)."""
    body = operation.get("requestBody")
    if body and any(_resolved(result, media.get("schema", {})).get("required") for media in body["content"].values()):
        body["required"] = True
    for media in (body or {}).get("content", {}).values():
        _texts_without_nul(result, media.get("schema", {}), set())
    for parameter in operation.get("parameters", []):
        schema = parameter.get("schema", {})
        if parameter.get("in") in {"path", "query"} and schema.get("type") == "string":
            if not {"enum", "pattern", "format", "anyOf"} & set(schema):
                schema["pattern"] = NO_NUL


def _texts_without_nul(result: dict[str, Any], schema: Any, seen: set[str]) -> None:
    """Give every free text of ``schema`` (and of the components it names, once each) the
    ``NO_NUL`` pattern; a text with a pattern, an enum or a format of its own keeps it."""
    if isinstance(schema, list):
        for item in schema:
            _texts_without_nul(result, item, seen)
        return
    if not isinstance(schema, dict):
        return
    reference = schema.get("$ref", "")
    if reference:
        if reference not in seen:
            seen.add(reference)
            _texts_without_nul(result, _resolved(result, schema), seen)
        return
    if schema.get("type") == "string" and not {"enum", "pattern", "format"} & set(schema):
        if schema.get("maxLength") != 0:
            schema["pattern"] = NO_NUL
    for key, value in schema.items():
        if key != "enum" and isinstance(value, dict | list):
            _texts_without_nul(result, value, seen)


def _resolved(result: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``, or the component its ``$ref`` names (``#/components/schemas/<name>``)."""
    reference = schema.get("$ref", "")
    if reference.startswith("#/components/schemas/"):
        found: dict[str, Any] = result.get("components", {}).get("schemas", {}).get(reference.rsplit("/", 1)[1], {})
        return found
    return schema


def openapi_dialect(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """A JSON Schema (2020-12, as the product checks its documents with: the config document,
    skill-index.yaml, the orchestration YAML) in OpenAPI 3.0's dialect, so the API document
    can describe a body with the very schema the server checks it against: ``$ref``s to
    ``#/$defs/<name>`` inlined, ``const`` as a one-value ``enum``, a ``null`` type (or an
    ``anyOf`` option ``{"type": "null"}``) as ``nullable``, ``if``/``then``/``else`` as
    ``anyOf`` of the two branches, ``propertyNames`` listing names (an ``enum``) as those
    ``properties``; a ``propertyNames`` pattern (role slugs, capability ids: names that must
    exist) goes to the description. Nothing here is a rule the product does not check."""
    if isinstance(schema, list):
        return [openapi_dialect(item, defs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if defs is None:
        defs = schema.get("$defs", {})
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/$defs/"):
        rest = {key: value for key, value in schema.items() if key != "$ref"}
        return openapi_dialect({**defs[reference.rsplit("/", 1)[1]], **rest}, defs)
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key in {"$schema", "$id", "$defs", "if", "then", "else", "propertyNames"}:
            continue
        result[key] = openapi_dialect(value, defs)
    _openapi_keywords(schema, result, defs)
    return result


def _openapi_keywords(schema: dict[str, Any], result: dict[str, Any], defs: dict[str, Any]) -> None:
    """The keywords ``openapi_dialect`` rewrites (``result`` is the schema's other keywords)."""
    if "const" in result:
        result["enum"] = [result.pop("const")]
    kinds = result.get("type")
    if isinstance(kinds, list):
        others = [kind for kind in kinds if kind != "null"]
        result["type"] = others[0] if len(others) == 1 else None
        if result["type"] is None:
            del result["type"]
            result["anyOf"] = [{"type": kind} for kind in others]
        if "null" in kinds:
            result["nullable"] = True
    if None in result.get("enum", []):
        result["nullable"] = True
    options = result.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        others = [option for option in options if option != {"type": "null"}]
        del result["anyOf"]
        if len(others) == 1:
            result.update(others[0])
        else:
            result["anyOf"] = others
        result["nullable"] = True
    if "if" in schema:
        condition = openapi_dialect(schema["if"], defs)
        then, otherwise = (openapi_dialect(schema.get(key, {}), defs) for key in ("then", "else"))
        result.setdefault("allOf", []).append(
            {"anyOf": [{"allOf": [condition, then]}, {"allOf": [{"not": condition}, otherwise]}]}
        )
    names = schema.get("propertyNames")
    if isinstance(names, dict) and "enum" in names:
        value = result.pop("additionalProperties", {})
        result["properties"] = {str(name): value for name in names["enum"]}
        result["additionalProperties"] = False
    elif isinstance(names, dict) and "pattern" in names:
        note = f"Keys match {names['pattern']} and name things that must exist."
        result["description"] = f"{result['description']} {note}" if result.get("description") else note

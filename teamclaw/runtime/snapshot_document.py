"""A ``ConfigSnapshot`` as plain JSON and back, so a pinned configuration outlives its process.

PRD §4.8: a task runs on the configuration current when it started, for its whole life. A task
that resumes on another worker after a crash (``teamclaw.runtime.resume``) must therefore run on
*that* version, not on whatever is current when it is taken over; the worker that first builds
a snapshot stores this document (``runs.models.PinnedConfig``), and the one that resumes reads
it back with ``snapshot_from_document``.

The document is ``{"format": 1, "version", "project_id", "roles": [...], "cards": [...],
"invoke_allowed": [[caller, target], ...], "tool_modes": [[role, tool, mode], ...],
"prompts": {role: {type: {"base": spec, "project": spec | null}}}, "tool_specs": [...],
"project": {...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from teamclaw.runtime.config import (
    CapabilityType,
    CardSpec,
    ConfigSnapshot,
    Constraints,
    LayeredPrompt,
    PromptSpec,
    RoleSpec,
    ToolSpec,
)

FORMAT = 1
"""The document's format; a document of another format is not read (``DocumentFormatError``)."""

PROJECT_FIELDS = ("project_dir", "project_name", "project_description", "tech_stack")


class DocumentFormatError(ValueError):
    """A stored document this code cannot read (another format, or damaged)."""


def snapshot_to_document(snapshot: ConfigSnapshot) -> dict[str, Any]:
    """The JSON document of ``snapshot`` (module docstring); ``snapshot_from_document`` reads
    it back equal to ``snapshot``."""
    return {
        "format": FORMAT,
        "version": snapshot.version,
        "project_id": snapshot.project_id,
        "roles": [_fields(role) for role in snapshot.roles.values()],
        "cards": [_fields(card) for card in snapshot.cards.values()],
        "invoke_allowed": sorted([caller, target] for caller, target in snapshot.invoke_allowed),
        "tool_modes": sorted([role, tool, str(mode)] for (role, tool), mode in snapshot.tool_modes.items()),
        "prompts": {
            role: {
                kind: {"base": _prompt(layered.base), "project": _prompt(layered.project) if layered.project else None}
                for kind, layered in types.items()
            }
            for role, types in snapshot.prompts.items()
        },
        "tool_specs": [_fields(spec) for spec in snapshot.tool_specs.values()],
        "project": {name: getattr(snapshot, name) for name in PROJECT_FIELDS},
    }


def snapshot_from_document(document: Mapping[str, Any]) -> ConfigSnapshot:
    """The snapshot ``snapshot_to_document`` wrote. Raises DocumentFormatError for another
    format or a document whose parts do not fit the specs."""
    if not isinstance(document, Mapping) or document.get("format") != FORMAT:
        raise DocumentFormatError("not a format-1 configuration document")
    try:
        roles = [_role(role) for role in document["roles"]]
        cards = [_card(card) for card in document["cards"]]
        prompts = {
            role: {
                kind: LayeredPrompt(
                    _prompt_spec(layers["base"]), _prompt_spec(layers["project"]) if layers["project"] else None
                )
                for kind, layers in types.items()
            }
            for role, types in document["prompts"].items()
        }
        return ConfigSnapshot.build(
            version=int(document["version"]),
            project_id=document["project_id"],
            roles=roles,
            cards=cards,
            invoke_allowed=[(caller, target) for caller, target in document["invoke_allowed"]],
            tool_modes={(role, tool): mode for role, tool, mode in document["tool_modes"]},
            prompts=prompts,
            tool_specs=[ToolSpec(**spec) for spec in document.get("tool_specs", ())],
            **{name: document["project"][name] for name in PROJECT_FIELDS},
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise DocumentFormatError(f"damaged configuration document: {exc}") from None


def _fields(spec: Any) -> dict[str, Any]:
    """A spec dataclass's fields as plain JSON (nested specs included)."""
    return {f.name: _plain(getattr(spec, f.name)) for f in fields(spec)}


def _plain(value: Any) -> Any:
    """Specs to dicts, tuples to lists and mapping proxies to dicts: plain JSON."""
    if hasattr(value, "__dataclass_fields__"):
        return _fields(value)
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def _prompt(spec: PromptSpec) -> dict[str, Any]:
    return _fields(spec)


def _prompt_spec(document: Mapping[str, Any]) -> PromptSpec:
    return PromptSpec(**{**document, "variables": tuple(document.get("variables") or ())})


def _role(document: Mapping[str, Any]) -> RoleSpec:
    fields = dict(document)
    fields["constraints"] = Constraints(**fields["constraints"])
    fields["capabilities"] = tuple(fields.get("capabilities") or ())
    return RoleSpec(**fields)


def _card(document: Mapping[str, Any]) -> CardSpec:
    fields = dict(document)
    for name in ("owner_roles", "required_tools", "tags"):
        fields[name] = tuple(fields.get(name) or ())
    fields["capability_type"] = CapabilityType(fields["capability_type"])
    return CardSpec(**fields)

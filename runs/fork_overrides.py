"""What a fork may change (issue 13, point 4): checked against the saved configuration and
turned into the task's ``ConfigOverlay`` document (``teamclaw.runtime.overlay``).

``overrides`` as an operator sends it with ``POST /tasks/{id}/fork``::

    {"prompt_enhancement": "Answer strictly.",            # the task layer (PRD §4.5)
     "prompt_versions": {"pm/system_prompt": "1.1.0"},           # another version of a role's template
     "tool_modes": {"main/file_write": "deny"},           # a tool matrix cell (PRD §4.7)
     "invoke": {"pm/dba": true},                          # an invoke matrix cell (PRD §4.7)
     "executors": {"pm": {"executor": "openai", "model": "qwen2.5-7b"}},
     "reconsider_rejected": false}                        # ask again for rejected tool uses

Each applies to the fork alone; the saved configuration does not change. Who may widen the
matrices this way, and what a rejected tool use becomes in a fork, is ``runs.fork_policy``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from capabilities.executors import role_kinds
from capabilities.models import AgentRole, Project
from capabilities.tool_catalogue import matrix_tools
from prompts.models import PromptVersion
from teamclaw.errors import InvalidField
from teamclaw.runtime.config import ToolMode
from teamclaw.runtime.overlay import ConfigOverlay, OverlayError

FORK_OVERRIDES = (
    "prompt_enhancement",
    "prompt_versions",
    "tool_modes",
    "invoke",
    "executors",
    "reconsider_rejected",
)
"""The keys ``overrides`` may hold (module docstring)."""

MAX_CELLS = 200
"""Most entries one overrides section may hold."""


def overlay_document(overrides: Mapping[str, Any], project: Project | None) -> dict[str, Any]:
    """The ``ConfigOverlay`` document (``ConfigOverlay.as_dict``) for a fork's ``overrides``
    in ``project`` (None: global). ``prompt_enhancement`` is not part of it (it is the task's
    own prompt layer). Raises InvalidField naming ``overrides.<section>.<key>`` when a role,
    template version, tool, mode or executor does not exist."""
    roles = set(AgentRole.objects.values_list("role", flat=True))
    document = {
        "prompts": {
            key: _prompt(key, version, roles, project) for key, version in _cells(overrides, "prompt_versions")
        },
        "tool_modes": {key: _tool_mode(key, mode, roles, project) for key, mode in _cells(overrides, "tool_modes")},
        "invoke": {key: _invoke(key, allow, roles) for key, allow in _cells(overrides, "invoke")},
        "executors": {role: _executor(role, value, roles) for role, value in _cells(overrides, "executors")},
    }
    try:
        ConfigOverlay.from_dict(document)  # the runtime must be able to read it back
    except OverlayError as exc:
        raise InvalidField(exc.reason, f"overrides.{exc.field}") from None
    return document


def _cells(overrides: Mapping[str, Any], section: str) -> list[tuple[str, Any]]:
    value = overrides.get(section)
    if value is None:
        return []
    if not isinstance(value, dict):
        raise InvalidField("must be an object", f"overrides.{section}")
    if len(value) > MAX_CELLS:
        raise InvalidField(f"at most {MAX_CELLS} entries", f"overrides.{section}")
    return list(value.items())


def _pair(key: str, where: str, roles: set[str]) -> tuple[str, str]:
    left, sep, right = key.partition("/")
    if not sep or not right:
        raise InvalidField("the key must be '<role>/<name>'", where)
    if left not in roles:
        raise InvalidField(f"there is no role '{left}'", where)
    return left, right


def _prompt(key: str, version: Any, roles: set[str], project: Project | None) -> dict[str, Any]:
    where = f"overrides.prompt_versions.{key}"
    role, template_type = _pair(key, where, roles)
    if not isinstance(version, str) or not version:
        raise InvalidField("must be a version string such as 1.1.0", where)
    versions = PromptVersion.objects.select_related("template").filter(
        template__role__role=role, template__template_type=template_type, version=version
    )
    # the project's own template first (PRD §4.5: the project layer overrides the global one)
    chosen = versions.filter(template__project=project).first() if project is not None else None
    layer = "project"
    if chosen is None:
        chosen, layer = versions.filter(template__project__isnull=True).first(), "global"
    if chosen is None:
        raise InvalidField(f"{role} has no {template_type} prompt version {version}", where)
    return {
        "layer": layer,
        "version": chosen.version,
        "content": chosen.content,
        "variables": list(chosen.variables or ()),
        "language": chosen.language,
    }


def _tool_mode(key: str, mode: Any, roles: set[str], project: Project | None) -> str:
    where = f"overrides.tool_modes.{key}"
    _role, tool = _pair(key, where, roles)
    if tool not in matrix_tools(project):
        raise InvalidField(f"there is no tool '{tool}'", where)
    modes = [m.value for m in ToolMode]
    if mode not in modes:
        raise InvalidField(f"must be one of {', '.join(modes)}", where)
    return str(mode)


def _invoke(key: str, allow: Any, roles: set[str]) -> bool:
    where = f"overrides.invoke.{key}"
    _caller, target = _pair(key, where, roles)
    if target not in roles:
        raise InvalidField(f"there is no role '{target}'", where)
    if not isinstance(allow, bool):
        raise InvalidField("must be true (allowed) or false (denied)", where)
    return allow


def _executor(role: str, value: Any, roles: set[str]) -> dict[str, str]:
    where = f"overrides.executors.{role}"
    if role not in roles:
        raise InvalidField(f"there is no role '{role}'", where)
    if not isinstance(value, dict) or not value or not set(value) <= {"executor", "model"}:
        raise InvalidField('must be {"executor"?: kind, "model"?: name}', where)
    out: dict[str, str] = {}
    if "executor" in value:
        kinds = role_kinds()
        if value["executor"] not in kinds:
            raise InvalidField(f"must be one of {', '.join(kinds)}", f"{where}.executor")
        out["executor"] = value["executor"]
    if "model" in value:
        model = value["model"]
        if not isinstance(model, str) or not model.strip() or len(model) > 200:
            raise InvalidField("must be a model name of at most 200 characters", f"{where}.model")
        out["model"] = model.strip()
    return out

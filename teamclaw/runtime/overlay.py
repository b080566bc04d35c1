"""What one task changes in the configuration it pins: a fork's overrides (issue 13, point 4).

A fork re-runs a task from step N "optionally with a different configuration (a prompt version,
a matrix cell, an executor or model)". The task still pins the snapshot that is current when it
starts (PRD §4.8); a ``ConfigOverlay`` is then laid over that snapshot for this task alone, so
no other task, and no saved configuration, sees the change.

The overlay travels in the task's ``run_spec`` as plain JSON (``as_dict`` / ``from_dict``), so a
task that resumes after a crash runs on the same overlay again::

    {"prompts": {"pm/system_prompt": {"layer": "global", "version": "1.1.0", "content": "...",
                               "variables": [...], "language": "en"}},
     "tool_modes": {"main/file_write": "deny"},
     "invoke": {"pm/dba": true},
     "executors": {"pm": {"executor": "openai", "model": "qwen2.5-7b"}}}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from teamclaw.runtime.config import ConfigSnapshot, LayeredPrompt, PromptSpec, ToolMode

PROMPT_LAYERS = ("global", "project")
"""Which layer of a role's prompt (PRD §4.5) an overridden version replaces."""


class OverlayError(ValueError):
    """An overlay document that cannot be read; ``field`` names the offending key path."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PromptOverride:
    """One prompt version put in place of the active one, at ``layer`` (global or project)."""

    layer: str
    spec: PromptSpec


@dataclass(frozen=True, slots=True)
class ExecutorOverride:
    """A role's executor kind and/or model for this task (None keeps the configured one)."""

    executor: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigOverlay:
    """Per-task changes laid over a pinned ``ConfigSnapshot`` (module docstring).

    - ``prompts``: ``(role, template_type) -> PromptOverride``
    - ``tool_modes``: ``(role, tool) -> ToolMode`` (PRD §4.7 tool matrix cells)
    - ``invoke``: ``(caller_role, target_role) -> allowed`` (PRD §4.7 invoke matrix cells)
    - ``executors``: ``role -> ExecutorOverride``
    """

    prompts: Mapping[tuple[str, str], PromptOverride] = field(default_factory=dict)
    tool_modes: Mapping[tuple[str, str], ToolMode] = field(default_factory=dict)
    invoke: Mapping[tuple[str, str], bool] = field(default_factory=dict)
    executors: Mapping[str, ExecutorOverride] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.prompts or self.tool_modes or self.invoke or self.executors)

    def apply(self, snapshot: ConfigSnapshot) -> ConfigSnapshot:
        """``snapshot`` with these changes; the same ``version`` (the overlay is the task's,
        recorded in its run spec, not a configuration version). Roles or cells the snapshot
        does not know are applied as given: a fork may allow what the saved matrix denies."""
        if not self:
            return snapshot
        return replace(
            snapshot,
            prompts=self._prompts(snapshot),
            tool_modes=MappingProxyType({**snapshot.tool_modes, **self.tool_modes}),
            invoke_allowed=self._invoke_allowed(snapshot),
            roles=self._roles(snapshot),
        )

    def _prompts(self, snapshot: ConfigSnapshot) -> Mapping[str, Mapping[str, LayeredPrompt]]:
        prompts = {role: dict(types) for role, types in snapshot.prompts.items()}
        for (role, template_type), override in self.prompts.items():
            current = prompts.setdefault(role, {}).get(template_type)
            if override.layer == "project":
                base = current.base if current else override.spec
                prompts[role][template_type] = LayeredPrompt(base, override.spec)
            else:
                prompts[role][template_type] = LayeredPrompt(override.spec, current.project if current else None)
        return MappingProxyType({role: MappingProxyType(types) for role, types in prompts.items()})

    def _invoke_allowed(self, snapshot: ConfigSnapshot) -> frozenset[tuple[str, str]]:
        allowed = set(snapshot.invoke_allowed)
        for pair, allow in self.invoke.items():
            if allow:
                allowed.add(pair)
            else:
                allowed.discard(pair)
        return frozenset(allowed)

    def _roles(self, snapshot: ConfigSnapshot) -> Mapping[str, Any]:
        roles = dict(snapshot.roles)
        for role, override in self.executors.items():
            spec = roles.get(role)
            if spec is None:
                continue
            config = dict(spec.executor_config)
            if override.model:
                config["model"] = override.model
            roles[role] = replace(spec, executor=override.executor or spec.executor, executor_config=config)
        return MappingProxyType(roles)

    def as_dict(self) -> dict[str, Any]:
        """The JSON document of the module docstring."""
        return {
            "prompts": {
                f"{role}/{template_type}": {
                    "layer": o.layer,
                    "version": o.spec.version,
                    "content": o.spec.content,
                    "variables": [dict(v) for v in o.spec.variables],
                    "language": o.spec.language,
                }
                for (role, template_type), o in self.prompts.items()
            },
            "tool_modes": {f"{role}/{tool}": str(mode) for (role, tool), mode in self.tool_modes.items()},
            "invoke": {f"{caller}/{target}": allow for (caller, target), allow in self.invoke.items()},
            "executors": {
                role: {k: v for k, v in (("executor", o.executor), ("model", o.model)) if v}
                for role, o in self.executors.items()
            },
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any] | None) -> ConfigOverlay:
        """Read ``as_dict``'s document (None or {} is the empty overlay).

        Raises OverlayError naming the key path (``prompts.pm/system.layer``) of the first fault."""
        if document is None:
            document = {}
        if not isinstance(document, Mapping):
            raise OverlayError("config_overlay", "must be an object")
        unknown = sorted(set(document) - {"prompts", "tool_modes", "invoke", "executors"})
        if unknown:
            raise OverlayError(unknown[0], "not something an overlay can change")
        prompts: dict[tuple[str, str], PromptOverride] = {}
        for key, value in _section(document, "prompts").items():
            where = f"prompts.{key}"
            if not isinstance(value, Mapping) or value.get("layer") not in PROMPT_LAYERS:
                raise OverlayError(f"{where}.layer", f"must be one of {', '.join(PROMPT_LAYERS)}")
            role, template_type = _pair(key, where)
            spec = PromptSpec(
                template_type=template_type,
                version=_text(value.get("version"), f"{where}.version"),
                content=_text(value.get("content"), f"{where}.content", allow_empty=True),
                variables=tuple(value.get("variables") or ()),
                language=_text(value.get("language", "en"), f"{where}.language"),
            )
            prompts[(role, template_type)] = PromptOverride(str(value["layer"]), spec)
        tool_modes: dict[tuple[str, str], ToolMode] = {}
        for key, mode in _section(document, "tool_modes").items():
            if mode not in {m.value for m in ToolMode}:
                raise OverlayError(f"tool_modes.{key}", f"must be one of {', '.join(m.value for m in ToolMode)}")
            tool_modes[_pair(key, f"tool_modes.{key}")] = ToolMode(mode)
        invoke: dict[tuple[str, str], bool] = {}
        for key, allow in _section(document, "invoke").items():
            if not isinstance(allow, bool):
                raise OverlayError(f"invoke.{key}", "must be true (allowed) or false (denied)")
            invoke[_pair(key, f"invoke.{key}")] = allow
        executors: dict[str, ExecutorOverride] = {}
        for role, value in _section(document, "executors").items():
            if not isinstance(value, Mapping) or not set(value) <= {"executor", "model"} or not value:
                raise OverlayError(f"executors.{role}", 'must be {"executor"?: kind, "model"?: name}')
            executors[role] = ExecutorOverride(
                executor=_text(value["executor"], f"executors.{role}.executor") if "executor" in value else None,
                model=_text(value["model"], f"executors.{role}.model") if "model" in value else None,
            )
        return cls(
            prompts=MappingProxyType(prompts),
            tool_modes=MappingProxyType(tool_modes),
            invoke=MappingProxyType(invoke),
            executors=MappingProxyType(executors),
        )


def _section(document: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = document.get(name) or {}
    if not isinstance(value, Mapping):
        raise OverlayError(name, "must be an object")
    return value


def _pair(key: str, where: str) -> tuple[str, str]:
    left, sep, right = key.partition("/")
    if not sep or not left or not right:
        raise OverlayError(where, "the key must be '<role>/<name>'")
    return left, right


def _text(value: Any, where: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_empty) or len(value) > 100_000:
        raise OverlayError(where, "must be text")
    return value

"""The functions a model may call, and running them through the runtime (seed 003
``FunctionContext.toTools``; docs/architecture.md §8, ``openai``).

What a role's model is offered for one capability call:

- every capability of another (or its own) role that the role may invoke under the
  effective invoke matrix (PRD §4.7), with the target role and card enabled and the card
  not INTERNAL to another skill; the card's ``input_schema`` is the function's parameters.
  The capability being executed is not offered back to the same role (no self-recursion);
- the file tools the capability's card requires (``required_tools``), when the role's tool
  matrix cell is not ``deny`` and the server implements them (``confirm`` still waits for
  an operator, PRD §4.7 ⚠️);
- every external tool of the task's snapshot (MCP tool sources, issue 16: ``mcp:<source>/<tool>``)
  whose cell for the role is ``allow`` or ``confirm``, as ``mcp__<source>__<tool>`` with the
  server's ``inputSchema`` as parameters. One the role may not use is not offered; a model
  that calls it anyway is refused by the runtime (``tool_denied``, recorded) and told so.

Function names follow the OpenAI pattern ``^[a-zA-Z0-9_-]{1,64}$``: a capability owned by
one permitted role keeps its id; one offered by several roles becomes ``<id>__<role>``;
anything too long or colliding gets a short digest, so every name maps back to exactly one
``(capability_id, target_role)`` or tool.

Every call goes back through the runtime (``ExecutionCall.invoke`` / ``use_tool``): the
matrix, schemas, routing, recording and snapshots apply, and a denial is returned to the
model as the function's result. A call of a capability that was not offered (a model that
guesses names) is still sent to the runtime, which refuses and records it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.config import CapabilityType, ToolMode
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.strict_json import JsonRefused, loads

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall
    from teamclaw.runtime.executors.chat import ToolCallRequest

FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_TOOL_RESULT_CHARS = 16_000
"""Longest function result returned to the model (characters); longer ones are cut."""
MAX_ARGUMENTS_BYTES = 1_000_000
"""Largest function-call ``arguments`` read (bytes of JSON): the bound the API puts on ``params``."""

MAX_CALLS_PER_ROUND = 8
"""Function calls run per model answer; further ones are answered with an error."""
MAX_DESCRIPTION_CHARS = 1000

FILE_TOOL_PARAMETERS: dict[str, dict[str, Any]] = {
    "file_read": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "Path relative to the project directory"}},
        "required": ["path"],
    },
    "file_write": {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path relative to the project directory"},
            "content": {"type": "string"},
        },
        "required": ["path", "content"],
    },
}
"""Parameters of the file tools (``teamclaw.runtime.tools``), as function schemas."""


@dataclass(frozen=True, slots=True)
class FunctionTarget:
    """What one function name stands for: a capability on a role, or a tool."""

    name: str
    capability_id: str | None = None
    target_role: str | None = None
    tool: str | None = None


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()[:8]


def _plain(value: Any) -> Any:
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class FunctionTools:
    """The functions offered for one call, their OpenAI ``tools`` specs and their targets."""

    def __init__(self, call: ExecutionCall, *, leave_out: frozenset[str] = frozenset()) -> None:
        """``leave_out``: capability ids never offered, on any role (an expert of the review
        is not offered the review's own capability on another expert: issue 29 item 6)."""
        self.call = call
        self.leave_out = frozenset(leave_out)
        self.targets: dict[str, FunctionTarget] = {}
        self._specs: list[dict[str, Any]] = []
        self.malformed_seen = 0
        self.external: dict[str, str] = {}
        """Function name -> external tool (``mcp:<source>/<tool>``), offered or not."""
        self._collect()

    # -- offering ---------------------------------------------------------------
    def _name(self, base: str) -> str:
        name = re.sub(r"[^a-zA-Z0-9_-]", "_", base)[:64] or "f"
        if len(base) > 64 or name != base:
            name = f"{name[:55]}_{_digest(base)}"
        while name in self.targets:
            name = f"{name[:55]}_{_digest(name + base)}"
        return name

    def _offer(self, target: FunctionTarget, description: str, parameters: Any) -> None:
        self.targets[target.name] = target
        self._specs.append(
            {
                "type": "function",
                "function": {
                    "name": target.name,
                    "description": description[:MAX_DESCRIPTION_CHARS],
                    "parameters": _plain(parameters),
                },
            }
        )

    def _collect(self) -> None:
        call = self.call
        snapshot, me, card = call.snapshot, call.role, call.card
        for tool in card.required_tools:
            if tool in FILE_TOOL_PARAMETERS and tool in call.port.tools:
                if snapshot.tool_mode(me, tool) != ToolMode.DENY:
                    mode = snapshot.tool_mode(me, tool)
                    note = " An operator must approve each use." if mode == ToolMode.CONFIRM else ""
                    self._offer(
                        FunctionTarget(self._name(tool), tool=tool),
                        f"Tool {tool} inside the project directory (PRD §4.7).{note}",
                        FILE_TOOL_PARAMETERS[tool],
                    )
        for name in sorted(snapshot.tool_specs):
            tool_spec = snapshot.tool_specs[name]
            function = self._name(external_function_name(name))
            self.external[function] = name
            mode = snapshot.tool_mode(me, name)
            if mode == ToolMode.DENY:
                continue
            note = " An operator must approve each use." if mode == ToolMode.CONFIRM else ""
            self._offer(
                FunctionTarget(function, tool=name),
                f"{tool_spec.description} (tool {tool_spec.remote_name} of the MCP tool source "
                f"{tool_spec.source}, through TeamClaw, PRD §4.7).{note}",
                tool_spec.input_schema,
            )
        offered: list[tuple[str, str]] = []
        for capability_id in sorted(snapshot.cards):
            other = snapshot.cards[capability_id]
            if not other.enabled or capability_id in self.leave_out:
                continue
            if other.capability_type == CapabilityType.INTERNAL and other.skill_id != card.skill_id:
                continue
            for role in sorted(other.owner_roles):
                spec = snapshot.roles.get(role)
                if spec is None or not spec.enabled or not snapshot.can_invoke(me, role):
                    continue
                if capability_id == card.capability_id and role == me:
                    continue
                offered.append((capability_id, role))
        roles_per_capability: dict[str, int] = {}
        for capability_id, _ in offered:
            roles_per_capability[capability_id] = roles_per_capability.get(capability_id, 0) + 1
        for capability_id, role in offered:
            other = snapshot.cards[capability_id]
            base = capability_id if roles_per_capability[capability_id] == 1 else f"{capability_id}__{role}"
            spec = snapshot.roles[role]
            self._offer(
                FunctionTarget(self._name(base), capability_id=capability_id, target_role=role),
                f"{other.name}: {other.description} Runs on the {spec.display_name} ({role}); "
                f"invokes capability {capability_id} through TeamClaw.",
                other.input_schema,
            )

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` list (``[{type: function, function: {name, description, parameters}}]``)."""
        return list(self._specs)

    def lookup(self, name: str) -> FunctionTarget | None:
        """The target of ``name``; a capability id that was not offered still maps to the
        capability (the runtime then decides), except the capability being executed."""
        target = self.targets.get(name)
        if target is not None:
            return target
        if name in self.external:
            return FunctionTarget(name, tool=self.external[name])
        if name in self.call.snapshot.cards and name != self.call.card.capability_id and name not in self.leave_out:
            return FunctionTarget(name, capability_id=name)
        return None

    # -- running ----------------------------------------------------------------
    async def run(self, requests: list[ToolCallRequest]) -> list[dict[str, Any]]:
        """Run the model's function calls (at most MAX_CALLS_PER_ROUND) and return one
        ``tool`` message per call, in order.

        Raises AgentFailure(executor_error) when the model sends malformed argument JSON a
        second time in this capability call (the first time it is told and may retry).
        """
        parsed: list[tuple[ToolCallRequest, dict[str, Any] | None, str | None]] = []
        for index, request in enumerate(requests):
            if index >= MAX_CALLS_PER_ROUND:
                parsed.append((request, None, f"at most {MAX_CALLS_PER_ROUND} function calls are run per turn"))
                continue
            arguments, problem = self._arguments(request)
            parsed.append((request, arguments, problem))
        results = await asyncio.gather(
            *(self._run_one(request, arguments, problem) for request, arguments, problem in parsed)
        )
        return [
            {"role": "tool", "tool_call_id": request.id, "content": _cut(json.dumps(result, ensure_ascii=False))}
            for (request, _, _), result in zip(parsed, results, strict=True)
        ]

    def _arguments(self, request: ToolCallRequest) -> tuple[dict[str, Any] | None, str | None]:
        text = request.arguments.strip()
        if not text:
            return {}, None
        try:
            value = loads(text, max_bytes=MAX_ARGUMENTS_BYTES, strict=False)
        except JsonRefused as exc:
            return None, self._malformed(request, f"the arguments are not valid JSON ({exc})")
        if not isinstance(value, dict):
            return None, self._malformed(request, "the arguments must be a JSON object")
        return value, None

    def _told(self, tool: str, failure: AgentFailure) -> None:
        """Record in the context's errors that an external tool was refused or failed and the
        model was given the reason as the function's result (it may go on without it)."""
        self.call.context.errors.append(
            {
                "code": str(failure.error.code),
                "message": f"{tool}: {failure.error.message}; the model was told",
                "details": {**failure.error.details, "reason": "tool_refused", "recovered": True},
            }
        )

    def _malformed(self, request: ToolCallRequest, reason: str) -> str:
        self.malformed_seen += 1
        if self.malformed_seen > 1:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"the model sent malformed function-call JSON again ({request.name}: {reason})",
                {"function": request.name, "reason": "malformed_tool_call", "arguments": request.arguments[:500]},
                retryable=False,
            )
        self.call.context.errors.append(
            {
                "code": str(ErrorCode.EXECUTOR_ERROR),
                "message": f"{request.name}: {reason}; the model was told once",
                "details": {"reason": "malformed_tool_call", "recovered": True, "arguments": request.arguments[:500]},
            }
        )
        return f"{reason}. Call the function again with a single JSON object as its arguments."

    async def _run_one(
        self, request: ToolCallRequest, arguments: dict[str, Any] | None, problem: str | None
    ) -> dict[str, Any]:
        if problem is not None or arguments is None:
            return {"success": False, "error": {"code": "malformed_tool_call", "message": problem or "not run"}}
        target = self.lookup(request.name)
        if target is None:
            offered = ", ".join(self.targets) or "none"
            return {
                "success": False,
                "error": {
                    "code": str(ErrorCode.CAPABILITY_NOT_FOUND),
                    "message": f"there is no function {request.name!r}; use one of: {offered}",
                },
            }
        if target.tool is not None:
            allowed = set(FILE_TOOL_PARAMETERS.get(target.tool, {}).get("properties", arguments))
            unexpected = sorted(set(arguments) - allowed)
            if unexpected:
                return {
                    "success": False,
                    "error": {
                        "code": str(ErrorCode.INVALID_PARAMS),
                        "message": f"unexpected argument(s) {', '.join(unexpected)}; {target.tool} takes "
                        + ", ".join(sorted(allowed)),
                    },
                }
            try:
                data = await self.call.use_tool(target.tool, **arguments)
            except AgentFailure as failure:
                if target.tool in self.call.snapshot.tool_specs:
                    self._told(target.tool, failure)
                return {"success": False, "error": failure.error.as_dict()}
            return {"success": True, "data": data}
        assert target.capability_id is not None
        result = await self.call.invoke(target.capability_id, arguments, target_role=target.target_role)
        if result.success:
            return {"success": True, "data": result.data}
        assert result.error is not None
        return {"success": False, "error": result.error.as_dict()}


def external_function_name(tool: str) -> str:
    """The function name an external tool is offered under: ``mcp:time/get_current_time`` ->
    ``mcp__time__get_current_time`` (then made unique and valid by ``FunctionTools._name``)."""
    head, _, rest = tool.partition(":")
    return f"{head}__{rest.replace('/', '__', 1)}".replace(".", "_")


def _cut(text: str) -> str:
    if len(text) <= MAX_TOOL_RESULT_CHARS:
        return text
    return text[: MAX_TOOL_RESULT_CHARS - 60] + f"... [cut: {len(text):,} characters in all]"

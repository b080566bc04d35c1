"""Running seed 003 ``orchestration`` workflows on the runtime (no ORM).

The main agent's ``workflow_orchestration`` capability runs a definition validated by
``capabilities.workflow_spec``: every invoke step is an ``ExecutionCall.invoke`` made as
main, so the invoke matrix, INTERNAL-only-from-its-own-skill, card state and schemas apply
(PRD §4.4, §4.7) and each call is recorded with its before/after snapshots (PRD §4.6) like
any other; switch steps choose the next step. A failing step fails the task with the step
named. The result lists each step taken and the last step's value.
"""

from __future__ import annotations

import json
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.whole_numbers import whole_number_or_none

END = "end"


class MissingReference(LookupError):
    """A ``${...}`` reference whose value is not there at run time."""


def lookup(expression: str, scope: dict[str, Any]) -> Any:
    """The value of ``userInput.a.b`` / ``step.field`` / ``result.x.0`` in ``scope``.

    Raises MissingReference naming the first missing part."""
    parts = expression.strip().split(".")
    if parts[0] not in scope:
        raise MissingReference(f"${{{expression}}}: {parts[0]!r} has no value yet")
    value = scope[parts[0]]
    for depth, part in enumerate(parts[1:], start=1):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and (index := whole_number_or_none(part)) is not None and index < len(value):
            value = value[index]
        else:
            where = ".".join(parts[:depth])
            raise MissingReference(f"${{{expression}}}: {where} has no {part!r}")
    return value


def resolve(template: Any, scope: dict[str, Any]) -> Any:
    """``template`` with every ``${...}`` replaced: a string that is exactly one reference
    becomes the referenced value (any type); references inside longer strings are
    interpolated as text (JSON for mappings and lists). Raises MissingReference."""
    if isinstance(template, dict):
        return {key: resolve(value, scope) for key, value in template.items()}
    if isinstance(template, list):
        return [resolve(value, scope) for value in template]
    if not isinstance(template, str) or "${" not in template:
        return template
    stripped = template.strip()
    if stripped.startswith("${") and stripped.endswith("}") and stripped.count("${") == 1:
        return lookup(stripped[2:-1], scope)
    out = []
    rest = template
    while "${" in rest:
        before, _, after = rest.partition("${")
        expression, closed, rest = after.partition("}")
        if not closed:
            out.append(before + "${" + expression)
            break
        value = lookup(expression, scope)
        out.append(before + (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)))
    out.append(rest)
    return "".join(out)


def _fail(step_id: str, message: str, code: ErrorCode = ErrorCode.INVALID_PARAMS, **details: Any) -> AgentFailure:
    return AgentFailure(code, f"step {step_id}: {message}", {"step": step_id, **details}, retryable=False)


async def run_orchestration(call: ExecutionCall) -> dict[str, Any]:
    """``workflow_orchestration``: run ``params.workflow`` on ``params.input`` (see module
    docstring). Returns ``{status, summary, workflow_id, steps: [{id, type, ...}], output}``."""
    definition = call.params["workflow"]
    steps: list[dict[str, Any]] = definition["steps"]
    by_id = {step["id"]: position for position, step in enumerate(steps)}
    scope: dict[str, Any] = {"userInput": call.params.get("input", {})}
    trace: list[dict[str, Any]] = []
    current: str | None = steps[0]["id"]
    last_value: Any = None
    budget = len(steps)  # validated workflows have no loops: each step runs at most once
    while current is not None and current != END:
        if budget == 0:
            raise _fail(current, "the workflow loops", ErrorCode.EXECUTOR_ERROR)
        budget -= 1
        position = by_id.get(current)
        if position is None:
            raise _fail(current, "no such step", ErrorCode.EXECUTOR_ERROR)
        step = steps[position]
        following = steps[position + 1]["id"] if position + 1 < len(steps) else None
        call.progress(int(100 * len(trace) / max(1, len(steps))), f"{definition['id']}: {current}")
        if step.get("type") == "switch":
            try:
                value = resolve(step["condition"], scope)
            except MissingReference as exc:
                raise _fail(current, str(exc)) from None
            key = value if isinstance(value, str) else json.dumps(value)
            case = (step.get("cases") or {}).get(key)
            chosen = case or step.get("default")
            if chosen is None:
                raise _fail(current, f"no case for {key!r} and no default", value=value)
            trace.append(
                {"id": current, "type": "switch", "value": value, "next": chosen["next"], "matched": bool(case)}
            )
            current = chosen["next"]
            continue
        try:
            params = resolve(step.get("input") or {}, scope)
        except MissingReference as exc:
            raise _fail(current, str(exc)) from None
        result = await call.invoke(step["capability"], params)
        if not result.success:
            error = result.error
            assert error is not None
            raise _fail(
                current,
                f"{step['capability']} failed: {error.code}: {error.message}",
                error.code,
                capability=step["capability"],
                error=error.as_dict(),
            )
        if step.get("output"):
            try:
                value = resolve(step["output"], {**scope, "result": result.data})
            except MissingReference as exc:
                raise _fail(current, f"output: {exc}", ErrorCode.OUTPUT_INVALID) from None
        else:
            value = result.data
        scope[current] = value
        last_value = value
        trace.append(
            {
                "id": current,
                "type": "invoke",
                "capability": step["capability"],
                "from_instance": result.from_instance,
                "latency_ms": round(result.latency_ms, 3),
            }
        )
        current = step.get("next", following)
    call.progress(100, f"{definition['id']}: done")
    invoked = sum(1 for t in trace if t["type"] == "invoke")
    return {
        "status": "completed",
        "summary": f"workflow {definition['id']}: {invoked} invoke(s), path " + " -> ".join(t["id"] for t in trace),
        "workflow_id": definition["id"],
        "steps": trace,
        "output": last_value,
    }


async def run_orchestration_on_model(call: ExecutionCall, session: Any) -> dict[str, Any]:
    """``run_orchestration`` as an ``openai`` executor handler: when main runs on a model,
    the workflow still runs step by step as written (the model is not asked)."""
    return await run_orchestration(call)


HANDLERS = {"workflow_orchestration": run_orchestration}

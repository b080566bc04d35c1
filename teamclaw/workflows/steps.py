"""How the built-in workflows' agents work together: task artifacts as the seed's
``temp/*.json`` files, and main's steps (parallel invokes that must all succeed).

Plain Python on ``teamclaw.runtime``; ``requirement_review`` and ``drafting`` build on it.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall

INPUT_WAIT_S = 24 * 3600
"""How long (s) an agent waits for an operator's answer (interview, decisions, the phase 5
choice) before it goes on without one and says so."""


def artifact_json(data: Any) -> str:
    """An artifact's JSON text: indented, non-ASCII kept as written (Chinese stays readable)."""
    return json.dumps(data, ensure_ascii=False, indent=2)


def load_artifact(call: ExecutionCall, name: str) -> Any:
    """The task's artifact ``name``, parsed when it is ``.json``. Raises AgentFailure
    (``executor_error``) when the task has no such artifact."""
    text = call.read_artifact(name)
    if text is None:
        raise AgentFailure(ErrorCode.EXECUTOR_ERROR, f"artifact {name} is missing", {"artifact": name}, retryable=False)
    return json.loads(text) if name.endswith(".json") else text


def artifacts_with_prefix(call: ExecutionCall, prefix: str) -> dict[str, tuple[str, Any]]:
    """``perspective -> (file name, parsed JSON)`` for every ``<prefix>_<perspective>.json``."""
    found = {}
    for name in call.artifact_names():
        match = re.fullmatch(rf"{prefix}_(.+)\.json", name)
        if match:
            found[match.group(1)] = (name, load_artifact(call, name))
    return found


async def pace(call: ExecutionCall) -> None:
    """Wait the task's think time (s) before a step, so the paced demo can be watched."""
    if call.task.think_time_s > 0:
        await call.clock.sleep(call.task.think_time_s)


async def step(call: ExecutionCall, step: str, invocations: list[tuple[str, dict[str, Any], str]]) -> list[Any]:
    await pace(call)
    results = await asyncio.gather(
        *(call.invoke(capability_id, params, target_role=role) for capability_id, params, role in invocations)
    )
    for (capability_id, _, role), result in zip(invocations, results, strict=True):
        if not result.success:
            error = result.error
            assert error is not None
            raise AgentFailure(
                error.code,
                f"{step}: {capability_id} on {role} failed: {error.message}",
                {"step": step, "role": role, **error.details},
                retryable=False,
            )
    return [r.data for r in results]

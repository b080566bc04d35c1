"""The ``offline`` executor: the embedded default brain (docs/architecture.md §8).

Deterministic and network-free. A capability with a registered handler (the apps add
handlers, e.g. the requirement reviewers) runs that handler; any other capability gets a
result synthesised from its ``output_schema`` and params, so it is always schema-valid.
Token counts are estimated (about 4 characters a token) and marked ``estimated``: a call's
input is its params plus every task artifact and knowledge passage it read, its output its
result plus every artifact it wrote (``call_io_tokens``), so a consolidator that reads
30 KB of reviews and writes a 14 KB document is charged for them. No model is called and
nothing is spent, so these estimates are recorded but never stop a task at its token budget
(the seed 002 demo's honest estimate is about 63,000 tokens, over the 50,000 default). A task
with a think time (``TaskState.think_time_s``, the paced demo) waits that long before each
call; the result is the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall

OfflineHandler = Callable[["ExecutionCall"], Awaitable[dict[str, Any]]]


def estimate_tokens(text: str) -> int:
    """Rough token count of ``text`` (tokens ~ characters / 4, at least 1)."""
    return max(1, (len(text) + 3) // 4)


def estimate_characters_tokens(characters: int) -> int:
    """Rough token count of ``characters`` characters (tokens ~ characters / 4, at least 1)."""
    return max(1, (max(0, characters) + 3) // 4)


def call_io_tokens(call: ExecutionCall, result: Any) -> tuple[int, int]:
    """``(input, output)`` estimated tokens of a finished call (module docstring): what it
    read (params JSON + ``call.characters_read``) and what it wrote (result JSON +
    ``call.characters_written``)."""
    params = len(json.dumps(call.params, ensure_ascii=False, default=str))
    written = len(json.dumps(result, ensure_ascii=False, default=str))
    return (
        estimate_characters_tokens(params + sum(call.characters_read.values())),
        estimate_characters_tokens(written + sum(call.characters_written.values())),
    )


class OfflineExecutor:
    """Runs handlers by capability id, else synthesises a schema-valid result."""

    kind = "offline"

    def __init__(self, handlers: Mapping[str, OfflineHandler] | None = None, *, charge_tokens: bool = True) -> None:
        self.handlers: dict[str, OfflineHandler] = dict(handlers or {})
        self.charge_tokens = charge_tokens

    def register(self, capability_id: str, handler: OfflineHandler) -> None:
        self.handlers[capability_id] = handler

    async def execute(self, call: ExecutionCall) -> dict[str, Any]:
        if call.task.think_time_s > 0:
            await call.clock.sleep(call.task.think_time_s)
        await call.retrieve_knowledge()
        handler = self.handlers.get(call.card.capability_id)
        if handler is not None:
            result = await handler(call)
        else:
            result = synthesise(call.card.output_schema, call.params, call.card.capability_id)
        if self.charge_tokens:
            input_tokens, output_tokens = call_io_tokens(call, result)
            call.charge_tokens(input_tokens, output_tokens, estimated=True, enforce=False)
        return result


def _seed_text(params: Mapping[str, Any]) -> str:
    for value in params.values():
        if isinstance(value, str) and value.strip():
            return value.strip().splitlines()[0][:120]
    return ""


def synthesise(schema: Mapping[str, Any] | bool, params: Mapping[str, Any], label: str, path: str = "") -> Any:
    """A deterministic value that satisfies ``schema`` (see ``_synthesise``)."""
    return _synthesise(schema, params, label, path, _seed_text(params))


def _synthesise(schema: Mapping[str, Any] | bool, params: Mapping[str, Any], label: str, path: str, seed: str) -> Any:
    """A deterministic value that satisfies ``schema`` (JSON Schema subset: type, enum,
    const, properties/required, items/minItems, string formats and bounds), echoing the
    params where names match so the output relates to the input."""
    if schema is True or not isinstance(schema, Mapping):
        return {}
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _synthesise(schema[key][0], params, label, path, seed)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    name = path.rsplit("/", 1)[-1]
    if kind == "object":
        out: dict[str, Any] = {}
        properties = schema.get("properties") or {}
        for prop in schema.get("required", []):
            sub = properties.get(prop, {"type": "string"})
            if prop in params and _fits(sub, params[prop]):
                out[prop] = params[prop]
            else:
                out[prop] = _synthesise(sub, params, label, f"{path}/{prop}", seed)
        return out
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        items = schema.get("items", {"type": "string"})
        return [_synthesise(items, params, label, f"{path}/{i}", seed) for i in range(count)]
    if kind == "string":
        return _string(schema, params, label, name, seed)
    if kind == "integer":
        return int(max(schema.get("minimum", 1), schema.get("exclusiveMinimum", 0) + 1))
    if kind == "number":
        return float(max(schema.get("minimum", 1.0), schema.get("exclusiveMinimum", 0) + 1))
    if kind == "boolean":
        return True
    return None


def _fits(schema: Mapping[str, Any], value: Any) -> bool:
    kind = schema.get("type")
    checks = {"string": str, "object": dict, "array": list, "boolean": bool}
    if kind in checks:
        return isinstance(value, checks[kind])
    if kind in ("integer", "number"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return False


def _digest(params: Mapping[str, Any]) -> str:
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode(), usedforsecurity=False).hexdigest()


def _string(schema: Mapping[str, Any], params: Mapping[str, Any], label: str, name: str, seed: str) -> str:
    fmt = schema.get("format")
    if fmt == "date-time":
        return "2026-01-01T00:00:00Z"
    if fmt == "date":
        return "2026-01-01"
    if fmt in ("uri", "url"):
        return f"https://example.invalid/{label}/{_digest(params)[:8]}"
    if fmt == "email":
        return f"{label}@example.invalid"
    if fmt == "uuid":
        digest = _digest(params)
        return f"{digest[:8]}-{digest[8:12]}-4{digest[13:16]}-8{digest[17:20]}-{digest[20:32]}"
    text = f"[offline] {label}.{name or 'value'}" + (f" for: {seed}" if seed else "")
    max_length = schema.get("maxLength")
    min_length = schema.get("minLength", 0)
    if max_length is not None:
        text = text[:max_length]
    if len(text) < min_length:
        text = text + "." * (min_length - len(text))
    return text

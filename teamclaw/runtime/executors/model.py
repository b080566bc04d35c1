"""The ``openai`` executor: a model behind any OpenAI-compatible chat-completions endpoint
is the agent's brain (docs/architecture.md §8; PRD §4.5 prompts, §4.7 permissions and budget).

For a capability call without a workflow handler the conversation is:

1. ``system``: the role's rendered, layered prompt (all six template types, PRD §4.5) with
   the passages retrieved from the role's, the skill's and the project's documents for the
   call's params (seed 003 KnowledgeContext, ``ExecutionCall.retrieve_knowledge``: the
   ``knowledge`` template variable, appended when no template places it);
   ``user``: the capability, its params, the operator's instructions (PRD §4.6) and the
   ``output_schema`` the answer must match;
2. the functions the role may call are offered as tools (``function_tools``); each call the
   model makes goes through the runtime as an ``invoke`` (or a tool use) and its result,
   success or refusal, goes back as a ``tool`` message;
3. the loop ends with an answer that is parsed as JSON and validated against the
   ``output_schema``; one repair attempt is made with the validation errors, then the call
   fails with ``output_invalid``. A model still calling functions after ``max_rounds``
   answers is cut off (``executor_error``).

Every request of that loop also asks for the schema through ``response_format``
(``json_schema``; ``strict`` only when the schema already fits the strict subset, see
``structured``), tools offered or not: a function call is still a possible answer, and the
schema applies to the answer given as content. The schema stays in the prompt, so an
endpoint with ``structured_output`` off, or one that refuses the parameter (noticed once per
endpoint and process, then never sent to it again), is answered through the prompt alone.
Each ``model_call`` message records the ``answer_format`` used.

Workflow capabilities may register a ``ModelHandler`` instead (the requirement reviewers of
seed 002 do): it gets a ``ModelSession`` and asks the model for structured answers through
the same budget, retry, repair and recording rules; its ``session.system_prompt()`` carries
the same retrieved passages (retrieved once, before the handler runs). An answer that is a list of independent
items (``ModelSession.answer_items``) keeps its valid items when some are still invalid after
the repair attempt; each dropped item is a recorded warning (seed 002 point 7).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx2
import openai

from teamclaw.runtime.context import SnapshotType
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.executors.chat import (
    MAX_RESPONSE_BYTES,
    ModelChat,
    ModelOptions,
    ModelSettings,
    redact,
    resolve_options,
)
from teamclaw.runtime.executors.function_tools import FunctionTools
from teamclaw.runtime.executors.structured import StructuredSupport, response_format_for
from teamclaw.runtime.knowledge import knowledge_text
from teamclaw.runtime.progress import ANSWERED, ANSWERED_DROPPING, MODEL_ROUND, REPAIRING
from teamclaw.runtime.schemas import compile_schema, schema_errors
from teamclaw.strict_json import JsonRefused, loads

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall

ModelHandler = Callable[["ExecutionCall", "ModelSession"], Awaitable[dict[str, Any]]]
"""A workflow capability's brain on the ``openai`` executor: ``(call, session) -> result``."""

AnswerCheck = Callable[[dict[str, Any]], list[dict[str, str]]]
"""Checks beyond the JSON Schema: ``answer -> [{"pointer", "message"}]`` (empty = fine)."""

MAX_ANSWER_BYTES = MAX_RESPONSE_BYTES
"""Largest answer ``parse_answer`` reads (bytes of JSON): what the chat reads of a response."""

MAX_ANSWER_ECHO_CHARS = 8000
"""Longest invalid answer echoed back to the model in the repair request (characters)."""
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def parse_answer(content: str) -> tuple[Any, str | None]:
    """The JSON value in a model answer (a ```json fence or prose around one object is
    tolerated) and None, or ``(None, reason)`` when there is none."""
    text = content.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return loads(text, max_bytes=MAX_ANSWER_BYTES, strict=False), None
    except JsonRefused as exc:
        start, end = text.find("{"), text.rfind("}")
        if exc.reason == "syntax" and 0 <= start < end:
            try:
                return loads(text[start : end + 1], max_bytes=MAX_ANSWER_BYTES, strict=False), None
            except ValueError:
                pass
        if not text:
            return None, "the answer is empty"
        return None, f"the answer is not JSON ({exc})"


class ModelSession:
    """One capability call's conversation(s) with its model (see module docstring).

    The chat connection opens on first use, so a handler that never asks the model costs
    nothing and needs no endpoint. ``close()`` releases it.
    """

    def __init__(
        self, call: ExecutionCall, settings: ModelSettings, structured: StructuredSupport | None = None
    ) -> None:
        self.call = call
        self.settings = settings
        self.structured = structured if structured is not None else StructuredSupport()
        self._options: ModelOptions | None = None
        self._chat: ModelChat | None = None
        self._validators: dict[str, Any] = {}
        self.knowledge = ""
        """The retrieved passages as the prompt's ``knowledge`` section (``gather_knowledge``)."""

    async def gather_knowledge(self) -> str:
        """Retrieve this call's passages (``ExecutionCall.retrieve_knowledge``, recorded in
        the context) for every ``system_prompt`` of the session; the section's text."""
        self.knowledge = knowledge_text(await self.call.retrieve_knowledge())
        return self.knowledge

    @property
    def options(self) -> ModelOptions:
        """The effective model options; AgentFailure(executor_error) when unusable."""
        if self._options is None:
            self._options = resolve_options(self.settings, self.call.card, self.call.snapshot.roles.get(self.call.role))
        return self._options

    async def chat(self) -> ModelChat:
        if self._chat is None:
            self._chat = await ModelChat(self.call, self.options, self.settings, self.structured).__aenter__()
        return self._chat

    async def close(self) -> None:
        if self._chat is not None:
            await self._chat.__aexit__(None, None, None)
            self._chat = None

    def system_prompt(self, **variables: Any) -> str:
        """The role's rendered prompt (PRD §4.5) with extra template ``variables``; the
        ``knowledge`` variable is the session's retrieved passages (seed 003
        KnowledgeContext), appended after the prompt when no template placed them.
        AgentFailure(executor_error) when a template cannot be rendered."""
        variables.setdefault("knowledge", self.knowledge)
        knowledge = variables["knowledge"]
        try:
            system = self.call.system_prompt(**variables)
            if knowledge and knowledge not in system:
                system = f"{system}\n\n{knowledge}" if system else knowledge
            return system
        except ValueError as exc:  # prompts.render.PromptRenderError
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"the prompt of {self.call.role} cannot be rendered: {exc}",
                {"role": self.call.role},
                retryable=False,
            ) from None

    def _validator(self, schema: Mapping[str, Any]) -> Any:
        key = json.dumps(schema, sort_keys=True, default=str)
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = compile_schema(schema)
        return validator

    def _record(self, chat: ModelChat, reply: Any) -> None:
        self.call.context.add_message(
            {
                "type": "model_call",
                "from": self.call.role,
                "to": "model",
                "capability_id": self.call.card.capability_id,
                "round": chat.rounds,
                "model": self.options.model,
                "endpoint": self.options.endpoint.label,
                "finish_reason": reply.finish_reason,
                "tool_calls": [c.name for c in reply.tool_calls],
                "answer_format": reply.answer_format,
                "input_tokens": reply.input_tokens,
                "output_tokens": reply.output_tokens,
                "estimated": reply.estimated,
                "timestamp": self.call.clock.now_ms(),
            }
        )
        # A snapshot per model call (issue 30): a replay step on it shows what it answered.
        self.call.port.snapshot(
            self.call.context, SnapshotType.AUTO, f"model call {self.call.card.capability_id}", str(chat.rounds)
        )

    async def answer(
        self,
        messages: list[dict[str, Any]],
        schema: Mapping[str, Any],
        *,
        tools: FunctionTools | None = None,
        check: AnswerCheck | None = None,
        validator: Any = None,
        label: str = "",
    ) -> dict[str, Any]:
        """Converse until the model gives a JSON object valid under ``schema`` (and
        ``check``), running its function calls through ``tools``; returns that object.

        ``messages`` is extended in place. Raises AgentFailure: ``output_invalid`` (still
        invalid after the one repair attempt), ``executor_error`` (cut off after
        ``max_rounds``, malformed function-call JSON twice), and whatever ``ModelChat``
        raises (``budget_exceeded``, ``unavailable``, ``timeout``).
        """
        data, _ = await self._converse(messages, schema, tools, check, validator, label, None)
        return data

    async def answer_items(
        self,
        messages: list[dict[str, Any]],
        schema: Mapping[str, Any],
        items: str,
        *,
        tools: FunctionTools | None = None,
        check: AnswerCheck | None = None,
        label: str = "",
    ) -> tuple[dict[str, Any], list[DroppedItem]]:
        """``answer`` for an answer that is a list of independent items under the top-level
        key ``items`` (an expert's issues, stances, withdrawals: seed 002 point 7).

        When the answer is still invalid after the one repair attempt and every error points
        inside an item (``/<items>/<n>/...``), those items are dropped and the rest is kept:
        returns ``(answer without them, dropped)``, each drop also recorded in the context's
        errors (``reason: item_dropped``, ``recovered: True``). Raises AgentFailure
        (``output_invalid``) when an error is outside the items (not JSON, wrong shape) or
        no item would be left; otherwise as ``answer``. ``tools``: the functions offered
        meanwhile, run as ``answer`` runs them (the experts' tools, issue 29 item 6).
        """
        return await self._converse(messages, schema, tools, check, None, label, items)

    async def _converse(
        self,
        messages: list[dict[str, Any]],
        schema: Mapping[str, Any],
        tools: FunctionTools | None,
        check: AnswerCheck | None,
        validator: Any,
        label: str,
        items: str | None,
    ) -> tuple[dict[str, Any], list[DroppedItem]]:
        chat = await self.chat()
        validator = validator or self._validator(schema)
        max_rounds = self.options.max_rounds
        specs = tools.specs() if tools is not None else []
        response_format = response_format_for(self.call.card.capability_id, schema)
        repairing = False
        rounds = 0
        what = label or self.call.card.capability_id
        while True:
            percent = min(95, 10 + (80 * rounds) // max_rounds)
            if repairing:
                step = REPAIRING % {"what": what}
            else:
                step = MODEL_ROUND % {"what": what, "round": rounds + 1, "rounds": max_rounds}
            reply = await chat.complete(
                messages,
                specs or None,
                tool_choice="none" if repairing and specs else None,
                response_format=response_format,
                percent=percent,
                step=step,
            )
            rounds += 1
            self._record(chat, reply)
            if reply.tool_calls and not repairing and tools is not None:
                if rounds >= max_rounds:
                    raise AgentFailure(
                        ErrorCode.EXECUTOR_ERROR,
                        f"the model was still calling functions after {max_rounds} rounds "
                        f"({', '.join(c.name for c in reply.tool_calls)}); cut off",
                        {"reason": "round_limit", "max_rounds": max_rounds},
                        retryable=False,
                    )
                messages.append(reply.assistant_message())
                messages.extend(await tools.run(reply.tool_calls))
                continue
            errors = self._errors(reply.content, validator, check) if not reply.tool_calls else []
            if reply.tool_calls:
                errors = [{"pointer": "", "message": "answer with the JSON object now, not with function calls"}]
            if not errors:
                data, _ = parse_answer(reply.content)
                self.call.progress(100, ANSWERED % {"what": what})
                return data, []
            if repairing:
                salvaged = salvage(reply.content, validator, check, items) if items else None
                if salvaged is not None:
                    self._record_drops(what, salvaged[1])
                    self.call.progress(100, ANSWERED_DROPPING % {"what": what, "count": len(salvaged[1])})
                    return salvaged
                raise AgentFailure(
                    ErrorCode.OUTPUT_INVALID,
                    f"the model's answer for {what} is still invalid after one repair attempt",
                    {"errors": errors, "repair_attempted": True},
                    retryable=False,
                )
            repairing = True
            self.call.context.errors.append(
                {
                    "code": str(ErrorCode.OUTPUT_INVALID),
                    "message": f"{what}: the model's answer was invalid; asked once to repair it",
                    "details": {"reason": "answer_repair", "recovered": True, "errors": errors[:20]},
                }
            )
            messages.append({"role": "assistant", "content": reply.content[:MAX_ANSWER_ECHO_CHARS]})
            messages.append({"role": "user", "content": repair_request(errors)})

    def _record_drops(self, what: str, dropped: list[DroppedItem]) -> None:
        for drop in dropped:
            self.call.context.errors.append(
                {
                    "code": str(ErrorCode.OUTPUT_INVALID),
                    "message": f"{what}: {drop.warning()}",
                    "details": {
                        "reason": "item_dropped",
                        "recovered": True,
                        "pointer": drop.pointer,
                        "errors": drop.errors[:20],
                    },
                }
            )

    @staticmethod
    def _errors(content: str, validator: Any, check: AnswerCheck | None) -> list[dict[str, str]]:
        data, problem = parse_answer(content)
        if problem is not None:
            return [{"pointer": "", "message": problem}]
        return _data_errors(data, validator, check)

    async def run_capability(self) -> dict[str, Any]:
        """The generic brain: the capability's task, the role's functions (unless the
        ``functions`` option is off, for servers without function calling), a schema-valid answer."""
        call = self.call
        tools = FunctionTools(call) if self.options.functions else None
        memory = call.context.memory
        # The passages of the role's, the skill's and the project's documents for this
        # call's input (seed 003 KnowledgeContext), as the executor gathered them.
        system = self.system_prompt()
        if memory.preferences or memory.session_state:
            system += "\n\n" + remembered_text(memory.preferences, memory.session_state)
        recalled = memory.recall()
        task = {"role": "user", "content": task_message(call, bool(tools and tools.specs()))}
        messages = [{"role": "system", "content": system}, *recalled, task]
        _, output_validator = call.port.validators.for_card(call.card)
        data = await self.answer(messages, call.card.output_schema, tools=tools, validator=output_validator)
        # This call's turns (its task, function calls with their results, the answer) are
        # what the next call in this conversation remembers (seed 003 MemoryContext).
        # A rejected answer and its repair request are left out: only what stood.
        exchanged = [t for t in messages[2 + len(recalled) :] if t.get("tool_calls") or t.get("role") == "tool"]
        answer = {"role": "assistant", "content": json.dumps(data, ensure_ascii=False)}
        memory.remember([task, *exchanged, answer])
        call.port.context_changed(call.context)
        return data


def _data_errors(data: Any, validator: Any, check: AnswerCheck | None) -> list[dict[str, str]]:
    if not isinstance(data, dict):
        return [{"pointer": "", "message": f"the answer must be a JSON object, not {type(data).__name__}"}]
    errors = [{"pointer": e["pointer"], "message": e["message"]} for e in schema_errors(validator, data)]
    if not errors and check is not None:
        errors = check(data)
    return errors


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """One item left out of a model answer (``ModelSession.answer_items``): its ``pointer``
    in the answer as given (``/issues/2``), the ``item`` itself and its ``errors``."""

    pointer: str
    item: Any
    errors: list[dict[str, str]]

    def warning(self) -> str:
        """One sentence for a warnings list: which item was dropped and why."""
        reasons = "; ".join(f"{e['pointer'] or '(item)'}: {e['message']}" for e in self.errors[:3])
        return f"dropped item {self.pointer} of the model's answer ({reasons[:600]})"


def salvage(
    content: str, validator: Any, check: AnswerCheck | None, items: str
) -> tuple[dict[str, Any], list[DroppedItem]] | None:
    """The answer in ``content`` without its invalid items under the key ``items``, and those
    items; None when it cannot be saved that way: not a JSON object, an error outside an item
    (``""``, ``/summary``, ``/<items>`` itself), or no valid item left. Items are dropped
    until the rest passes ``validator`` and ``check`` (each pass drops at least one)."""
    data, problem = parse_answer(content)
    if problem is not None or not isinstance(data, dict) or not isinstance(data.get(items), list):
        return None
    kept: list[tuple[int, Any]] = list(enumerate(data[items]))
    dropped: list[DroppedItem] = []
    where = re.compile(rf"^/{re.escape(items)}/(\d+)(?=/|$)")
    while True:
        candidate = {**data, items: [item for _, item in kept]}
        errors = _data_errors(candidate, validator, check)
        if not errors:
            break
        bad: dict[int, list[dict[str, str]]] = {}
        for error in errors:
            found = where.match(error["pointer"])
            if found is None or int(found.group(1)) >= len(kept):
                return None
            index = int(found.group(1))
            original = kept[index][0]
            relative = error["pointer"][found.end() :]
            bad.setdefault(index, []).append({"pointer": f"/{items}/{original}{relative}", "message": error["message"]})
        dropped += [DroppedItem(f"/{items}/{kept[i][0]}", kept[i][1], bad[i]) for i in sorted(bad)]
        kept = [entry for i, entry in enumerate(kept) if i not in bad]
    if not kept:
        return None
    return candidate, sorted(dropped, key=lambda d: int(d.pointer.rsplit("/", 1)[1]))


def task_message(call: ExecutionCall, has_functions: bool) -> str:
    """The ``user`` message asking for one capability call."""
    card = call.card
    lines = [
        f"Capability: {card.name} ({card.capability_id}). {card.description}",
        f"Requested by: {call.message.sender.role or 'the operator'}.",
        "Params:",
        json.dumps(call.params, ensure_ascii=False, indent=2, default=str),
    ]
    if call.context.user_instructions:
        lines += ["Operator instructions (they take precedence):"]
        lines += [f"- {text}" for text in call.context.user_instructions]
    if has_functions:
        lines.append(
            "You may call the functions offered to you; each one asks another agent or a tool through "
            "TeamClaw and returns its result or the reason it was refused."
        )
    lines += [
        "When you are done, answer with one JSON object (no prose, no code fence) that matches this JSON Schema:",
        json.dumps(card.output_schema, ensure_ascii=False, default=str),
    ]
    return "\n".join(lines)


def remembered_text(preferences: dict[str, Any], session_state: dict[str, Any]) -> str:
    """The system message's addition for what the agent keeps between calls."""
    parts = []
    if preferences:
        parts.append("User preferences (keep to them): " + json.dumps(preferences, ensure_ascii=False))
    if session_state:
        parts.append("Session state so far: " + json.dumps(session_state, ensure_ascii=False))
    return "\n".join(parts)


def repair_request(errors: list[dict[str, str]]) -> str:
    """The ``user`` message of the repair attempt, listing the errors with their JSON pointers."""
    listed = "\n".join(f"- {e['pointer'] or '(whole answer)'}: {e['message']}" for e in errors[:30])
    more = f"\n(and {len(errors) - 30} more)" if len(errors) > 30 else ""
    return (
        "Your answer does not match the required JSON Schema:\n"
        f"{listed}{more}\n"
        "Reply again with only the corrected JSON object."
    )


class OpenAIExecutor:
    """``openai`` (docs/architecture.md §8): runs capabilities on a chat-completions model.

    ``handlers`` are workflow brains by capability id (``ModelHandler``); every other
    capability runs ``ModelSession.run_capability``.
    """

    kind = "openai"

    def __init__(self, settings: ModelSettings, handlers: Mapping[str, ModelHandler] | None = None) -> None:
        self.settings = settings
        self.handlers: dict[str, ModelHandler] = dict(handlers or {})
        self.structured = StructuredSupport()
        """Endpoints found refusing ``response_format``, for every call of this executor."""

    def register(self, capability_id: str, handler: ModelHandler) -> None:
        self.handlers[capability_id] = handler

    async def execute(self, call: ExecutionCall) -> dict[str, Any]:
        """Run ``call`` on the model; AgentFailure as ``ModelSession.answer`` raises. Any
        other error of the client becomes ``executor_error`` with keys redacted."""
        session = ModelSession(call, self.settings, self.structured)
        try:
            await session.gather_knowledge()
            handler = self.handlers.get(call.card.capability_id)
            if handler is not None:
                return await handler(call, session)
            return await session.run_capability()
        except (openai.OpenAIError, httpx2.HTTPError, ValueError, TypeError) as exc:
            message = redact(f"{type(exc).__name__}: {exc}", self.settings.secrets())
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR, f"the model call failed: {message[:500]}", {}, retryable=False
            ) from None
        finally:
            await session.close()

"""Chat completions for the ``openai`` executor (docs/architecture.md §8), through the official client.

``ModelChat`` is one capability call's line to the model: it speaks the chat-completions
protocol with ``openai.AsyncOpenAI`` (so OpenAI, vLLM, Ollama, llama.cpp's server and other
compatible endpoints work), and on every request it

- checks the task's token budget first (PRD §4.7, 50,000 tokens by default) and caps the
  answer at what is left, so an answer that would exceed it stops with ``budget_exceeded``;
- charges the response's ``usage`` (``prompt_tokens``, ``completion_tokens``) to the
  context's ``resource_usage`` and the task; a server that reports no usage is charged an
  estimate, marked ``estimated``;
- retries connection errors, timeouts, 408/409/429 and 5xx with exponential backoff (or the
  server's ``Retry-After``) but only while the invoke's deadline leaves time; the client's own
  retries are off (``max_retries=0``) so nothing is retried twice, and waits use the
  runtime's clock;
- streams the answer when enabled, reporting progress on the live page as it arrives;
- asks for the answer's JSON Schema through ``response_format`` when the caller gives one,
  unless the endpoint has ``structured_output`` off or refused it before in this process; a
  server refusing it gets the request once more without it (``structured``);
- caps what it reads (``MAX_RESPONSE_BYTES``, ``MAX_ANSWER_CHARS``) and never lets an API
  key reach an error message, a log line or a recorded event;
- emits a ``ModelCalled`` event per request (its retries included): start time, model, the
  endpoint's public URL, usage (``estimated`` when the server reported none) or the error,
  which the OpenTelemetry traces turn into a ``chat`` span (``monitoring.tracing``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx2
import openai

from teamclaw.runtime.articles import with_article
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.events import ModelCalled
from teamclaw.runtime.executors.offline import estimate_tokens
from teamclaw.runtime.executors.structured import StructuredSupport, refuses_response_format
from teamclaw.strict_json import JsonRefused, loads

if TYPE_CHECKING:
    from teamclaw.runtime.config import CardSpec, RoleSpec
    from teamclaw.runtime.execution import ExecutionCall

OPENAI_API = "https://api.openai.com/v1"
MIN_ANSWER_TOKENS = 32
"""Fewest answer tokens worth asking for; less left in the budget is ``budget_exceeded``."""
MAX_RESPONSE_BYTES = 4_000_000
"""Largest non-streamed response body read from a model server (bytes)."""
MAX_ANSWER_CHARS = 400_000
"""Largest answer (content plus tool-call arguments) accepted from one model call (characters)."""
STREAM_PROGRESS_CHARS = 400
"""Characters of streamed answer between two live progress updates."""
RETRY_STATUSES = frozenset({408, 409, 429})
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+\-]{0,199}$")
ENDPOINT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelEndpoint:
    """A chat-completions server: ``base_url`` (''= OpenAI's API), its key (never shown), and
    whether answers are asked for through ``response_format`` (``structured_output``; off for
    a server that mishandles it; one that refuses it is noticed without this)."""

    name: str
    base_url: str
    api_key: str = field(default="", repr=False)
    structured_output: bool = True

    @property
    def label(self) -> str:
        """``scheme://host[:port]/path`` of the endpoint, without credentials or query."""
        return public_url(self.base_url or OPENAI_API)


def public_url(url: str) -> str:
    """``url`` without user info, query or fragment (safe to show and log)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "(invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


@dataclass(frozen=True)
class ModelSettings:
    """Server-wide model configuration (``settings.TEAMCLAW``; README "Real models").

    ``endpoints`` maps names to servers; ``default`` is OPENAI_BASE_URL / OPENAI_API_KEY.
    Units: ``request_timeout_s`` seconds, ``max_output_tokens`` tokens per answer.
    """

    endpoints: Mapping[str, ModelEndpoint] = field(default_factory=dict)
    model: str = "gpt-4o-mini"
    max_rounds: int = 8
    stream: bool = True
    functions: bool = True
    max_retries: int = 3
    request_timeout_s: float = 120.0
    max_output_tokens: int = 4096
    token_limit_field: str = "max_tokens"
    capture_content: bool = False
    """Put the messages and the answer in each ``ModelCalled`` event (the traces' opt-in
    content capture, ``monitoring.tracing``); never set from ``settings.TEAMCLAW``."""

    @classmethod
    def from_mapping(cls, conf: Mapping[str, Any]) -> ModelSettings:
        """Build from ``settings.TEAMCLAW`` (keys OPENAI_BASE_URL, OPENAI_API_KEY, MODEL,
        MODEL_ENDPOINTS, MODEL_MAX_ROUNDS, MODEL_STREAM, MODEL_FUNCTIONS, MODEL_MAX_RETRIES,
        MODEL_REQUEST_TIMEOUT_S, MODEL_MAX_OUTPUT_TOKENS, MODEL_TOKEN_LIMIT_FIELD,
        MODEL_STRUCTURED_OUTPUT: the default endpoint's ``structured_output``; each of
        MODEL_ENDPOINTS has its own, key ``structured_output``, on unless false)."""
        endpoints: dict[str, ModelEndpoint] = {}
        if conf.get("OPENAI_BASE_URL") or conf.get("OPENAI_API_KEY"):
            endpoints["default"] = ModelEndpoint(
                "default",
                conf.get("OPENAI_BASE_URL") or "",
                conf.get("OPENAI_API_KEY") or "",
                structured_output=bool(conf.get("MODEL_STRUCTURED_OUTPUT", True)),
            )
        for name, spec in (conf.get("MODEL_ENDPOINTS") or {}).items():
            endpoints[name] = ModelEndpoint(
                name,
                spec["base_url"],
                spec.get("api_key", ""),
                structured_output=bool(spec.get("structured_output", True)),
            )
        return cls(
            endpoints=endpoints,
            model=conf.get("MODEL") or cls.model,
            max_rounds=int(conf.get("MODEL_MAX_ROUNDS", cls.max_rounds)),
            stream=bool(conf.get("MODEL_STREAM", cls.stream)),
            functions=bool(conf.get("MODEL_FUNCTIONS", cls.functions)),
            max_retries=int(conf.get("MODEL_MAX_RETRIES", cls.max_retries)),
            request_timeout_s=float(conf.get("MODEL_REQUEST_TIMEOUT_S", cls.request_timeout_s)),
            max_output_tokens=int(conf.get("MODEL_MAX_OUTPUT_TOKENS", cls.max_output_tokens)),
            token_limit_field=conf.get("MODEL_TOKEN_LIMIT_FIELD") or cls.token_limit_field,
        )

    @property
    def configured(self) -> bool:
        """True when at least one model endpoint is configured."""
        return bool(self.endpoints)

    def secrets(self) -> list[str]:
        """Every API key, and any password or query in an endpoint URL (for redaction)."""
        found = []
        for endpoint in self.endpoints.values():
            found.append(endpoint.api_key)
            try:
                parts = urlsplit(endpoint.base_url)
            except ValueError:
                continue
            found += [parts.password or "", parts.query]
        return sorted({s for s in found if s}, key=len, reverse=True)


@dataclass(frozen=True)
class ModelOptions:
    """The effective options of one call: server defaults < card < role/project choice."""

    endpoint: ModelEndpoint
    model: str
    max_rounds: int
    stream: bool
    max_output_tokens: int
    temperature: float | None = None
    functions: bool = True


OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "endpoint": (str,),
    "max_rounds": (int,),
    "stream": (bool,),
    "functions": (bool,),
    "max_output_tokens": (int,),
    "temperature": (int, float),
}
"""Model options a card's ``executor_config`` or a role/project choice may set."""


def option_errors(config: Mapping[str, Any], endpoint_names: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Problems with model options ``config`` as ``{key: [reason]}`` (empty when usable).

    Only the keys of OPTION_TYPES are checked; ``endpoint`` must be one of
    ``endpoint_names`` when they are given. Never names a key's value when it may be secret.
    """
    errors: dict[str, list[str]] = {}
    for key, kinds in OPTION_TYPES.items():
        if key not in config or config[key] in (None, ""):
            continue
        raw = config[key]
        if not isinstance(raw, kinds) or (isinstance(raw, bool) and bool not in kinds):
            errors[key] = [f"must be {with_article(' or '.join(k.__name__ for k in kinds))}"]
            continue
        value: Any = raw  # checked against ``kinds`` above
        if key == "model" and not MODEL_NAME.match(value):
            errors[key] = ["use 1-200 letters, digits and . _ : / @ + - (no spaces)"]
        elif key == "endpoint":
            names = sorted(endpoint_names) if endpoint_names is not None else None
            if not ENDPOINT_NAME.match(value):
                errors[key] = ["is not an endpoint name"]
            elif names is not None and value not in names:
                errors[key] = [f"no endpoint {value!r} is configured ({', '.join(names) or 'none'})"]
        elif key == "max_rounds" and not 1 <= value <= 50:
            errors[key] = ["must be between 1 and 50"]
        elif key == "max_output_tokens" and not 16 <= value <= 1_000_000:
            errors[key] = ["must be between 16 and 1,000,000 tokens"]
        elif key == "temperature" and not 0 <= value <= 2:
            errors[key] = ["must be between 0 and 2"]
    return errors


def resolve_options(settings: ModelSettings, card: CardSpec, role: RoleSpec | None) -> ModelOptions:
    """The options for ``card`` run by ``role``: settings, then the card's
    ``executor_config``, then the role's (project override first, see capabilities.snapshot).

    Raises AgentFailure(executor_error) when an option is unusable or no endpoint is set.
    """
    merged: dict[str, Any] = {}
    for source in (card.executor_config or {}, (role.executor_config if role else None) or {}):
        merged.update({k: v for k, v in source.items() if k in OPTION_TYPES and v not in (None, "")})
    problems = option_errors(merged, settings.endpoints.keys())
    if problems:
        key, reasons = next(iter(problems.items()))
        raise AgentFailure(
            ErrorCode.EXECUTOR_ERROR,
            f"model option {key!r} {reasons[0]}",
            {"option": key, "errors": problems},
            retryable=False,
        )
    name = merged.get("endpoint", "default")
    endpoint = settings.endpoints.get(name)
    if endpoint is None:
        raise AgentFailure(
            ErrorCode.EXECUTOR_ERROR,
            "no model is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY, TEAMCLAW_MODEL) "
            "or run this role on the offline executor",
            {"endpoint": name},
            retryable=False,
        )
    return ModelOptions(
        endpoint=endpoint,
        model=merged.get("model", settings.model),
        max_rounds=merged.get("max_rounds", settings.max_rounds),
        stream=merged.get("stream", settings.stream),
        functions=merged.get("functions", settings.functions),
        max_output_tokens=merged.get("max_output_tokens", settings.max_output_tokens),
        temperature=float(merged["temperature"]) if "temperature" in merged else None,
    )


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


@dataclass(frozen=True)
class ToolCallRequest:
    """One function call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass
class ChatReply:
    """One model answer: text, function calls, why it stopped, and what it cost (tokens)."""

    content: str
    tool_calls: list[ToolCallRequest]
    finish_reason: str | None
    input_tokens: int
    output_tokens: int
    estimated: bool
    answer_format: str = "prompt"
    """How the answer's shape was asked for: ``json_schema_strict``, ``json_schema`` (the
    ``response_format``, strict or not) or ``prompt`` (in the prompt only)."""
    response_id: str | None = None
    """The completion's ``id`` as the server sent it."""
    response_model: str | None = None
    """The ``model`` the server says answered (often a dated version of the one asked for)."""

    def assistant_message(self) -> dict[str, Any]:
        """The answer as an ``assistant`` message for the next request."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class ModelChat:
    """One capability call's connection to the model (see module docstring).

    Use as ``async with ModelChat(call, options, settings) as chat: await chat.complete(...)``.
    ``rounds`` counts completed model calls; ``structured`` is what the executor learned
    about endpoints refusing ``response_format`` (shared across calls).
    """

    def __init__(
        self,
        call: ExecutionCall,
        options: ModelOptions,
        settings: ModelSettings,
        structured: StructuredSupport | None = None,
    ) -> None:
        self.call = call
        self.options = options
        self.settings = settings
        self.structured = structured if structured is not None else StructuredSupport()
        self.rounds = 0
        self._secrets = settings.secrets()
        self._client: openai.AsyncOpenAI | None = None
        self._fallback_deadline = call.clock.now() + call.card.timeout_s

    async def __aenter__(self) -> ModelChat:
        endpoint = self.options.endpoint
        self._client = openai.AsyncOpenAI(
            base_url=endpoint.base_url or OPENAI_API,
            # Local servers (llama.cpp, Ollama, vLLM) take any key; the client insists on one.
            api_key=endpoint.api_key or "unused",
            max_retries=0,  # retries are ours: bounded by the invoke deadline, on the runtime clock
            timeout=self.settings.request_timeout_s,
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    # -- deadline and budget ----------------------------------------------------
    def time_left(self) -> float:
        """Seconds until the invoke's deadline (paused while waiting for an operator)."""
        pending = self.call.pending
        deadline = pending.deadline if pending is not None else self._fallback_deadline
        return deadline - self.call.clock.now()

    def _answer_limit(self, prompt_estimate: int) -> tuple[int, bool]:
        """``(max answer tokens, limited_by_budget)``; raises budget_exceeded when the task
        cannot afford the prompt plus MIN_ANSWER_TOKENS."""
        task = self.call.task
        self.call.ensure_budget(prompt_estimate + MIN_ANSWER_TOKENS)
        left = task.token_budget - task.tokens_used - prompt_estimate
        limit = min(self.options.max_output_tokens, left)
        return limit, limit < self.options.max_output_tokens

    # -- one request ------------------------------------------------------------
    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        tool_choice: str | None = None,
        response_format: Mapping[str, Any] | None = None,
        percent: int = 0,
        step: str = "asking the model",
    ) -> ChatReply:
        """Send ``messages`` (and ``tools``, OpenAI ``tools`` format; ``tool_choice`` "none"
        forbids calling them) and return the answer. ``percent``/``step`` show on the live page.

        ``response_format`` (``structured.response_format_for``) is sent too unless the
        endpoint has ``structured_output`` off or refused it before (with ``tools`` offered or
        not, as now). When the server refuses it, the request is sent once more without it,
        the endpoint is remembered as refusing it, and a recovered warning goes to the
        context's errors (``reason: response_format_unsupported``) and the log. The reply's
        ``answer_format`` says which way the answer was asked for.

        Raises AgentFailure: ``budget_exceeded`` (before the call, or when the answer was cut
        short by the budget), ``unavailable`` (the server kept failing until retries or time
        ran out), ``timeout`` (no time left), ``executor_error`` (the server refused the
        request, or answered something that is not a chat completion).
        """
        payload = json.dumps([messages, tools or []], ensure_ascii=False, default=str)
        prompt_estimate = estimate_tokens(payload)
        limit, limited = self._answer_limit(prompt_estimate)
        request: dict[str, Any] = {"model": self.options.model, "messages": messages}
        if tools:
            request["tools"] = tools
            if tool_choice:
                request["tool_choice"] = tool_choice
        if self.options.temperature is not None:
            request["temperature"] = self.options.temperature
        field_name = self.settings.token_limit_field
        request[field_name if field_name in TOKEN_LIMIT_FIELDS else "max_tokens"] = limit
        endpoint = self.options.endpoint
        with_tools = bool(tools)
        if (
            response_format is not None
            and endpoint.structured_output
            and not self.structured.refused(endpoint.name, endpoint.base_url, with_tools)
        ):
            request["response_format"] = dict(response_format)
        self.call.progress(percent, step)
        started = self.call.clock.now()
        try:
            reply = await self._send(request, with_tools, percent, step)
        except AgentFailure as failure:
            self._called(started, None, failure.error.as_dict(), messages)
            raise
        except asyncio.CancelledError:  # the invoke's timeout stopped the request
            stopped = {"code": "CancelledError", "message": "stopped while waiting", "details": {}}
            self._called(started, None, stopped, messages)
            raise
        if "response_format" in request:
            strict = bool(request["response_format"].get("json_schema", {}).get("strict"))
            reply.answer_format = "json_schema_strict" if strict else "json_schema"
        self.rounds += 1
        estimated = reply.input_tokens < 0
        if estimated:
            reply.input_tokens = prompt_estimate
            reply.output_tokens = estimate_tokens(reply.content + "".join(c.arguments for c in reply.tool_calls))
            reply.estimated = True
        self._called(started, reply, None, messages)
        self.call.charge_tokens(reply.input_tokens, reply.output_tokens, estimated=estimated)
        if reply.finish_reason == "length" and limited:
            self._budget_cut(limit)
        return reply

    async def _send(self, request: dict[str, Any], with_tools: bool, percent: int, step: str) -> ChatReply:
        """``request`` with retries; sent once more without ``response_format`` when the
        server refuses it (see ``complete``)."""
        try:
            return await self._with_retries(request, percent, step)
        except ResponseFormatRefused as refused:
            del request["response_format"]
            try:
                reply = await self._with_retries(request, percent, step)
            except AgentFailure as failure:
                if failure.error.details.get("status") != refused.status:  # else: not about response_format
                    self._note_refusal(refused, with_tools)
                raise
            self._note_refusal(refused, with_tools)
            return reply

    def _called(
        self, started: float, reply: ChatReply | None, error: dict[str, Any] | None, messages: list[dict[str, Any]]
    ) -> None:
        """Emit the ``ModelCalled`` event of one request (``messages``) that began at
        ``started`` (clock s); with ``capture_content`` the messages and the answer go in it."""
        fields: dict[str, Any] = {"error": error}
        if reply is not None:
            fields = {
                "input_tokens": reply.input_tokens,
                "output_tokens": reply.output_tokens,
                "estimated": reply.estimated,
                "finish_reason": reply.finish_reason,
                "answer_format": reply.answer_format,
                "tool_calls": tuple(c.name for c in reply.tool_calls),
                "response_model": reply.response_model,
                "response_id": reply.response_id,
            }
        if self.settings.capture_content:
            fields["input_messages"] = tuple(dict(m) for m in messages)
            fields["output_message"] = reply.assistant_message() if reply is not None else None
        self.call.port.emit(
            ModelCalled,
            site=self.call.site,
            model=self.options.model,
            endpoint=self.options.endpoint.label,
            round=self.rounds if reply is not None else self.rounds + 1,
            started_at=started,
            **fields,
        )

    def _note_refusal(self, refused: ResponseFormatRefused, with_tools: bool) -> None:
        """Remember that this endpoint refuses ``response_format`` and say so."""
        endpoint = self.options.endpoint
        self.structured.remember_refusal(endpoint.name, endpoint.base_url, with_tools)
        functions = " with functions offered" if with_tools else ""
        message = (
            f"the model server at {endpoint.label} refused response_format{functions} ({refused.status}: "
            f"{refused.detail}); answers are asked for in the prompt only from now on"
        )
        logger.warning("%s", message)
        self.call.context.errors.append(
            {
                "code": str(ErrorCode.EXECUTOR_ERROR),
                "message": message,
                "details": {
                    "reason": "response_format_unsupported",
                    "recovered": True,
                    "endpoint": endpoint.label,
                    "status": refused.status,
                    "with_functions": with_tools,
                },
            }
        )

    def _budget_cut(self, limit: int) -> None:
        """The answer stopped at the ``limit`` tokens the budget left: it would exceed it."""
        task = self.call.task
        message = (
            f"the model's answer needs more than the {limit} tokens left of the task's budget "
            f"({task.tokens_used}/{task.token_budget} used)"
        )
        self.call.port.alert(
            "budget",
            "warning",
            f"task {task.task_id}: {message}",
            task_id=task.task_id,
            role=self.call.role,
            tokens_used=task.tokens_used,
            token_budget=task.token_budget,
        )
        raise AgentFailure(
            ErrorCode.BUDGET_EXCEEDED,
            message,
            {"token_budget": task.token_budget, "tokens_used": task.tokens_used, "answer_limit": limit},
            retryable=False,
        )

    async def _with_retries(self, request: dict[str, Any], percent: int, step: str) -> ChatReply:
        clock = self.call.clock
        attempts = self.settings.max_retries + 1
        endpoint = self.options.endpoint.label
        for attempt in range(attempts):
            left = self.time_left()
            if left <= 0:
                raise AgentFailure(
                    ErrorCode.TIMEOUT,
                    f"no time left to ask the model at {endpoint}",
                    {"endpoint": endpoint},
                    retryable=False,
                )
            try:
                if self.options.stream:
                    return await self._streamed(request, min(self.settings.request_timeout_s, left), percent, step)
                return await self._plain(request, min(self.settings.request_timeout_s, left))
            except openai.APIStatusError as exc:
                if "response_format" in request and refuses_response_format(exc.status_code, _error_text(exc)):
                    detail = redact(_error_text(exc), self._secrets)[:300]
                    raise ResponseFormatRefused(exc.status_code, detail) from None
                failure = self._status_failure(exc, attempt + 1)
                delay = self._retry_delay(exc, attempt)
            except (openai.APIConnectionError, httpx2.TransportError) as exc:
                kind = "timed out" if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException) else "failed"
                failure = AgentFailure(
                    ErrorCode.UNAVAILABLE,
                    f"the connection to the model at {endpoint} {kind} ({attempt + 1} attempt(s))",
                    {"endpoint": endpoint, "attempts": attempt + 1, "reason": f"connection_{kind.replace(' ', '_')}"},
                    retryable=False,
                )
                delay = self._backoff(attempt)
            except openai.APIError as exc:  # an error event inside a stream
                raise self._failure(ErrorCode.EXECUTOR_ERROR, f"the model server reported: {exc.message}") from None
            if delay is None or attempt + 1 >= attempts:
                raise failure from None
            if delay >= self.time_left():
                failure.error.details["reason"] = "retry_after_exceeds_deadline"
                raise AgentFailure(
                    failure.error.code,
                    f"{failure.error.message}; waiting {delay:.1f} s more would pass the deadline",
                    failure.error.details,
                    retryable=False,
                ) from None
            self.call.progress(percent, f"{step}: {failure.error.message}; retrying in {delay:.1f} s")
            await clock.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, code: ErrorCode, message: str, **details: Any) -> AgentFailure:
        return AgentFailure(
            code,
            redact(message, self._secrets)[:500],
            {"endpoint": self.options.endpoint.label, **details},
            retryable=False,
        )

    def _status_failure(self, exc: openai.APIStatusError, attempts: int) -> AgentFailure:
        status = exc.status_code
        detail = redact(_error_text(exc), self._secrets)[:300]
        where = self.options.endpoint.label
        if status == 429 or status >= 500 or status in RETRY_STATUSES:
            reason = "rate limited" if status == 429 else "unavailable"
            return self._failure(
                ErrorCode.UNAVAILABLE,
                f"the model at {where} answered {status} ({reason}) {attempts} time(s): {detail}",
                status=status,
                attempts=attempts,
            )
        if status in (401, 403):
            message = f"the model server at {where} refused the API key ({status}): {detail}"
        elif status == 404:
            message = f"the model server at {where} has no model {self.options.model!r} or no chat API (404): {detail}"
        else:
            message = f"the model server at {where} refused the request ({status}): {detail}"
        return self._failure(ErrorCode.EXECUTOR_ERROR, message, status=status)

    def _retry_delay(self, exc: openai.APIStatusError, attempt: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when it must not be retried."""
        status = exc.status_code
        headers = exc.response.headers
        should = headers.get("x-should-retry")
        if should == "false" or (should != "true" and status not in RETRY_STATUSES and status < 500):
            return None
        for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
            value = headers.get(name)
            if value is None:
                continue
            try:
                seconds = float(value) / divisor
            except ValueError:
                continue
            if seconds >= 0 and seconds == seconds:  # not NaN
                return seconds
        return self._backoff(attempt)

    @staticmethod
    def _backoff(attempt: int) -> float:
        return min(BACKOFF_BASE_S * 2**attempt, BACKOFF_MAX_S) * (1 - 0.25 * random.random())

    # -- transports -------------------------------------------------------------
    async def _plain(self, request: dict[str, Any], timeout: float) -> ChatReply:
        assert self._client is not None
        async with self._client.chat.completions.with_streaming_response.create(**request, timeout=timeout) as response:
            body = bytearray()
            async for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_RESPONSE_BYTES:
                    raise self._failure(
                        ErrorCode.EXECUTOR_ERROR, f"the model's response exceeded {MAX_RESPONSE_BYTES:,} bytes"
                    )
        try:
            data = loads(body, max_bytes=MAX_RESPONSE_BYTES, strict=False)
        except JsonRefused as exc:
            raise self._failure(
                ErrorCode.EXECUTOR_ERROR, f"the model server answered something that is not JSON ({exc})"
            ) from None
        if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not data["choices"]:
            raise self._failure(ErrorCode.EXECUTOR_ERROR, "the model server's answer has no choices")
        choice: dict[str, Any] = data["choices"][0] if isinstance(data["choices"][0], dict) else {}
        message: dict[str, Any] = choice["message"] if isinstance(choice.get("message"), dict) else {}
        calls = []
        for index, raw in enumerate(message.get("tool_calls") or []):
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict):
                continue
            calls.append(
                ToolCallRequest(
                    str(raw.get("id") or f"call_{index}"), str(function.get("name") or ""), _arguments(function)
                )
            )
        reply = ChatReply(_text(message.get("content")), calls, choice.get("finish_reason"), -1, -1, False)
        reply.response_id, reply.response_model = _optional_text(data.get("id")), _optional_text(data.get("model"))
        self._check_size(reply)
        return _with_usage(reply, data.get("usage"))

    async def _streamed(self, request: dict[str, Any], timeout: float, percent: int, step: str) -> ChatReply:
        assert self._client is not None
        stream = await self._client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}, timeout=timeout
        )
        content: list[str] = []
        size = 0
        reported = 0
        calls: dict[int, dict[str, str]] = {}
        finish: str | None = None
        usage: Any = None
        answered: dict[str, str | None] = {"id": None, "model": None}
        async with stream:
            async for chunk in stream:
                data = chunk.to_dict() if hasattr(chunk, "to_dict") else dict(chunk)
                if data.get("usage"):
                    usage = data["usage"]
                _note_identity(answered, data)
                for choice in data.get("choices") or []:
                    if choice.get("index", 0) != 0:
                        continue
                    delta = choice.get("delta") or {}
                    text = _text(delta.get("content"))
                    if text:
                        content.append(text)
                        size += len(text)
                    for position, raw in enumerate(delta.get("tool_calls") or []):
                        slot = calls.setdefault(
                            raw.get("index", position) if isinstance(raw.get("index"), int) else position,
                            {"id": "", "name": "", "arguments": ""},
                        )
                        if raw.get("id"):
                            slot["id"] = raw["id"]
                        function = raw.get("function") or {}
                        name = function.get("name") or ""
                        if name and slot["name"] != name:
                            slot["name"] += name
                        piece = function.get("arguments")
                        if isinstance(piece, dict):
                            piece = json.dumps(piece)
                        if piece:
                            slot["arguments"] += piece
                            size += len(piece)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
                if size > MAX_ANSWER_CHARS:
                    raise self._failure(
                        ErrorCode.EXECUTOR_ERROR, f"the model's answer exceeded {MAX_ANSWER_CHARS:,} characters"
                    )
                if size - reported >= STREAM_PROGRESS_CHARS:
                    reported = size
                    tail = "".join(content)[-80:].replace("\n", " ").strip()
                    label = f"{step}: {size:,} characters received" + (f" …{tail}" if tail else "")
                    self.call.progress(percent, label[:200])
        calls_list = [
            ToolCallRequest(slot["id"] or f"call_{index}", slot["name"], slot["arguments"])
            for index, slot in sorted(calls.items())
        ]
        reply = ChatReply("".join(content), calls_list, finish, -1, -1, False)
        reply.response_id, reply.response_model = answered["id"], answered["model"]
        return _with_usage(reply, usage)

    def _check_size(self, reply: ChatReply) -> None:
        size = len(reply.content) + sum(len(c.arguments) for c in reply.tool_calls)
        if size > MAX_ANSWER_CHARS:
            raise self._failure(
                ErrorCode.EXECUTOR_ERROR, f"the model's answer exceeded {MAX_ANSWER_CHARS:,} characters"
            )


class ResponseFormatRefused(Exception):
    """The server refused a request because of its ``response_format`` (status, redacted
    detail); ``ModelChat.complete`` sends the request again without it."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail


def _text(value: Any) -> str:
    """Message content as text (some servers send a list of ``{type: text, text}`` parts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text", "") for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _note_identity(answered: dict[str, str | None], chunk: Mapping[str, Any]) -> None:
    """Keep the first ``id`` and ``model`` a streamed answer's chunks name."""
    for key in ("id", "model"):
        answered[key] = answered[key] or _optional_text(chunk.get(key))


def _optional_text(value: Any) -> str | None:
    """A server-given identifier (a completion's ``id`` or ``model``) as text, at most 200
    characters; None when it is absent, empty or not a string."""
    return value[:200] if isinstance(value, str) and value else None


def _arguments(function: Mapping[str, Any]) -> str:
    value = function.get("arguments")
    if isinstance(value, dict):  # some servers send an object instead of JSON text
        return json.dumps(value, ensure_ascii=False)
    return value if isinstance(value, str) else ""


def _with_usage(reply: ChatReply, usage: Any) -> ChatReply:
    """Fill in token counts from a ``usage`` object; -1 means the server reported none."""
    if isinstance(usage, Mapping):
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        if isinstance(prompt, int) and isinstance(completion, int) and prompt >= 0 and completion >= 0:
            reply.input_tokens, reply.output_tokens = prompt, completion
    return reply


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return error["message"]
        if isinstance(error, str):
            return error
    return exc.message or f"HTTP {exc.status_code}"

"""What an executor gets for one capability call: ``ExecutionCall`` (docs/architecture.md).

It carries the card, params, the agent's execution context and task, and is the only way
an executor reaches the rest of the system: invoke and hook other agents, use tools under
the tool matrix, charge tokens against the task budget, report progress, read and write
task artifacts, and get the role's rendered prompt. Every such act is recorded. It talks to
the runtime only through ``AgentPort`` (below), which the runtime implements.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import CardSpec, ConfigSnapshot, ToolMode, ToolSpec, prompt_versions
from teamclaw.runtime.context import Artifact, ContextStatus, ExecutionContext, SnapshotType, TaskState, TaskStatus
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.events import ArtifactWritten, CallSite, ContextSnapshot, RuntimeEvent, TaskProgress, ToolUsed
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import HookAck, HookEvent, InvokeRequest, InvokeResult, OperatorAnswer, RoutingStrategy
from teamclaw.runtime.knowledge import (
    DEFAULT_K,
    MAX_QUERY_CHARS,
    MAX_RECORDED,
    KnowledgeHit,
    KnowledgeRetriever,
    query_text,
)
from teamclaw.runtime.messages import AgentMessage, Priority
from teamclaw.runtime.pending import PendingCall
from teamclaw.runtime.progress import AFTER_INVOKE, BEFORE_INVOKE, KNOWLEDGE_FOR
from teamclaw.runtime.schemas import SchemaValidators
from teamclaw.runtime.tools import ExternalTools, ToolHandler, scope_root

ARTIFACT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,119}$")
MAX_ARTIFACT_BYTES = 5_000_000
MAX_RECORDED_TOOL_CHARS = 4000
"""Longest JSON of an external tool's arguments or result kept in the context's messages."""
EXTERNAL_TOOL_TIMEOUT_S = 60.0
"""Longest an external tool call may take when no invoke deadline is nearer (s)."""

log = logging.getLogger(__name__)


class ExecutionCall:
    """One capability call being executed by ``instance`` for ``task``.

    ``pending`` is the invoke attempt being answered (None for a capability a hook names);
    its ``deadline`` bounds the call (see ``time_left``).
    """

    def __init__(
        self,
        port: AgentPort,
        instance: AgentInstance,
        context: ExecutionContext,
        task: TaskState,
        card: CardSpec,
        params: dict[str, Any],
        message: AgentMessage,
        pending: PendingCall | None,
    ) -> None:
        self.port = port
        self.instance = instance
        self.context = context
        self.task = task
        self.card = card
        self.params = params
        self.message = message
        self.pending = pending
        self.progress_reported = False
        self._outstanding = 0
        self.characters_read: dict[str, int] = {}
        """What this call read besides its params, in characters: ``artifact:<name>`` per task
        artifact (``read_artifact``) and ``knowledge`` (the retrieved passages). Token
        estimates count it as the call's input (``executors.offline``)."""
        self.characters_written: dict[str, int] = {}
        """What this call wrote besides its result, in characters: ``artifact:<name>`` per
        artifact (``write_artifact``; a rewrite replaces the count). Token estimates count it
        as the call's output."""
        self.knowledge: list[KnowledgeHit] | None = None
        """The passages ``retrieve_knowledge`` found for the params (None: not asked yet)."""

    def with_card(self, card: CardSpec) -> ExecutionCall:
        """The same call run under another card (a PROVIDER skill's implementation)."""
        return ExecutionCall(
            self.port, self.instance, self.context, self.task, card, self.params, self.message, self.pending
        )

    # -- identity -------------------------------------------------------------
    @property
    def role(self) -> str:
        """The role of the agent executing the call."""
        return self.instance.role

    @property
    def clock(self) -> Clock:
        """The runtime's clock (s)."""
        return self.port.clock

    @property
    def site(self) -> CallSite:
        """Where this call runs (agent, context, capability, the message it serves), as the
        ``ToolUsed`` and ``ModelCalled`` events name it."""
        return CallSite(
            task_id=self.task.task_id,
            project_id=self.task.project_id,
            context_id=self.context.id,
            role=self.instance.role,
            instance_id=self.instance.instance_id,
            capability_id=self.card.capability_id,
            correlation_id=self.message.context.correlation_id,
        )

    def deadline(self, fallback_s: float) -> float:
        """When the call must be answered (clock s): the invoke's deadline, pushed back while
        an operator is asked; ``fallback_s`` from now for a call no invoke waits on."""
        if self.pending is not None:
            return self.pending.deadline
        return self.port.clock.now() + fallback_s

    @property
    def snapshot(self) -> ConfigSnapshot:
        """The config pinned by the task at its start (PRD §4.8)."""
        return self.task.snapshot

    @property
    def project_dir(self) -> Path | None:
        directory = self.snapshot.project_dir or self.port.default_project_dir
        return Path(directory) if directory else None

    # -- talking to other agents ----------------------------------------------
    async def invoke(
        self,
        capability_id: str,
        params: dict[str, Any] | None = None,
        *,
        target_role: str | None = None,
        target_instance_id: str | None = None,
        routing: str | None = None,
        timeout: float | None = None,
        priority: str = "normal",
    ) -> InvokeResult:
        """Invoke another agent's capability as this agent (matrix, schemas, routing apply).

        The context is snapshotted before and after (PRD §4.6) and shows
        ``waiting_response`` while calls are outstanding. Never raises for runtime failures:
        inspect ``result.success`` / ``result.error``.
        """
        request = InvokeRequest(
            capability_id,
            dict(params or {}),
            target_role=target_role,
            target_instance_id=target_instance_id,
            routing=RoutingStrategy(routing)
            if routing
            else (RoutingStrategy.BY_INSTANCE if target_instance_id else None),
            timeout=timeout,
            priority=Priority.parse(priority),
        )
        port = self.port
        port.snapshot(self.context, SnapshotType.AUTO, BEFORE_INVOKE % {"capability": capability_id})
        self._outstanding += 1
        self.context.status = ContextStatus.WAITING_RESPONSE
        port.context_changed(self.context)
        try:
            result = await port.invoke_as(self, request)
        finally:
            self._outstanding -= 1
            if not self._outstanding and self.context.status == ContextStatus.WAITING_RESPONSE:
                self.context.status = ContextStatus.EXECUTING
        label = "ok" if result.success else f"{result.error.code if result.error else 'failed'}"
        port.snapshot(self.context, SnapshotType.AUTO, AFTER_INVOKE % {"capability": capability_id}, label)
        port.context_changed(self.context)
        return result

    async def hook(
        self,
        event_type: str,
        payload: dict[str, Any] | None = None,
        *,
        target_roles: list[str] | None = None,
        broadcast: bool = False,
        capability_id: str | None = None,
    ) -> list[HookAck]:
        """Fire a hook from this agent; returns the receivers' acks (PRD §4.3)."""
        return await self.port.hook_as(
            self, HookEvent(event_type, dict(payload or {}), broadcast, target_roles, capability_id)
        )

    # -- tools ----------------------------------------------------------------
    async def use_tool(self, tool: str, **args: Any) -> Any:
        """Use ``tool`` under the tool matrix (PRD §4.7): ``deny`` raises
        AgentFailure(tool_denied); ``confirm`` waits for an operator (``waiting_user``).
        Each use, done or failed, is a ``ToolUsed`` event with its start time.

        Every use is recorded once in the context's ``input_context.messages`` as
        ``{type: "tool", from, tool, mode, outcome, args, timestamp (ms)}``, ``outcome`` being
        ``used``, ``denied`` (the matrix refused it), ``rejected`` (the operator did not
        approve) or ``failed`` (the tool raised); the tool matrix's what-if counts these
        (``monitoring.whatif``). A built-in tool's ``args`` leave out file ``content``; a tool
        of an external source (``snapshot.tool_specs``, ``mcp:<source>/<tool>``, run on
        ``port.external_tools``) is recorded with its arguments and its ``result`` or
        ``error`` and ``duration_ms``, as JSON cut to MAX_RECORDED_TOOL_CHARS characters."""
        started = self.port.clock.now()
        mode = self.snapshot.tool_mode(self.role, tool)
        external = tool in self.snapshot.tool_specs
        reference: dict[str, Any] = {
            "type": "tool",
            "from": self.role,
            "tool": tool,
            "mode": str(mode),
            "outcome": "used",
            "args": _recorded(args) if external else {k: v for k, v in args.items() if k != "content"},
            "timestamp": self.port.clock.now_ms(),
        }
        error: dict[str, Any] | None = None
        try:
            return await self._run_tool(tool, mode, args, reference)
        except AgentFailure as failure:
            error = failure.error.as_dict()
            raise
        except BaseException as exc:  # a crashing tool, or the invoke's timeout stopping it
            error = {"code": type(exc).__name__, "message": str(exc)[:300], "details": {}}
            raise
        finally:
            if error is not None and reference["outcome"] == "used":
                reference["outcome"] = "failed"
            if external and error is not None:
                reference["error"] = error
            self.context.add_message(reference)
            if external:
                self.port.context_changed(self.context)
            # A snapshot per tool use (issue 30): a replay step on it shows what it did.
            self.port.snapshot(self.context, SnapshotType.AUTO, f"tool {tool}", reference["outcome"])
            self.port.emit(ToolUsed, site=self.site, tool=tool, mode=str(mode), started_at=started, error=error)

    async def _run_tool(self, tool: str, mode: ToolMode, args: dict[str, Any], reference: dict[str, Any]) -> Any:
        if mode == ToolMode.DENY:
            reference["outcome"] = "denied"
            raise AgentFailure(
                ErrorCode.TOOL_DENIED,
                f"{self.role} may not use {tool} (tool permission matrix)",
                {"tool": tool, "role": self.role},
                retryable=False,
            )
        journal = self.task.journal
        if journal is not None and journal.holds_rejected(self.role, tool):
            reference["outcome"] = "rejected"
            raise AgentFailure(
                ErrorCode.TOOL_DENIED,
                f"the operator rejected {tool} for {self.role} on task {journal.fork_of}; the fork keeps that decision",
                {"tool": tool, "role": self.role, "rejected_on": journal.fork_of},
                retryable=False,
            )
        if mode == ToolMode.CONFIRM:
            approved = await self.port.request_confirmation(self, tool, args)
            if not approved:
                reference["outcome"] = "rejected"
                raise AgentFailure(
                    ErrorCode.TOOL_DENIED,
                    f"the operator did not approve {tool}",
                    {"tool": tool, "role": self.role},
                    retryable=False,
                )
        spec = self.snapshot.tool_specs.get(tool)
        if spec is not None:
            return await self._use_external(spec, args, reference)
        handler = self.port.tools.get(tool)
        if handler is None:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"tool {tool} has no implementation on this server",
                {"tool": tool},
                retryable=False,
            )
        root = self.project_dir
        if root is None:
            raise AgentFailure(
                ErrorCode.TOOL_DENIED, "this project has no working directory", {"tool": tool}, retryable=False
            )
        scope = self.snapshot.constraints_for(self.role).file_scope or "."
        root.mkdir(parents=True, exist_ok=True)
        scoped_root = scope_root(root, scope)
        return await handler(scoped_root, args)

    async def _use_external(self, spec: ToolSpec, args: dict[str, Any], reference: dict[str, Any]) -> Any:
        """Run an external tool (MCP, issue 16) the matrix let through, within what is left of
        the invoke's deadline (at most EXTERNAL_TOOL_TIMEOUT_S); its result and duration go in
        ``reference`` (``use_tool`` records it, and the error when it fails)."""
        runner = self.port.external_tools
        if runner is None:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"tool {spec.name} has no implementation on this server",
                {"tool": spec.name},
                retryable=False,
            )
        now = self.port.clock.now()
        timeout_s = max(1.0, min(EXTERNAL_TOOL_TIMEOUT_S, self.deadline(EXTERNAL_TOOL_TIMEOUT_S) - now))
        try:
            result = await runner.run(spec, args, timeout_s)
        finally:
            reference["duration_ms"] = round((self.port.clock.now() - now) * 1000, 1)
        reference["result"] = _recorded(result)
        return result

    async def ask_operator(
        self, what: str, request: dict[str, Any], *, timeout_s: float, question: str
    ) -> OperatorAnswer | None:
        """Wait for an operator's answer (PRD §4.6 ``waiting_user``, with ``question`` in
        ``pending_questions``): ``what`` names the request (``interview``, ``decisions``,
        ``next_action``); ``request`` is what the operator is shown, with the JSON Schema its
        answer must match under ``answer_schema``. Returns the answer, or None when it expired
        after ``timeout_s`` (s), was refused, or the task was cancelled. A resumed task gets an
        answer given before the crash at once."""
        return await self.port.ask_operator(self, what, request, timeout_s, question)

    # -- budget ---------------------------------------------------------------
    def ensure_budget(self, expected_tokens: int = 0) -> None:
        """Before a model call: raise AgentFailure(budget_exceeded) when the task's budget
        (tokens, PRD §4.7) cannot cover ``expected_tokens`` more."""
        task = self.task
        if task.tokens_used + expected_tokens > task.token_budget:
            self._budget_stop(expected_tokens)

    def charge_tokens(
        self, input_tokens: int, output_tokens: int, *, estimated: bool = False, enforce: bool = True
    ) -> None:
        """After a model call: add usage (tokens) to the context and the task; raise
        AgentFailure(budget_exceeded) once the task has spent more than its budget (PRD §4.7).
        ``estimated`` marks the counts as estimates; ``enforce`` False records them without
        stopping the task: the offline brain calls no model and spends nothing, so its
        estimates are reported (marked estimated) but never hold a task to the budget."""
        context = self.context
        context.input_tokens += max(0, int(input_tokens))
        context.output_tokens += max(0, int(output_tokens))
        context.api_calls += 1
        context.tokens_estimated = context.tokens_estimated or estimated
        task = self.task
        task.tokens_used += max(0, int(input_tokens)) + max(0, int(output_tokens))
        task.tokens_estimated = task.tokens_estimated or estimated
        self.port.context_changed(context)
        if not task.ephemeral:
            report_tokens(self.port, task)
        if enforce and task.tokens_used > task.token_budget:
            self._budget_stop(0)

    def _budget_stop(self, expected: int) -> None:
        task = self.task
        self.port.alert(
            "budget",
            "warning",
            f"task {task.task_id} reached its token budget ({task.tokens_used}/{task.token_budget})",
            task_id=task.task_id,
            role=self.role,
            tokens_used=task.tokens_used,
            token_budget=task.token_budget,
        )
        raise AgentFailure(
            ErrorCode.BUDGET_EXCEEDED,
            f"token budget of {task.token_budget} exhausted ({task.tokens_used} used"
            + (f", {expected} more needed)" if expected else ")"),
            {"token_budget": task.token_budget, "tokens_used": task.tokens_used, "expected_tokens": expected},
            retryable=False,
        )

    # -- progress, questions, artifacts --------------------------------------
    def progress(self, percent: int, step: str = "") -> None:
        """Report progress 0-100 and the current step (shown live, PRD §4.6)."""
        self.progress_reported = True
        self.context.progress = max(0, min(100, int(percent)))
        if step:
            self.context.current_step = step
        self.port.context_changed(self.context, at_once=True)

    def ask(self, question: str) -> None:
        """Add a pending question for the operator to the context's output state."""
        self.context.pending_questions.append(question)
        self.port.context_changed(self.context)

    def write_artifact(self, name: str, content: str, content_type: str = "application/json") -> None:
        """Store a task artifact (``review_dev.json``...); a later write replaces it.
        Raises AgentFailure(executor_error) for a bad name or content over 5 MB."""
        if not ARTIFACT_NAME.match(name or ""):
            raise AgentFailure(ErrorCode.EXECUTOR_ERROR, f"bad artifact name {name!r}", retryable=False)
        if len(content.encode("utf-8")) > MAX_ARTIFACT_BYTES:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR, f"artifact {name} exceeds {MAX_ARTIFACT_BYTES} bytes", retryable=False
            )
        now = self.port.clock.now()
        self.characters_written[f"artifact:{name}"] = len(content)
        self.task.artifacts[name] = Artifact(name, content, content_type, self.role, self.context.id, now)
        self.context.generated_artifacts = [a for a in self.context.generated_artifacts if a["name"] != name]
        self.context.generated_artifacts.append(
            {"name": name, "content_type": content_type, "bytes": len(content.encode("utf-8"))}
        )
        self.port.emit(
            ArtifactWritten,
            task_id=self.task.task_id,
            project_id=self.task.project_id,
            name=name,
            content=content,
            content_type=content_type,
            context_id=self.context.id,
            role=self.role,
            instance_id=self.instance.instance_id,
        )
        self.port.context_changed(self.context)

    def read_artifact(self, name: str) -> str | None:
        """Content of a task artifact (None if absent); noted in the context's input artifacts."""
        artifact = self.task.artifacts.get(name)
        if artifact is None:
            return None
        self.characters_read[f"artifact:{name}"] = len(artifact.content)
        if not any(a["name"] == name for a in self.context.artifacts):
            self.context.artifacts.append(
                {"name": name, "content_type": artifact.content_type, "produced_by": artifact.role}
            )
        return artifact.content

    def artifact_names(self) -> list[str]:
        """The names of the task's artifacts, sorted."""
        return sorted(self.task.artifacts)

    # -- prompt ---------------------------------------------------------------
    def system_prompt(self, **variables: Any) -> str:
        """The role's rendered, layered prompt (PRD §4.5) from the task's pinned config; the
        versions rendered are recorded on the context (``ExecutionContext.prompt_versions``)."""
        renderer = self.port.prompt_renderer
        if renderer is not None:
            text = renderer(self.snapshot, self.role, self.task, variables)
            self.context.prompt_versions.update(prompt_versions(self.snapshot.prompts.get(self.role, {})))
            return text
        role = self.snapshot.roles.get(self.role)
        name = role.display_name if role else self.role
        return f"You are the {name} of this team. {role.description if role else ''}".strip()

    # -- knowledge ------------------------------------------------------------
    def input_text(self) -> str:
        """The call's input as text for retrieval: the params' strings (``query_text``), then
        the content of each task artifact a ``*_artifact`` param names (the seed 002 reviewers
        get ``requirement_artifact: requirement.md``, not the document), cut at
        ``MAX_QUERY_CHARS``."""
        parts = [query_text(self.params)]
        for key, value in self.params.items():
            artifact = self.task.artifacts.get(value) if key.endswith("_artifact") and isinstance(value, str) else None
            if artifact is not None and isinstance(artifact.content, str):
                parts.append(artifact.content.strip())
        return "\n".join(p for p in parts if p)[:MAX_QUERY_CHARS]

    async def retrieve_knowledge(self, query: str | None = None, k: int = DEFAULT_K) -> list[KnowledgeHit]:
        """The best ``k`` passages for ``query`` (default: ``input_text``) from the documents
        of this role, of the card's skill and of the task's project (seed 003
        KnowledgeContext), recorded in the context's ``knowledge`` as ``{capability_id,
        message_id, query, chunks}``. Asked once per call for the params: a second ask (the
        offline executor, then a handler) answers from ``knowledge`` and records nothing more.
        When the retriever knows there is no source at all (``nothing_to_search``) nothing is
        asked and nothing recorded.
        A retrieval that found passages is followed by an ``auto`` snapshot (trigger
        ``knowledge for <capability>``), so replay shows them at that step. Empty without a
        retriever or a query; a retriever that fails is a recovered error in the context,
        never the call's failure."""
        if query is None and self.knowledge is not None:
            return self.knowledge
        retriever = self.port.knowledge_retriever
        if retriever is None or _nothing_to_search(retriever):
            if query is None:
                self.knowledge = []
            return []
        text = self.input_text() if query is None else query
        if not text.strip():
            return []
        try:
            hits = await retriever.retrieve(
                role=self.role, project_id=self.task.project_id, skill_id=self.card.skill_id, query=text, k=k
            )
        except Exception as exc:  # knowledge is an aid: the call goes on without it
            self.context.errors.append(
                {
                    "code": str(ErrorCode.EXECUTOR_ERROR),
                    "message": f"knowledge retrieval failed: {type(exc).__name__}: {str(exc)[:300]}",
                    "details": {"reason": "knowledge_unavailable", "recovered": True},
                }
            )
            hits = []
        self.characters_read["knowledge"] = self.characters_read.get("knowledge", 0) + sum(len(h.chunk) for h in hits)
        self.context.knowledge.append(
            {
                "capability_id": self.card.capability_id,
                "message_id": self.message.id,
                "query": text,
                "chunks": [h.state() for h in hits],
            }
        )
        del self.context.knowledge[:-MAX_RECORDED]
        if query is None:
            self.knowledge = hits
        self.port.context_changed(self.context)
        if hits:  # replay shows the state with exactly these passages at this step
            self.port.snapshot(self.context, SnapshotType.AUTO, KNOWLEDGE_FOR % {"capability": self.card.capability_id})
        return hits


def _nothing_to_search(retriever: KnowledgeRetriever) -> bool:
    """The retriever's optional ``nothing_to_search()`` (``teamclaw.runtime.knowledge``): False
    when it has none or it raises (then the call retrieves as usual)."""
    check = getattr(retriever, "nothing_to_search", None)
    if check is None:
        return False
    try:
        return bool(check())
    except Exception:
        log.warning("the knowledge retriever's nothing_to_search() raised; retrieving as usual", exc_info=True)
        return False


def _recorded(value: Any) -> Any:
    """``value`` as recorded: itself when its JSON fits MAX_RECORDED_TOOL_CHARS, else the cut JSON text."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= MAX_RECORDED_TOOL_CHARS:
        return value
    return text[: MAX_RECORDED_TOOL_CHARS - 40] + f"... [cut: {len(text):,} characters]"


PromptRenderer = Callable[[ConfigSnapshot, str, TaskState, dict[str, Any]], str]
"""``(snapshot, role, task, extra_variables) -> system prompt text`` (the prompts app's).
Raises ValueError when a template cannot be rendered."""


class Executor(Protocol):
    """Runs one capability call. Raise AgentFailure for a coded failure; any other
    exception becomes ``executor_error`` for the caller (see ``teamclaw.runtime.executors``)."""

    kind: str

    async def execute(self, call: ExecutionCall) -> dict[str, Any]: ...


class ExecutorLookup(Protocol):
    """Executors by kind (``ExecutorRegistry``)."""

    def get(self, kind: str) -> Executor | None:
        """The executor of ``kind``, None when none is installed."""


def report_tokens(port: AgentPort, task: TaskState) -> None:
    """Emit ``TaskProgress`` for ``task`` now, or, within ``TaskState.TOKEN_PROGRESS_S`` of
    the last one, once that second is over (a burst of calls ends in one event with its
    final count, so a task that then waits for its operator shows what it spent)."""
    if task.tokens_report_pending:
        return
    wait_s = task.tokens_reported_at + task.TOKEN_PROGRESS_S - port.clock.now()
    if wait_s > 0:
        task.tokens_report_pending = True
        asyncio.get_running_loop().call_later(wait_s, _emit_tokens, port, task)
        return
    _emit_tokens(port, task)


def _emit_tokens(port: AgentPort, task: TaskState) -> None:
    task.tokens_report_pending = False
    if task.status != TaskStatus.RUNNING:
        return  # TaskFinished carries the final count
    task.tokens_reported_at = port.clock.now()
    port.emit(
        TaskProgress,
        task_id=task.task_id,
        project_id=task.project_id,
        description=task.description,
        tokens_used=task.tokens_used,
        token_budget=task.token_budget,
        tokens_estimated=task.tokens_estimated,
    )


class AgentPort(Protocol):
    """What an executing agent's ``ExecutionCall`` may ask of the runtime (module docstring)."""

    @property
    def clock(self) -> Clock:
        """The runtime's clock (s)."""

    @property
    def validators(self) -> SchemaValidators:
        """Compiled input/output schemas per card."""

    @property
    def executors(self) -> ExecutorLookup:
        """The installed executors by kind (a PROVIDER skill delegates to them)."""

    @property
    def tools(self) -> Mapping[str, ToolHandler]:
        """Tool implementations by name (``file_read``, ``file_write``...)."""

    @property
    def external_tools(self) -> ExternalTools | None:
        """Runs the tools of external tool sources (MCP, issue 16); None when none are installed."""

    @property
    def prompt_renderer(self) -> PromptRenderer | None:
        """Renders a role's layered prompt (PRD §4.5); None without the prompts app."""

    @property
    def knowledge_retriever(self) -> KnowledgeRetriever | None:
        """Finds passages of the role's and the project's documents (seed 003
        KnowledgeContext); None without the knowledge app."""

    @property
    def default_project_dir(self) -> Path | None:
        """Where file tools work when the project names no folder."""

    async def invoke_as(self, call: ExecutionCall, request: InvokeRequest) -> InvokeResult:
        """Invoke as the agent running ``call`` (matrix, schemas, routing apply)."""

    async def hook_as(self, call: ExecutionCall, event: HookEvent) -> list[HookAck]:
        """Fire a hook as the agent running ``call``."""

    async def request_confirmation(self, call: ExecutionCall, tool: str, args: dict[str, Any]) -> bool:
        """Ask an operator to approve ``tool``; True only when approved (PRD §4.7 ⚠️)."""

    async def ask_operator(
        self, call: ExecutionCall, what: str, request: dict[str, Any], timeout_s: float, question: str
    ) -> OperatorAnswer | None:
        """Wait for an operator's answer to ``request``; None when none came (PRD §4.6)."""

    def context_changed(self, context: ExecutionContext, *, at_once: bool = False) -> None:
        """Note a change of ``context`` (coalesced per loop step unless ``at_once``)."""

    def snapshot(
        self, context: ExecutionContext, snapshot_type: SnapshotType, trigger: str, label: str = ""
    ) -> ContextSnapshot:
        """Record the whole state of ``context`` (PRD §4.6)."""

    def emit(self, event_type: type[RuntimeEvent], /, **fields: Any) -> None:
        """Emit an event of ``event_type`` (an ``ArtifactWritten``...) stamped now."""

    def alert(self, kind: str, severity: str, message: str, **details: Any) -> None:
        """Raise an alert (``budget``, ``failover``...)."""

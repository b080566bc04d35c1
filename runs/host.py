"""The runtime host: one ``Runtime`` per process, on its own thread and event loop.

Django views are synchronous and daphne's consumers live on the server's loop; the runtime
gets a loop of its own so both (and management commands, and tests) reach it the same way:
``host.call(coro)`` from sync code, ``await host.acall(coro)`` from another loop. The host
also owns the recorder (database sink) and subscribes the runtime to ConfigChangeEvents.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, ParamSpec, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections

from capabilities import tool_catalogue
from capabilities.config import add_listener, remove_listener
from knowledge.retrieval import DatabaseRetriever
from monitoring.live_sink import get_live_sink
from monitoring.recorder import RecorderSink
from monitoring.recorder_process import new_recorder
from monitoring.tracing import TraceSink, start_tracing
from prompts.render import system_prompt
from runs import pinned_config
from runs.alerting import start_alert_loop
from runs.connection_closing import ConnectionClosingExecutor
from runs.dispatch import Dispatcher, new_worker_id
from runs.instance_slots import DatabaseSlots
from team.snapshot import build_snapshot
from teamclaw.heap import settle_heap
from teamclaw.runtime import ConfigSnapshot, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.events import (
    ArtifactWritten,
    ConfirmationChanged,
    ContextChanged,
    EventSink,
    MessageSent,
    MessageStatusChanged,
    ModelCalled,
    RuntimeEvent,
    SnapshotTaken,
    TaskFinished,
    TaskProgress,
    TaskStarted,
    ToolUsed,
)
from teamclaw.runtime.executors.chat import ModelSettings
from teamclaw.runtime.executors.http import HttpExecutor
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.executors.plugins import install_entry_point_executors
from teamclaw.runtime.executors.provider import ProviderExecutor
from teamclaw.runtime.mcp_tools import McpTools, resolve_stdio_allowlist
from teamclaw.workflows import register_model_handlers, register_offline_handlers

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")


def build_executors(capture_content: bool = False) -> ExecutorRegistry:
    """The executors of this server (docs/architecture.md §8): ``offline`` and ``openai`` with the
    built-in workflows' brains, ``http`` for plugin capabilities, ``provider`` for seed 003
    PROVIDER skills (failover between implementations) and the installed
    ``teamclaw.executors`` entry points. The default brain is ``settings.TEAMCLAW["EXECUTOR"]``.
    ``capture_content``: the model calls' events carry their messages (traced with content).
    Raises ImproperlyConfigured for a malformed TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS."""
    conf = settings.TEAMCLAW
    offline = OfflineExecutor()
    register_offline_handlers(offline)
    model_settings = dataclasses.replace(ModelSettings.from_mapping(conf), capture_content=capture_content)
    model = OpenAIExecutor(model_settings)
    register_model_handlers(model)
    try:
        http = HttpExecutor(conf["HTTP_EXECUTOR_ALLOWED_HOSTS"])
    except ValueError as exc:
        raise ImproperlyConfigured(f"TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS: {exc}") from None
    registry = ExecutorRegistry({"offline": offline, "openai": model, "http": http}, default=conf["EXECUTOR"])
    registry.register("provider", ProviderExecutor())  # seed 003 PROVIDER skills (failover)
    install_entry_point_executors(registry)
    return registry


def build_runtime(sinks: list[EventSink], *, capture_content: bool = False, **overrides: Any) -> Runtime:
    """A Runtime wired to the database config, the prompts renderer, the executors
    (``build_executors``, ``capture_content`` passed on), the built-in workflows and the MCP
    tool sources' client (``teamclaw.runtime.mcp_tools.McpTools``), with limits from
    ``settings.TEAMCLAW``."""

    def config_source(project_id: str | None) -> ConfigSnapshot:
        # Runs in asyncio.to_thread's pool (ConnectionClosingExecutor, which closes the
        # connection after the job); elsewhere, drop connections past their age first.
        close_old_connections()
        snapshot = build_snapshot(project_id)
        pinned_config.remember(snapshot)  # a task that resumes elsewhere runs on this version again
        return snapshot

    conf = settings.TEAMCLAW
    options: dict[str, Any] = {
        "config_source": config_source,
        "executors": build_executors(capture_content),
        "sinks": sinks,
        "mailbox_capacity": conf["MAILBOX_CAPACITY"],
        "heartbeat_interval_s": conf["HEARTBEAT_INTERVAL_S"],
        "heartbeat_timeout_s": conf["HEARTBEAT_TIMEOUT_S"],
        "confirmation_timeout_s": conf["CONFIRMATION_TIMEOUT_S"],
        "task_timeout_s": conf["TASK_TIMEOUT_S"],
        "prompt_renderer": system_prompt,
        "knowledge_retriever": DatabaseRetriever(),
        "memory_budget_tokens": conf["MEMORY_TOKENS"],
        "default_project_dir": conf["PROJECTS_ROOT"],
        "instance_limit_per_project": conf["INSTANCE_LIMIT_PER_PROJECT"],
        # MCP tool sources (issue 16): the tools the snapshot lists, under both allowlists.
        "external_tools": McpTools(
            resolve_stdio_allowlist(conf["MCP_STDIO_ALLOWLIST"]),
            conf["HTTP_EXECUTOR_ALLOWED_HOSTS"],
            tool_catalogue.source_headers,
        ),
    }
    options.update(overrides)
    return Runtime(**options)


def recorder_mode(worker: str | None) -> str:
    """Where a host of worker kind ``worker`` records (``TEAMCLAW_RECORDER``): ``thread`` or
    ``process`` as set; with ``auto`` (the default) ``process`` for a ``runtime_worker`` (its
    agents keep the GIL to themselves, ``monitoring.recorder_process``) and ``thread`` for the
    embedded server and a terminal run (no child process to start for them)."""
    mode = str(settings.TEAMCLAW["RECORDER"])
    if mode == "auto":
        return "process" if worker == "worker" else "thread"
    return mode


WORKER_THREADS = 4
"""Threads for the runtime's blocking helpers (config snapshots, alert rules)."""


class MutedTasks:
    """An event sink in front of the recorder that drops the events of tasks this process gave
    up (``RuntimeHost.stop``): their worker stopped mid-run, so their record must stay as it was
    for the worker that resumes them, not show them failed by the shutdown."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.task_ids: set[str] = set()

    def publish(self, event: RuntimeEvent) -> None:
        if not self.task_ids or event_task_id(event) not in self.task_ids:
            self.sink.publish(event)


def event_task_id(event: RuntimeEvent) -> str | None:
    """The task an event belongs to (None for instance, alert and config events)."""
    match event:
        case MessageSent(message=message) | MessageStatusChanged(message=message):
            return message.context.task_id
        case ContextChanged(context=context):
            return context.task_id
        case SnapshotTaken(snapshot=snapshot):
            return snapshot.task_id
        case ConfirmationChanged(confirmation=confirmation):
            return confirmation.task_id
        case TaskStarted() | TaskProgress() | TaskFinished() | ArtifactWritten():
            return event.task_id
        case ToolUsed(site=site) | ModelCalled(site=site):
            return site.task_id
    return None


class RuntimeHost:
    """Runs a Runtime on a dedicated thread; see module docstring.

    ``worker`` is the kind of runtime worker it is (``runs.dispatch``): ``embedded`` (the
    server, the default), ``worker`` (``manage.py runtime_worker``) or ``command`` (a terminal run, which
    takes no other tasks); ``None`` for a host without one (tests of the runtime alone).
    """

    def __init__(
        self,
        name: str = "server",
        *,
        worker: str | None = "embedded",
        concurrency: int | None = None,
        **runtime_overrides: Any,
    ) -> None:
        self.name = name
        self.recorder: RecorderSink = new_recorder(recorder_mode(worker))
        self.muted = MutedTasks(self.recorder)
        self.worker_kind = worker
        self.concurrency = concurrency or settings.TEAMCLAW["WORKER_CONCURRENCY"]
        self.dispatcher: Dispatcher | None = None
        self.loop = asyncio.new_event_loop()
        self.runtime: Runtime | None = None
        self.worker_id = new_worker_id()
        self.slots: DatabaseSlots | None = None
        """The instance slots in the database of a runtime worker (``runs.instance_slots``):
        a role's ``max_concurrent_instances`` holds across workers. A host without a worker
        keeps the runtime's own count (it renews no lease)."""
        if worker is not None and "instance_slots" not in runtime_overrides:
            self.slots = DatabaseSlots(
                self.worker_id, lease_s=settings.TEAMCLAW["LEASE_S"], retry_s=settings.TEAMCLAW["WORKER_POLL_MS"] / 1000
            )
            runtime_overrides = {**runtime_overrides, "instance_slots": self.slots}
        self._overrides = runtime_overrides
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"teamclaw-runtime-{name}", daemon=True)
        self._workers = ConnectionClosingExecutor(
            max_workers=WORKER_THREADS, thread_name_prefix=f"teamclaw-config-{name}"
        )
        self.alert_loop: Future[None] | None = None
        self.tracing: TraceSink | None = None
        """The OpenTelemetry span builder when OTLP export is configured (``monitoring.tracing``)."""

    def start(self) -> RuntimeHost:
        """Start the recorder and the runtime's thread, follow config changes, and start the
        alert rules' loop; with ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT`` set, the runtime's
        events also become OpenTelemetry spans (``monitoring.tracing``). Raises RuntimeError
        when the runtime cannot start, ImproperlyConfigured for a bad OTLP endpoint."""
        self.tracing = start_tracing(self.worker_kind)
        settle_heap()  # start-up is over: later collections skip its heap (teamclaw.heap)
        # The live sink publishes each batch to the browsers after the recorder committed it.
        self.recorder.add_listener(get_live_sink().on_batch)
        self.recorder.start()
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise RuntimeError("the runtime failed to start") from self._error
        if self.worker_kind is not None:
            self.dispatcher = Dispatcher(
                self, self.worker_kind, self.concurrency, claim=self.worker_kind != "command", worker_id=self.worker_id
            )
            self.call(self.dispatcher.start(), timeout=30)
        add_listener(self.on_config_change)
        self.alert_loop = start_alert_loop(self)
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        # The runtime's blocking helpers (config snapshots read the database) run on the host's
        # own worker threads, each job closing its connections when it ends.
        self.loop.set_default_executor(self._workers)
        try:
            sinks: list[EventSink] = [self.muted] if self.tracing is None else [self.muted, self.tracing]
            capture = self.tracing is not None and self.tracing.capture_content
            self.runtime = build_runtime(sinks, capture_content=capture, **self._overrides)
            self.loop.run_until_complete(self.runtime.start())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        """Stop the alert loop, the runtime (its last events recorded) and the recorder, and
        close the database connections of the host's threads. Tasks still running here are
        given up, not failed: their events stop being recorded and their leases end at once,
        so another worker (or the next start) resumes them (``runs.dispatch``)."""
        remove_listener(self.on_config_change)
        if self.alert_loop is not None:
            self.alert_loop.cancel()
        given_up: list[str] = []
        if self.dispatcher is not None and self.loop.is_running():
            given_up = self.call(self.dispatcher.stop(), timeout=30)
            self.muted.task_ids.update(given_up)
        if self.runtime is not None and self.loop.is_running():
            self.call(self.runtime.stop(), timeout=30)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        if not self.recorder.flush():
            log.error("the recorder did not write everything before the host stopped")
        self.recorder.stop()
        if self.tracing is not None:
            self.tracing.close()  # spans still open end here, marked interrupted; the rest is exported
        if self.dispatcher is not None:
            self._workers.submit(self.dispatcher.release, given_up).result(30)
        if self.slots is not None:
            self.slots.close()
        # Every job closed its own connections (ConnectionClosingExecutor): none is left open
        # on these threads (PostgreSQL refuses to drop a database in use).
        self._workers.shutdown(wait=True)

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the runtime loop; returns a concurrent Future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the runtime loop and wait (from synchronous code) for its result."""
        return self.submit(coro).result(timeout)

    async def acall(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the runtime loop and await it from another event loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def start_blocking(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run the blocking ``fn(*args)`` (database work) on one of the host's threads,
        without waiting; an exception is logged."""

        def run() -> None:
            try:
                fn(*args)
            except Exception:
                log.exception("a blocking job of the runtime host failed")

        try:
            self._workers.submit(run)
        except RuntimeError:  # the host is stopping: run it here rather than lose it
            run()

    def mute(self, task_id: str) -> None:
        """Record nothing more of task ``task_id`` (``MutedTasks``)."""
        self.muted.task_ids.add(task_id)

    def unmute(self, task_id: str) -> None:
        """Record task ``task_id`` again (this process claimed it anew; ``MutedTasks``)."""
        self.muted.task_ids.discard(task_id)

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Run a plain function on the runtime loop, without waiting."""
        self.loop.call_soon_threadsafe(fn, *args)

    def on_config_change(self, event: dict[str, Any]) -> None:
        if self.runtime is not None:
            self.call_soon(self.runtime.apply_config_change, event)


_host: RuntimeHost | None = None
_host_lock = threading.Lock()


def get_host() -> RuntimeHost:
    """The process's RuntimeHost, started on first use. With ``TEAMCLAW_RUNTIME=embedded``
    (the default) it is also a runtime worker that claims tasks (``runs.dispatch``)."""
    global _host
    with _host_lock:
        if _host is None:
            embedded = settings.TEAMCLAW["RUNTIME"] == "embedded"
            _host = RuntimeHost(worker="embedded" if embedded else None).start()
        return _host


def current_host() -> RuntimeHost | None:
    """The process's RuntimeHost if one was started, without starting one."""
    return _host


def executor_problems() -> list[str]:
    """Executors the running host could not install (a broken plugin); [] before it starts."""
    host = _host
    if host is None or host.runtime is None:
        return []
    return list(host.runtime.executors.problems)


def reset_host() -> None:
    """Stop and forget the process's host (tests, management commands)."""
    global _host
    with _host_lock:
        if _host is not None:
            _host.stop()
            _host = None

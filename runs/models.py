"""The runtime workers of a deployment and the commands sent to them (docs/architecture.md §3).

A worker is any process that runs agents: the embedded server of ``make run``, a
``manage.py runtime_worker``, a terminal's ``run_workflow``. Each registers a row, beats it
every few seconds, and owns tasks through a lease on ``monitoring.Task``. A command (an
operator's instruction, a manual snapshot, a cancel) for a task is a row here, addressed to
the task rather than to a process: whichever worker owns the task when it looks takes it.
Tool confirmations need no command: the decision is written on the confirmation record
itself, and the owner applies it (``runs.dispatch``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class RuntimeWorker(models.Model):
    """A process that runs agents, as it last reported itself."""

    KINDS = [("embedded", "embedded server"), ("worker", "runtime worker"), ("command", "terminal run")]

    id = models.CharField(max_length=80, primary_key=True)
    kind = models.CharField(max_length=10, choices=KINDS)
    hostname = models.CharField(max_length=255)
    pid = models.PositiveIntegerField()
    concurrency = models.PositiveIntegerField()
    """How many tasks it runs at once at most."""
    started_at = models.DateTimeField()
    heartbeat_at = models.DateTimeField(db_index=True)
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-heartbeat_at"]

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"


class RuntimeCommand(models.Model):
    """A command for a running task, waiting for (or answered by) the worker that owns it.

    ``kind``: ``instruction`` ``{context_id, text, author}``, ``snapshot`` ``{context_id,
    label}``, ``cancel`` ``{reason}``; ``invoke`` and ``hook`` (``runs.outside_calls``) come
    from the API, with the ``task_id`` they join or ``""`` (then any worker takes them).
    ``result`` is the runtime's answer; ``error`` is ``{status, detail, errors?, extra?}``
    when the worker refused it (409: the context is not running).
    """

    KINDS = [
        ("instruction", "instruction"),
        ("snapshot", "snapshot"),
        ("cancel", "cancel"),
        ("invoke", "invoke"),
        ("hook", "hook"),
    ]
    STATUSES = [("pending", "pending"), ("done", "done"), ("failed", "failed")]

    task_id = models.CharField(max_length=64, blank=True, db_index=True)
    kind = models.CharField(max_length=12, choices=KINDS)
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=8, choices=STATUSES, default="pending", db_index=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    taken_by = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    done_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.kind} for {self.task_id} ({self.status})"


class PinnedConfig(models.Model):
    """The configuration a version of one project had, as the runtime saw it
    (``teamclaw.runtime.snapshot_document``), stored once per (version, project) by the first
    worker that builds it. A task resumed after a crash runs on its version's document, so a
    change saved while it was between workers does not reach it (PRD §4.8)."""

    version = models.PositiveBigIntegerField()
    project_key = models.CharField(max_length=64, blank=True, help_text="The project's slug; blank = global.")
    document = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "project_key"], name="pinned_config_once")]

    def __str__(self) -> str:
        return f"config v{self.version} ({self.project_key or 'global'})"


class InstanceSlot(models.Model):
    """One of a role's ``max_concurrent_instances`` slots (PRD §4.7: 4 instances per role),
    shared by every runtime worker (``runs.instance_slots``; issue 13). A worker takes a free
    slot (``owner`` blank, or its lease expired: its worker stopped) before it spawns an
    instance of the role, renews it with its task leases, and frees it when the instance is
    retired. ``wanted_at`` is when another worker last waited for a slot of the role: the
    holder then retires the instance once it is idle."""

    role = models.CharField(
        max_length=110,
        help_text="The role, or <role>@<project slug> for a project that shares its instances "
        "(teamclaw.runtime.scopes.slot_key).",
    )
    index = models.PositiveSmallIntegerField(help_text="0 .. max_concurrent_instances - 1")
    owner = models.CharField(max_length=80, blank=True, help_text="The RuntimeWorker holding it; blank = free.")
    instance_id = models.CharField(max_length=100, blank=True, help_text="The instance spawned in it.")
    acquired_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    wanted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["role", "index"]
        constraints = [models.UniqueConstraint(fields=["role", "index"], name="instance_slot_once")]
        indexes = [models.Index(fields=["owner"], name="instance_slot_owner")]

    def __str__(self) -> str:
        return f"{self.role} slot {self.index} ({self.owner or 'free'})"


class IdempotentCall(models.Model):
    """An outside call made with an ``Idempotency-Key`` header (``runs.idempotency``): the
    first request's answer, returned again to a retry with the same key and body.

    ``user`` and ``key`` name it (keys are per user); ``fingerprint`` is the SHA-256 of the
    request (the endpoint and its body as canonical JSON); ``status`` is the HTTP status
    answered and ``body`` the JSON answered, both null while the first request still runs.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotent_call_key")]
        indexes = [models.Index(fields=["created_at"], name="idempotent_call_created")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status or 'running'})"

"""What the recorder stores from the runtime's events; replay reads only these (docs/architecture.md §4).

Ids are the runtime's 32-hex ids, so a row can be written the moment its event arrives.
Times of runtime origin are stored as datetimes (UTC); message times also keep the PRD's
epoch milliseconds.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from capabilities.models import Project


class Task(models.Model):
    """A unit of work: a workflow run, or the short task around a standalone invoke/hook."""

    STATUSES = [
        ("queued", "queued"),
        ("running", "running"),
        ("completed", "completed"),
        ("failed", "failed"),
        ("terminated", "terminated"),
    ]
    KINDS = [("task", "task"), ("invoke", "invoke"), ("hook", "hook")]

    id = models.CharField(max_length=64, primary_key=True)
    kind = models.CharField(max_length=8, choices=KINDS, default="task")
    workflow = models.CharField(max_length=64, blank=True)
    title = models.CharField(max_length=300, blank=True)
    description = models.TextField(blank=True)
    input_markdown = models.TextField(blank=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, to_field="slug")
    status = models.CharField(max_length=12, choices=STATUSES, default="running", db_index=True)
    error = models.JSONField(null=True, blank=True)
    executor = models.CharField(max_length=40, blank=True)
    config_version = models.PositiveBigIntegerField(default=0)
    token_budget = models.PositiveIntegerField(default=0)
    tokens_used = models.PositiveIntegerField(default=0)
    prompt_enhancement = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    run_spec = models.JSONField(null=True, blank=True)
    """What any worker needs to start (or resume) the task: ``{capability_id, params,
    entry_role, description, prompt_enhancement}``; None for tasks no worker may take
    (a standalone invoke's short task, records from before workers)."""
    owner = models.CharField(max_length=80, blank=True, db_index=True)
    """The runtime worker running the task (``runs.RuntimeWorker.id``), while it holds the lease."""
    lease_expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    """Until when ``owner`` holds the task; renewed by its heartbeat (docs/architecture.md §3)."""
    attempt = models.PositiveIntegerField(default=0)
    """How many times a worker started the task (2 and more: resumed after a crash)."""
    resumed_steps = models.PositiveIntegerField(default=0)
    """Invokes the latest attempt answered from the record instead of executing them again."""

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title or self.id


class Artifact(models.Model):
    """A named output of a task (review_dev.json, requirement_final.md, ...)."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="artifacts")
    name = models.CharField(max_length=120)
    content = models.TextField()
    content_type = models.CharField(max_length=100, default="application/json")
    role = models.CharField(max_length=40, blank=True)
    context_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "name"], name="artifact_name_per_task")]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.name


class AgentInstance(models.Model):
    """A runtime agent instance as last reported (US-02)."""

    instance_id = models.CharField(max_length=64, primary_key=True)
    role = models.CharField(max_length=40, db_index=True)
    status = models.CharField(max_length=12, db_index=True)
    healthy = models.BooleanField(default=True)
    queued = models.PositiveIntegerField(default=0)
    processed = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["role", "created_at"]

    def __str__(self) -> str:
        return self.instance_id


class ExecutionContext(models.Model):
    """AgentExecutionContext of PRD §4.6: one per (agent instance, task)."""

    id = models.CharField(max_length=64, primary_key=True)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="contexts")
    instance_id = models.CharField(max_length=64, db_index=True)
    role = models.CharField(max_length=40, db_index=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, to_field="slug")
    status = models.CharField(max_length=20, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0)
    current_step = models.CharField(max_length=200, blank=True)
    task_description = models.TextField(blank=True)
    conversation_id = models.CharField(max_length=64, blank=True)
    config_version = models.PositiveBigIntegerField(default=0)
    input_context = models.JSONField(default=dict)
    output_state = models.JSONField(default=dict)
    resource_usage = models.JSONField(default=dict)
    memory = models.JSONField(
        default=dict, blank=True, help_text="What the agent remembers (seed 003 MemoryContext, Memory.state())."
    )
    knowledge = models.JSONField(
        default=list, blank=True, help_text="What each call retrieved (seed 003 KnowledgeContext)."
    )
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    total_tokens = models.PositiveIntegerField(default=0)
    api_calls = models.PositiveIntegerField(default=0)
    tokens_estimated = models.BooleanField(default=False)
    created_at = models.DateTimeField(db_index=True)
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at"]
        # The live page's cards: the most recently updated contexts (monitoring.live_state).
        indexes = [models.Index(fields=["status", "updated_at"], name="context_status_updated")]

    def __str__(self) -> str:
        return f"{self.role} {self.instance_id} / {self.task_id}"


class Snapshot(models.Model):
    """A context snapshot (PRD §4.6): type auto/error/manual, its trigger and the full state."""

    id = models.CharField(max_length=64, primary_key=True)
    context = models.ForeignKey(ExecutionContext, on_delete=models.CASCADE, related_name="snapshots")
    type = models.CharField(max_length=8, db_index=True)
    trigger = models.CharField(max_length=200)
    label = models.CharField(max_length=300, blank=True)
    sequence = models.PositiveIntegerField()
    stored_state = models.JSONField(db_column="state")
    """The state as stored: the context's state, except that ``input_context.messages`` may be
    ``{"stream": s, "from": a, "to": b}``, positions ``a`` (included) to ``b`` (excluded) of
    ``SnapshotMessage`` stream ``s``. Read ``state`` for the whole state."""
    created_at = models.DateTimeField()
    event_seq = models.BigIntegerField(null=True, blank=True)
    """Emit order of its runtime event (one counter with messages' ``event_seq``): replay
    orders a context's snapshots and messages by it, exactly, even within a millisecond."""

    class Meta:
        ordering = ["context", "sequence"]
        indexes = [models.Index(fields=["context", "sequence"], name="snapshot_ctx_seq")]

    def __str__(self) -> str:
        return f"{self.type}:{self.trigger} #{self.sequence}"

    @property
    def state(self) -> dict[str, Any]:
        """The whole state of the context (PRD §4.6), its message references read back
        from ``SnapshotMessage`` when stored there (one query, once per object)."""
        cached = self.__dict__.get("_full_state")
        if cached is None:
            cached = self.__dict__["_full_state"] = full_state(self.stored_state)
        return cached

    @state.setter
    def state(self, value: dict[str, Any]) -> None:
        self.stored_state = value
        self.__dict__.pop("_full_state", None)


class SnapshotMessage(models.Model):
    """A message reference a context held (``input_context.messages``), stored once for all
    the snapshots that held it: at 500 references per context and four snapshots per invoke
    (PRD §4.6, before and after on both sides), storing them in every snapshot wrote about
    300 KB per invoke (bench/runtime_bench.py). ``stream`` is the runtime context object's
    ``messages_stream``, ``position`` the reference's place in it from 0."""

    context_id = models.CharField(max_length=64, db_index=True)
    stream = models.CharField(max_length=64)
    position = models.PositiveIntegerField()
    ref = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["stream", "position"], name="snapshot_message_pos")]

    def __str__(self) -> str:
        return f"{self.stream}#{self.position}"


def full_state(stored: Any) -> Any:
    """``stored`` (a ``Snapshot.stored_state``) with its message references read back into
    ``input_context.messages`` when they are a range of ``SnapshotMessage`` (a new dict; the
    others as they are). References lost since (none should be) are left out."""
    if not isinstance(stored, dict):
        return stored
    inputs = stored.get("input_context")
    if not isinstance(inputs, dict):
        return stored
    span = inputs.get("messages")
    if not isinstance(span, dict) or "stream" not in span:
        return stored
    refs = list(
        SnapshotMessage.objects.filter(stream=span["stream"], position__gte=span["from"], position__lt=span["to"])
        .order_by("position")
        .values_list("ref", flat=True)
    )
    return {**stored, "input_context": {**inputs, "messages": refs}}


class Message(models.Model):
    """One AgentMessage (PRD §4.3) and what became of it: delivered, dropped, expired, denied."""

    id = models.CharField(max_length=64, primary_key=True)
    seq = models.BigIntegerField(db_index=True)
    type = models.CharField(max_length=24)  # indexed by message_type_seq
    from_role = models.CharField(max_length=40, blank=True)
    from_instance = models.CharField(max_length=64, blank=True)
    to_role = models.CharField(max_length=40, blank=True)
    to_instance = models.CharField(max_length=64, blank=True)
    capability_id = models.CharField(max_length=300, blank=True)
    task_id = models.CharField(max_length=64)  # indexed by message_task_seq
    conversation_id = models.CharField(max_length=64, blank=True)
    correlation_id = models.CharField(max_length=80, blank=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, to_field="slug", db_constraint=False
    )
    payload = models.JSONField(default=dict)
    priority = models.CharField(max_length=8)
    ttl_ms = models.PositiveIntegerField()
    timestamp_ms = models.BigIntegerField(db_index=True)
    status = models.CharField(max_length=10, db_index=True)
    reason = models.CharField(max_length=300, blank=True)
    event_seq = models.BigIntegerField(null=True, blank=True)
    """Emit order of the event that first recorded it (see Snapshot.event_seq)."""

    class Meta:
        ordering = ["-seq"]
        indexes = [
            models.Index(fields=["task_id", "seq"], name="message_task_seq"),
            models.Index(fields=["from_role", "to_role"], name="message_roles"),
            # Newest-first log pages filtered by type or by role (US-04; monitoring.message_log).
            models.Index(fields=["type", "seq"], name="message_type_seq"),
            models.Index(fields=["from_role", "seq"], name="message_from_seq"),
            models.Index(fields=["to_role", "seq"], name="message_to_seq"),
            models.Index(fields=["capability_id", "timestamp_ms"], name="message_capability_time"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.from_role}->{self.to_role} ({self.status})"


class ToolConfirmation(models.Model):
    """What waits for (or was decided by) an operator (PRD §4.6 ``waiting_user``): a tool use
    (``kind`` ``tool``, PRD §4.7 ⚠️) or an answer a workflow asks for (``kind`` ``input``:
    ``tool`` names it, ``interview``, ``decisions``, ``next_action``...; ``args`` is the
    request with its ``answer_schema``; ``answer`` what the operator gave, status ``answered``).
    """

    STATUSES = [
        ("pending", "pending"),
        ("approved", "approved"),
        ("rejected", "rejected"),
        ("expired", "expired"),
        ("answered", "answered"),
    ]
    KINDS = [("tool", "tool"), ("input", "input")]

    id = models.CharField(max_length=64, primary_key=True)
    context_id = models.CharField(max_length=64, db_index=True)
    instance_id = models.CharField(max_length=64)
    role = models.CharField(max_length=40)
    task_id = models.CharField(max_length=64, db_index=True)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, to_field="slug", db_constraint=False
    )
    kind = models.CharField(max_length=8, choices=KINDS, default="tool")
    tool = models.CharField(max_length=160)
    args = models.JSONField(default=dict)
    answer = models.JSONField(null=True, blank=True)
    status = models.CharField(max_length=10, choices=STATUSES, default="pending", db_index=True)
    decided_by = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    preview = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the tool use would do, taken when it was asked (a file_write's "
        "monitoring.file_write_preview): the card keeps showing what was approved.",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.tool} for {self.role} ({self.status})"


class Alert(models.Model):
    """An alert raised by the runtime (queue drop, health, budget) or an alert rule."""

    kind = models.CharField(max_length=32, db_index=True)
    severity = models.CharField(max_length=10)
    message = models.TextField()
    details = models.JSONField(default=dict)
    created_at = models.DateTimeField(db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    rule = models.ForeignKey(
        "capabilities.AlertRule", null=True, blank=True, on_delete=models.SET_NULL, related_name="alerts"
    )
    capability_id = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.severity} {self.kind}: {self.message[:60]}"


class AlertRuleState(models.Model):
    """Where one alert rule stands for one capability (seed 003 ``alerting``): the condition
    has held since ``pending_since`` (None = it does not hold), ``alert`` is the open alert
    once it held for the rule's duration. Written only by runs.alerting."""

    rule = models.ForeignKey("capabilities.AlertRule", on_delete=models.CASCADE, related_name="states")
    capability_id = models.CharField(max_length=64)
    pending_since = models.DateTimeField(null=True, blank=True)
    alert = models.ForeignKey(Alert, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_value = models.JSONField(null=True, blank=True)
    last_evaluated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["rule", "capability_id"], name="alert_rule_state_once")]

    def __str__(self) -> str:
        state = "firing" if self.alert_id else "pending" if self.pending_since else "ok"
        return f"{self.rule_id}/{self.capability_id}: {state}"


class RecorderCheckpoint(models.Model):
    """The last batch a recorder process committed for one runtime process
    (``monitoring.recorder_process``): written in the batch's own transaction, so a recorder
    process started again after a crash skips the batches its predecessor committed but
    could not acknowledge, and nothing is written twice. ``stream`` is the runtime process's
    recorder id; the row is deleted when that recorder stops cleanly."""

    stream = models.CharField(max_length=64, primary_key=True)
    batch = models.BigIntegerField()
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.stream}: batch {self.batch}"


class OperatorPreference(models.Model):
    """What an operator chose for their pages, kept on the user so it follows them to the
    next login and to another browser (issue 32): the page ``language`` (a code of
    ``settings.LANGUAGES``, blank: the browser's)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="teamclaw_preference"
    )
    language = models.CharField(max_length=16, blank=True)

    def __str__(self) -> str:
        return f"{self.user_id}: {self.language or 'browser'}"


class OpenPointAnswer(models.Model):
    """An operator's answer to an open point of a finished requirement review (seed 002
    §6.6 open points; ``monitoring.outcome.open_points``): append-only, so the rows of one
    point are its audit trail (who answered what, when) and the newest is the answer shown.
    ``point_id`` is the consolidation report's candidate id (``c-...``) or, for an interview
    question left empty, ``q-<n>`` (its place in ``interview_result.json``'s ``unanswered``);
    ``question`` is kept as it was asked."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="open_point_answers")
    point_id = models.CharField(max_length=64)
    question = models.TextField()
    answer = models.TextField()
    answered_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    answered_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["-answered_at", "-id"]
        indexes = [models.Index(fields=["task", "point_id"])]

    def __str__(self) -> str:
        return f"{self.task_id} {self.point_id}"

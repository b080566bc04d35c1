"""The record of runs in the admin, to look at only: it is what happened (tasks, contexts,
messages, snapshots, confirmations, alerts...), written by the recorder and the runtime; no
row is added, changed or deleted here (an alert is resolved on the alerts page)."""

from typing import Any

from django.contrib import admin

from monitoring.models import (
    AgentInstance,
    Alert,
    Artifact,
    ExecutionContext,
    Message,
    OpenPointAnswer,
    OperatorPreference,
    Snapshot,
    SnapshotMessage,
    Task,
    ToolConfirmation,
)


class RecordAdmin(admin.ModelAdmin):
    """View-only admin of a recorded model (module docstring)."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(Task)
class TaskAdmin(RecordAdmin):
    list_display = ["id", "title", "kind", "workflow", "status", "project", "tokens_used", "created_at"]
    list_filter = ["status", "kind", "workflow", "project"]
    search_fields = ["id", "title", "description"]


@admin.register(Artifact)
class ArtifactAdmin(RecordAdmin):
    list_display = ["name", "task", "role", "content_type", "created_at"]
    list_filter = ["content_type", "role"]
    search_fields = ["name", "task__id"]


@admin.register(AgentInstance)
class AgentInstanceAdmin(RecordAdmin):
    list_display = ["instance_id", "role", "status", "healthy", "queued", "processed", "last_heartbeat"]
    list_filter = ["role", "status", "healthy"]


@admin.register(ExecutionContext)
class ExecutionContextAdmin(RecordAdmin):
    list_display = ["id", "role", "instance_id", "task", "status", "progress", "total_tokens", "updated_at"]
    list_filter = ["status", "role"]
    search_fields = ["id", "instance_id", "task__id"]


@admin.register(Snapshot)
class SnapshotAdmin(RecordAdmin):
    list_display = ["id", "context", "type", "trigger", "label", "sequence", "created_at"]
    list_filter = ["type"]


@admin.register(SnapshotMessage)
class SnapshotMessageAdmin(RecordAdmin):
    list_display = ["id", "context_id", "stream", "position"]
    search_fields = ["context_id", "stream"]


@admin.register(Message)
class MessageAdmin(RecordAdmin):
    list_display = ["seq", "type", "from_role", "to_role", "capability_id", "status", "priority", "task_id"]
    list_filter = ["type", "status", "priority", "from_role", "to_role"]
    search_fields = ["id", "task_id", "capability_id", "correlation_id"]


@admin.register(ToolConfirmation)
class ToolConfirmationAdmin(RecordAdmin):
    list_display = ["id", "tool", "role", "status", "decided_by", "created_at"]
    list_filter = ["status", "tool", "role"]


@admin.register(Alert)
class AlertAdmin(RecordAdmin):
    list_display = ["created_at", "severity", "kind", "message", "resolved_at"]
    list_filter = ["severity", "kind"]


@admin.register(OperatorPreference)
class OperatorPreferenceAdmin(RecordAdmin):
    list_display = ["user", "language"]


@admin.register(OpenPointAnswer)
class OpenPointAnswerAdmin(RecordAdmin):
    list_display = ["task", "point_id", "answered_by", "answered_at"]
    search_fields = ["task__id", "point_id", "question", "answer"]

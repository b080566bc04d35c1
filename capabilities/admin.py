from django.contrib import admin

from capabilities.models import (
    AgentRole,
    CapabilityCard,
    ConfigChange,
    ConfigDocument,
    ConfigState,
    InvokePermission,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
    RoleConstraint,
    Skill,
    ToolPermission,
)
from capabilities.skill_models import AlertRule, SkillOperation, Workflow


class ReadOnlyConfigAdmin(admin.ModelAdmin):
    """View-only: these rows change through the governance pages and API, which version,
    audit and publish every change (PRD §4.8); an admin edit would do none of that."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Project)
class ProjectAdmin(ReadOnlyConfigAdmin):
    list_display = ["slug", "name", "tech_stack", "working_directory", "updated_at"]
    search_fields = ["slug", "name", "description"]


@admin.register(AgentRole)
class AgentRoleAdmin(ReadOnlyConfigAdmin):
    list_display = ["role", "display_name", "emoji", "is_builtin", "enabled", "executor", "sort_order"]
    list_filter = ["is_builtin", "enabled"]
    search_fields = ["role", "display_name", "description"]


@admin.register(CapabilityCard)
class CapabilityCardAdmin(ReadOnlyConfigAdmin):
    list_display = ["capability_id", "name", "category", "version", "enabled", "executor", "capability_type", "skill"]
    list_filter = ["category", "enabled", "executor", "capability_type", "is_builtin"]
    search_fields = ["capability_id", "name", "description"]
    filter_horizontal = ["owner_roles"]


@admin.register(InvokePermission)
class InvokePermissionAdmin(ReadOnlyConfigAdmin):
    list_display = ["caller", "target", "allowed", "project"]
    list_filter = ["allowed", "project", "caller"]


@admin.register(ToolPermission)
class ToolPermissionAdmin(ReadOnlyConfigAdmin):
    list_display = ["role", "tool", "mode", "project"]
    list_filter = ["tool", "mode", "project"]


@admin.register(RoleConstraint)
class RoleConstraintAdmin(ReadOnlyConfigAdmin):
    list_display = [
        "role",
        "project",
        "timeout_s",
        "max_retries",
        "token_budget",
        "max_concurrent_instances",
        "memory_tokens",
    ]
    list_filter = ["project"]


@admin.register(ConfigChange)
class ConfigChangeAdmin(ReadOnlyConfigAdmin):
    list_display = ["new_version", "config_type", "role", "project", "actor", "created_at", "note"]
    list_filter = ["config_type", "project"]
    search_fields = ["role", "note"]  # the audit trail is append-only


@admin.register(ConfigState)
class ConfigStateAdmin(ReadOnlyConfigAdmin):
    list_display = ["version", "updated_at"]


@admin.register(Skill)
class SkillAdmin(ReadOnlyConfigAdmin):
    list_display = ["skill_id", "name", "version", "skill_form", "status"]
    list_filter = ["status", "skill_form"]


@admin.register(ProjectRoleOverride)
class ProjectRoleOverrideAdmin(ReadOnlyConfigAdmin):
    list_display = ["project", "role", "enabled"]
    list_filter = ["project", "enabled"]


@admin.register(ProjectCapabilityOverride)
class ProjectCapabilityOverrideAdmin(ReadOnlyConfigAdmin):
    list_display = ["project", "card", "enabled"]
    list_filter = ["project", "enabled"]


@admin.register(ConfigDocument)
class ConfigDocumentAdmin(ReadOnlyConfigAdmin):
    list_display = ["name", "project", "version"]
    list_filter = ["project"]


# Seed 003 skill history, alert rules and workflows: read-only here too, since their changes
# go through capabilities.lifecycle and capabilities.workflow_actions (which audit and publish).
@admin.register(SkillOperation)
class SkillOperationAdmin(ReadOnlyConfigAdmin):
    list_display = ["id", "skill", "operation", "outcome", "from_status", "to_status", "actor", "created_at"]
    list_filter = ["operation", "outcome"]


@admin.register(AlertRule)
class AlertRuleAdmin(ReadOnlyConfigAdmin):
    list_display = ["name", "skill", "capability", "condition", "duration_s", "severity", "enabled"]
    list_filter = ["severity", "enabled"]


@admin.register(Workflow)
class WorkflowAdmin(ReadOnlyConfigAdmin):
    list_display = ["workflow_id", "name", "version", "updated_at"]
    search_fields = ["workflow_id", "name"]

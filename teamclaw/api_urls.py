"""/api/v1/ routes of every app."""

from django.urls import path

from capabilities import api as capabilities_api
from capabilities import governance_api, skill_api
from monitoring import api as monitoring_api
from monitoring import capability_api, live_api, runtime_api
from prompts import api as prompts_api

urlpatterns = [
    path("auth/token", monitoring_api.TokenView.as_view(), name="api-token"),
    path("roles", capabilities_api.RoleListView.as_view(), name="api-roles"),
    path("roles/<str:role>", capabilities_api.RoleDetailView.as_view(), name="api-role"),
    path("roles/<str:role>/executor", capabilities_api.RoleExecutorView.as_view(), name="api-role-executor"),
    path("capabilities", capabilities_api.CapabilityListView.as_view(), name="api-capabilities"),
    path("capabilities/invoke", runtime_api.InvokeView.as_view(), name="api-invoke"),
    path(
        "capabilities/<str:capability_id>/health",
        runtime_api.CapabilityHealthView.as_view(),
        name="api-capability-health",
    ),
    path("capabilities/<str:capability_id>", capabilities_api.CapabilityDetailView.as_view(), name="api-capability"),
    path("permissions/invoke-matrix", governance_api.InvokeMatrixView.as_view(), name="api-invoke-matrix"),
    path("permissions/invoke-matrix/what-if", governance_api.InvokeWhatIfView.as_view(), name="api-invoke-what-if"),
    path("permissions/tool-matrix", governance_api.ToolMatrixView.as_view(), name="api-tool-matrix"),
    path("permissions/tool-matrix/what-if", governance_api.ToolWhatIfView.as_view(), name="api-tool-what-if"),
    path("constraints/<str:role>", governance_api.ConstraintsView.as_view(), name="api-constraints"),
    path("projects", governance_api.ProjectListView.as_view(), name="api-projects"),
    path("projects/<str:slug>", governance_api.ProjectDetailView.as_view(), name="api-project"),
    path("config/changes", governance_api.ConfigChangeListView.as_view(), name="api-config-changes"),
    path("config/schema", governance_api.ConfigSchemaView.as_view(), name="api-config-schema"),
    path("config/export", governance_api.ConfigExportView.as_view(), name="api-config-export"),
    path("config/import", governance_api.ConfigImportView.as_view(), name="api-config-import"),
    path("skills", skill_api.SkillListView.as_view(), name="api-skills"),
    path("skills/<str:skill_id>", skill_api.SkillDetailView.as_view(), name="api-skill"),
    path("skills/<str:skill_id>/install", skill_api.SkillInstallView.as_view(), name="api-skill-install"),
    path("skills/<str:skill_id>/activate", skill_api.SkillActivateView.as_view(), name="api-skill-activate"),
    path("skills/<str:skill_id>/deactivate", skill_api.SkillDeactivateView.as_view(), name="api-skill-deactivate"),
    path("skills/<str:skill_id>/dependents", skill_api.SkillDependentsView.as_view(), name="api-skill-dependents"),
    path("schemas/<str:name>", skill_api.SchemaView.as_view(), name="api-schema-document"),
    path("workflows", skill_api.WorkflowListView.as_view(), name="api-workflows"),
    path("workflows/<str:workflow_id>", skill_api.WorkflowDetailView.as_view(), name="api-workflow"),
    path("workflows/<str:workflow_id>/run", skill_api.WorkflowRunView.as_view(), name="api-workflow-run"),
    path("health/<str:capability_id>", capability_api.HealthView.as_view(), name="api-health"),
    path("metrics/<str:capability_id>", capability_api.MetricsView.as_view(), name="api-metrics"),
    path("alerts", capability_api.AlertListView.as_view(), name="api-alerts"),
    path("alerts/<int:alert_id>/resolve", capability_api.AlertResolveView.as_view(), name="api-alert-resolve"),
    path("tasks", monitoring_api.TaskListView.as_view(), name="api-tasks"),
    path("tasks/<str:task_id>", monitoring_api.TaskDetailView.as_view(), name="api-task"),
    path("contexts", live_api.ContextListView.as_view(), name="api-contexts"),
    path("contexts/<str:context_id>", live_api.ContextDetailView.as_view(), name="api-context"),
    path("contexts/<str:context_id>/snapshots", live_api.SnapshotListView.as_view(), name="api-context-snapshots"),
    path("contexts/<str:context_id>/instructions", live_api.InstructionView.as_view(), name="api-context-instructions"),
    path("stats/tokens", live_api.TokenStatsView.as_view(), name="api-stats-tokens"),
    # Prompt templates (PRD §4.5): prompts/api.py
    path("prompts", prompts_api.PromptRoleListView.as_view(), name="api-prompts"),
    path("prompts/<str:role>", prompts_api.PromptRoleView.as_view(), name="api-prompt-role"),
    path("prompts/<str:role>/render", prompts_api.PromptRenderView.as_view(), name="api-prompt-render"),
    path(
        "prompts/<str:role>/<str:template_type>/versions",
        prompts_api.PromptVersionsView.as_view(),
        name="api-prompt-versions",
    ),
    path(
        "prompts/<str:role>/<str:template_type>/versions/<str:version>",
        prompts_api.PromptVersionView.as_view(),
        name="api-prompt-version",
    ),
    path("prompts/<str:role>/<str:template_type>/diff", prompts_api.PromptDiffView.as_view(), name="api-prompt-diff"),
    path(
        "prompts/<str:role>/<str:template_type>/rollback",
        prompts_api.PromptRollbackView.as_view(),
        name="api-prompt-rollback",
    ),
    path(
        "prompts/<str:role>/<str:template_type>/activate",
        prompts_api.PromptActivateView.as_view(),
        name="api-prompt-activate",
    ),
    path(
        "prompts/<str:role>/<str:template_type>/preview",
        prompts_api.PromptPreviewView.as_view(),
        name="api-prompt-preview",
    ),
    path("hooks", runtime_api.HookView.as_view(), name="api-hooks"),
    path("messages", monitoring_api.MessageListView.as_view(), name="api-messages"),
    path("confirmations/<str:confirmation_id>", runtime_api.ConfirmationView.as_view(), name="api-confirmation"),
]

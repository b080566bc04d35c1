from django.contrib import admin

from capabilities.admin import ReadOnlyConfigAdmin
from interop.models import A2ATask, McpToolSource, RoleToken


@admin.register(RoleToken)
class RoleTokenAdmin(ReadOnlyConfigAdmin):
    list_display = ["name", "role", "prefix", "created_at", "last_used_at", "revoked_at"]


@admin.register(A2ATask)
class A2ATaskAdmin(ReadOnlyConfigAdmin):
    list_display = ["task", "role", "token", "context_id", "created_at", "updated_at"]


@admin.register(McpToolSource)
class McpToolSourceAdmin(ReadOnlyConfigAdmin):
    list_display = ["name", "project", "transport", "command", "url", "state", "last_checked_at"]
    exclude = ["credentials"]  # sealed; shown masked on the MCP sources page and API only

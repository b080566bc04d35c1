"""Prompt templates in the Django admin: read-only, because every change must go through
``prompts.actions`` (new version, config version bump, audit, ConfigChangeEvent; PRD §4.5,
§4.8) and old versions are never edited. Use the /prompts/ pages or the API to change them."""

from typing import Any

from django.contrib import admin

from prompts.models import PromptTemplate, PromptVersion


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class PromptVersionInline(admin.TabularInline):
    model = PromptVersion
    extra = 0
    fields = ("version", "is_active", "language", "note", "rollback_of", "created_by", "created_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(PromptTemplate)
class PromptTemplateAdmin(ReadOnlyAdmin):
    list_display = ["role", "template_type", "project", "updated_at"]
    list_filter = ["template_type", "project", "role"]
    inlines = [PromptVersionInline]


@admin.register(PromptVersion)
class PromptVersionAdmin(ReadOnlyAdmin):
    list_display = ["template", "version", "is_active", "language", "created_by", "created_at"]
    list_filter = ["is_active", "language", "template__template_type"]
    search_fields = ["content", "note"]

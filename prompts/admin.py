from django.contrib import admin

from prompts.models import PromptTemplate, PromptVersion


class PromptVersionInline(admin.TabularInline):
    model = PromptVersion
    extra = 0
    fields = ["version", "is_active", "language", "note", "rollback_of", "created_by", "created_at"]
    readonly_fields = fields
    can_delete = False


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ["role", "template_type", "project", "created_at"]
    list_filter = ["template_type", "project", "role"]
    inlines = [PromptVersionInline]


@admin.register(PromptVersion)
class PromptVersionAdmin(admin.ModelAdmin):
    list_display = ["template", "version", "is_active", "language", "created_by", "created_at"]
    list_filter = ["is_active", "language", "template__template_type"]
    search_fields = ["content", "note"]

"""Pages under /prompts/ (PRD §4.5): see prompts/views.py."""

from django.urls import path

from prompts import views

urlpatterns = [
    path("prompts/", views.prompt_index, name="prompts"),
    path("prompts/<str:role>/", views.prompt_role, name="prompt-role"),
    path("prompts/<str:role>/preview/", views.prompt_layers, name="prompt-layers"),
    path("prompts/<str:role>/<str:template_type>/", views.prompt_template, name="prompt-template"),
    path("prompts/<str:role>/<str:template_type>/edit/", views.prompt_edit, name="prompt-edit"),
    path("prompts/<str:role>/<str:template_type>/edit/preview/", views.prompt_edit_preview, name="prompt-edit-preview"),
    path("prompts/<str:role>/<str:template_type>/diff/", views.prompt_diff, name="prompt-diff"),
    path(
        "prompts/<str:role>/<str:template_type>/rollback/<str:version>/",
        views.prompt_rollback,
        name="prompt-rollback",
    ),
    path(
        "prompts/<str:role>/<str:template_type>/activate/<str:version>/",
        views.prompt_activate,
        name="prompt-activate",
    ),
]

from django.urls import path

from capabilities import governance_views, permission_views, skill_views, views

urlpatterns = [
    path("roles/", views.role_list, name="roles"),
    path("roles/new/", governance_views.role_new, name="role-new"),
    path("roles/<str:role>/switch/", governance_views.role_switch, name="role-switch"),
    path("roles/<str:role>/edit/", governance_views.role_edit, name="role-edit"),
    path("roles/<str:role>/delete/", governance_views.role_delete_view, name="role-delete"),
    path("roles/<str:role>/", views.role_detail, name="role-detail"),
    path("capabilities/", views.capability_list, name="capabilities"),
    path("capabilities/<str:capability_id>/", views.capability_detail, name="capability-detail"),
    path("capabilities/<str:capability_id>/switch/", governance_views.capability_switch, name="capability-switch"),
    path("permissions/<str:which>/", permission_views.matrix_editor, name="matrix-editor"),
    path("permissions/<str:which>/what-if/", permission_views.matrix_what_if, name="matrix-what-if"),
    path("constraints/", permission_views.constraints_overview, name="constraints"),
    path("constraints/<str:role>/", permission_views.constraints_edit, name="constraints-edit"),
    path("projects/", governance_views.project_list, name="projects"),
    path("projects/<str:slug>/", governance_views.project_detail, name="project-detail"),
    path("config/changes/", governance_views.change_list, name="config-changes"),
    path("config/transfer/", governance_views.config_transfer, name="config-transfer"),
    path("skills/", skill_views.skill_list, name="skills"),
    path("skills/_upload/", skill_views.skill_upload, name="skill-upload"),
    path("graph/", skill_views.dependency_graph, name="dependency-graph"),
    path("skills/<str:skill_id>/", skill_views.skill_detail, name="skill-detail"),
    path("skills/<str:skill_id>/<str:action>/", skill_views.skill_action, name="skill-action"),
    path("workflows/", skill_views.workflow_list, name="workflows"),
    path("workflows/_new/", skill_views.workflow_edit, name="workflow-new"),
    path("workflows/<str:workflow_id>/", skill_views.workflow_detail, name="workflow-detail"),
    path("workflows/<str:workflow_id>/edit/", skill_views.workflow_edit, name="workflow-edit"),
    path("workflows/<str:workflow_id>/delete/", skill_views.workflow_delete, name="workflow-delete"),
]

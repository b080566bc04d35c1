from django.urls import path

from capabilities import skill_views, views

urlpatterns = [
    path("roles/", views.role_list, name="roles"),
    path("roles/<str:role>/", views.role_detail, name="role-detail"),
    path("capabilities/", views.capability_list, name="capabilities"),
    path("capabilities/<str:capability_id>/", views.capability_detail, name="capability-detail"),
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

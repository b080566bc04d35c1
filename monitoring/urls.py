from django.urls import path

from monitoring import alert_views, views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("tasks/", views.task_list, name="tasks"),
    path("tasks/new/", views.task_new, name="task-new"),
    path("tasks/demo/", views.run_demo, name="run-demo"),
    path("tasks/<str:task_id>/", views.task_detail, name="task-detail"),
    path("alerts/", alert_views.alert_list, name="alerts"),
    path("alerts/<int:alert_id>/resolve/", alert_views.alert_resolve, name="alert-resolve"),
]

from django.urls import path

from monitoring import views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("tasks/", views.task_list, name="tasks"),
    path("tasks/new/", views.task_new, name="task-new"),
    path("tasks/demo/", views.run_demo, name="run-demo"),
    path("tasks/<str:task_id>/", views.task_detail, name="task-detail"),
]

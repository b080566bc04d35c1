from django.urls import path

from monitoring import alert_views, live_views, views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("tasks/", views.task_list, name="tasks"),
    path("tasks/new/", views.task_new, name="task-new"),
    path("tasks/demo/", views.run_demo, name="run-demo"),
    path("tasks/<str:task_id>/", views.task_detail, name="task-detail"),
    path("tasks/<str:task_id>/artifacts/<str:name>", live_views.task_artifact, name="task-artifact"),
    path("live/", live_views.live, name="live"),
    path("live/log/", live_views.live_log, name="live-log"),
    path("live/graph/", live_views.live_graph, name="live-graph"),
    path("live/contexts/<str:context_id>/", live_views.live_context, name="live-context"),
    path(
        "live/contexts/<str:context_id>/instructions",
        live_views.live_context_instruction,
        name="live-context-instruction",
    ),
    path("live/contexts/<str:context_id>/snapshots", live_views.live_context_snapshot, name="live-context-snapshot"),
    path("live/confirmations/<str:confirmation_id>", live_views.live_confirmation, name="live-confirmation"),
    path("replay/<str:context_id>/", live_views.replay_page, name="replay"),
    path("stats/tokens/", live_views.token_stats_page, name="token-stats"),
    path("alerts/", alert_views.alert_list, name="alerts"),
    path("alerts/<int:alert_id>/resolve/", alert_views.alert_resolve, name="alert-resolve"),
]

"""Websocket routes of the live execution viewer (``teamclaw.asgi`` checks login and origin)."""

from django.urls import path

from web.sockets.consumers import LiveConsumer, TaskConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
    path("ws/tasks/<str:task_id>/", TaskConsumer.as_asgi()),
]

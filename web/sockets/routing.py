"""Websocket routes of the live execution viewer (``teamclaw.asgi`` checks login and origin)."""

from django.urls import path, re_path

from web.sockets.consumers import LiveConsumer, NoSuchSocket, TaskConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
    path("ws/tasks/<str:task_id>/", TaskConsumer.as_asgi()),
    re_path(r"", NoSuchSocket.as_asgi()),  # any other path: 4404, not a 500
]

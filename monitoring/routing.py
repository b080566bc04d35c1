"""Websocket routes (the live viewer's sockets arrive with the live execution viewer)."""

websocket_urlpatterns: list = []

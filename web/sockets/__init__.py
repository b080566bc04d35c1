"""Websockets under ``/ws/``: the live viewer's and a task page's streams."""

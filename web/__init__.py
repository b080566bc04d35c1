"""The web layer: every page, REST endpoint and websocket, one module per object.

``pages/`` (function views, rendered with the apps' templates), ``api/`` (DRF views under
``/api/v1/``), ``sockets/`` (Channels consumers under ``/ws/``). Views parse, authorize, call
the apps' services and render; the apps below never import this package (docs/architecture.md).
"""

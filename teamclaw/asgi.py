"""ASGI entry point: HTTP through Django except the protocol endpoints mounted by path prefix
(``HTTP_MOUNTS``: the MCP server at /mcp, its OAuth routes, A2A's card and JSON-RPC endpoint), websockets under
/ws/ (login and exact origin checked)."""

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from daphne.http_protocol import WebRequest  # noqa: E402
from django.conf import settings  # noqa: E402

from interop.a2a import A2A_PATHS, a2a_application  # noqa: E402
from interop.mcp_oauth import OAUTH_PATHS, oauth_application  # noqa: E402
from interop.mcp_server import MCP_PATH, mcp_application  # noqa: E402
from interop.mounts import PathMounts  # noqa: E402
from runs.host import get_host  # noqa: E402
from web.sockets.origins import ExactOriginValidator  # noqa: E402
from web.sockets.routing import websocket_urlpatterns  # noqa: E402
from web.sockets.transport import send_standard_close_codes  # noqa: E402

HTTP_MOUNTS: dict[str, Any] = {
    MCP_PATH: mcp_application,
    **dict.fromkeys(A2A_PATHS, a2a_application),
    **dict.fromkeys(OAUTH_PATHS, oauth_application),
}
"""``{path prefix: ASGI app}``: a request whose path is the prefix or lies under it goes to that
app (``interop.mounts.PathMounts``); everything else to Django."""


def leave_request_bodies_to_django() -> None:
    """Under daphne, Twisted parses every POST ``multipart/form-data`` body itself before the
    application sees it (daphne never uses what it parsed) and answers one it cannot read
    with a bare ``400 Bad Request`` without headers or body, so an API client got no reason.
    Turning that parsing off (Twisted's ``parsePOSTFormSubmission``) hands every body to
    Django, whose refusal is the API's error shape (``{"detail", "errors"}``, 400); it also
    spares the server a second in-memory copy of each upload."""
    if getattr(WebRequest, "teamclaw_bodies_to_django", False):
        return
    original = WebRequest.__init__

    def __init__(self: WebRequest, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("parsePOSTFormSubmission", False)
        original(self, *args, **kwargs)

    WebRequest.__init__ = __init__
    WebRequest.teamclaw_bodies_to_django = True


leave_request_bodies_to_django()
send_standard_close_codes()  # oversize frames and consumers' 1009 reach the browser (web.sockets.transport)

application = ProtocolTypeRouter(
    {
        "http": PathMounts(django_asgi_app, HTTP_MOUNTS),
        "websocket": ExactOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

if settings.TEAMCLAW["RUNTIME_AUTOSTART"] and settings.TEAMCLAW["RUNTIME"] == "embedded":
    # The embedded runtime worker starts with the server: it resumes what a crash left.
    get_host()
    from knowledge.warmup import warm_up_in_background

    warm_up_in_background()  # the first knowledge search is as quick as the next ones

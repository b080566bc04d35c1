"""ASGI entry point: HTTP through Django, websockets under /ws/ (login and exact origin checked)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from runs.host import get_host  # noqa: E402
from web.sockets.origins import ExactOriginValidator  # noqa: E402
from web.sockets.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": ExactOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

if settings.TEAMCLAW["RUNTIME_AUTOSTART"] and settings.TEAMCLAW["RUNTIME"] == "embedded":
    # The embedded runtime worker starts with the server: it resumes what a crash left.
    get_host()

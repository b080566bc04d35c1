from typing import Any

from django.apps import AppConfig
from django.contrib.auth.signals import user_logged_out


class WebConfig(AppConfig):
    """The ``web`` app: pages, the REST API and the websockets (no models)."""

    name = "web"
    verbose_name = "Web: pages, API, sockets"

    def ready(self) -> None:
        user_logged_out.connect(close_live_sockets_on_logout, dispatch_uid="web.close_live_sockets")


def close_live_sockets_on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """``user_logged_out`` receiver: the session's live sockets stop streaming (close 4401)."""
    from web.sockets.consumers import end_session_sockets  # consumers import channels: not at app loading

    session = getattr(request, "session", None)
    end_session_sockets(getattr(session, "session_key", None))

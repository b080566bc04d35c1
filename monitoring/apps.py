from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Runs and monitoring"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        user_logged_out.connect(close_live_sockets_on_logout, dispatch_uid="monitoring.close_live_sockets")


def close_live_sockets_on_logout(sender, request, user, **kwargs) -> None:  # type: ignore[no-untyped-def]
    """``user_logged_out`` receiver: the session's live sockets stop streaming (close 4401)."""
    from monitoring.consumers import end_session_sockets

    session = getattr(request, "session", None)
    end_session_sockets(getattr(session, "session_key", None))

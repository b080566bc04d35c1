from typing import Any

from django.apps import AppConfig
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, pre_save


class WebConfig(AppConfig):
    """The ``web`` app: pages, the REST API and the websockets (no models)."""

    name = "web"
    verbose_name = "Web: pages, API, sockets"

    def ready(self) -> None:
        user_logged_out.connect(close_live_sockets_on_logout, dispatch_uid="web.close_live_sockets")
        user_model = get_user_model()
        pre_save.connect(close_live_sockets_when_access_ends, sender=user_model, dispatch_uid="web.user_sockets_save")
        post_delete.connect(close_live_sockets_of_deleted_user, sender=user_model, dispatch_uid="web.user_sockets_del")


def close_live_sockets_on_logout(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    """``user_logged_out`` receiver: the session's live sockets stop streaming (close 4401)."""
    from web.sockets.consumers import end_session_sockets  # consumers import channels: not at app loading

    session = getattr(request, "session", None)
    end_session_sockets(getattr(session, "session_key", None))


def close_live_sockets_when_access_ends(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """``pre_save`` receiver of the user model: when the saved user is deactivated or its
    password changes, every live socket of that user closes (4401) once the save commits, in
    every session, as logout closes one session's (a socket checked the login only when it
    opened). Other saves (a name, a last login) leave the sockets open."""
    from web.sockets.consumers import end_user_sockets  # consumers import channels: not at app loading

    if raw or instance.pk is None:
        return
    before = sender.objects.filter(pk=instance.pk).values("password", "is_active").first()
    if before is None:
        return
    deactivated = before["is_active"] and not instance.is_active
    if deactivated or before["password"] != instance.password:
        user_id = instance.pk
        transaction.on_commit(lambda: end_user_sockets(user_id))


def close_live_sockets_of_deleted_user(sender: Any, instance: Any, **kwargs: Any) -> None:
    """``post_delete`` receiver of the user model: a deleted user's live sockets close (4401)."""
    from web.sockets.consumers import end_user_sockets  # consumers import channels: not at app loading

    user_id = instance.pk
    transaction.on_commit(lambda: end_user_sockets(user_id))

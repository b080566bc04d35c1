"""A user who is deactivated, deleted or whose password changes stops streaming at once:
every live socket of that user closes (4401), as logging out closes a session's sockets;
other users' sockets, and saves that change neither, leave them open."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from tests.live_helpers import close, next_frame, open_socket

CLOSED = {"type": "websocket.close", "code": 4401}


async def two_sockets_and_a_bystander(user, bystander):
    first, connected, _ = await open_socket("/ws/live/", user)
    assert connected
    await next_frame(first)
    second, connected, _ = await open_socket("/ws/live/", user)  # another login of the same user
    assert connected
    await next_frame(second)
    other, connected, _ = await open_socket("/ws/live/", bystander)
    assert connected
    await next_frame(other)
    return first, second, other


def deactivate(user):
    user.is_active = False
    user.save()


def change_password(user):
    user.set_password("a-brand-new-password-2")
    user.save()


def delete(user):
    get_user_model().objects.filter(pk=user.pk).delete()


@pytest.mark.parametrize("change", [deactivate, change_password, delete])
async def test_a_user_change_that_ends_access_closes_every_socket_of_that_user(
    runtime_host, staff_user, viewer_user, change
):
    first, second, other = await two_sockets_and_a_bystander(viewer_user, staff_user)
    await sync_to_async(change)(await sync_to_async(get_user_model().objects.get)(pk=viewer_user.pk))
    assert await first.receive_output(timeout=5) == CLOSED
    assert await second.receive_output(timeout=5) == CLOSED
    assert await other.receive_nothing(timeout=0.5)
    await close(other)


async def test_a_save_that_keeps_access_leaves_the_sockets_open(runtime_host, staff_user, viewer_user):
    first, second, other = await two_sockets_and_a_bystander(viewer_user, staff_user)

    def rename():
        user = get_user_model().objects.get(pk=viewer_user.pk)
        user.first_name = "Renamed"
        user.save()

    await sync_to_async(rename)()
    assert await first.receive_nothing(timeout=0.5)
    assert await second.receive_nothing(timeout=0.1)
    for communicator in (first, second, other):
        await close(communicator)

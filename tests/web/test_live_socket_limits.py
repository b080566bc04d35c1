"""An oversize frame from a page closes its live socket with 1009, Message Too Big (RFC 6455
§7.4.1; issue 31): the consumer's own limit through the ASGI stack, then a real websocket
client against a real daphne process for both the consumer's limit and daphne's own."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from tests.live_helpers import close, next_frame, open_socket, session_cookie
from tests.processes import Server, process_env
from web.sockets.consumers import CLOSE_MESSAGE_TOO_BIG, MAX_CLIENT_FRAME_BYTES
from web.sockets.transport import DAPHNE_MAX_MESSAGE_BYTES

pytestmark = pytest.mark.django_db(transaction=True)


def ack_of_size(seq: int, size: int) -> str:
    """An ack frame padded with spaces to exactly ``size`` UTF-8 bytes."""
    ack = json.dumps({"type": "ack", "seq": seq})
    return ack + " " * (size - len(ack))


async def test_a_frame_over_the_consumers_limit_closes_the_socket_with_1009(runtime_host, staff_user):
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    state = await next_frame(socket, ack=False)
    await socket.send_to(text_data=ack_of_size(state["seq"], MAX_CLIENT_FRAME_BYTES))  # at the limit: fine
    assert await socket.receive_nothing(timeout=0.3)
    await socket.send_to(text_data="é" * (MAX_CLIENT_FRAME_BYTES // 2 + 1))  # bytes, not characters, count
    closed = await socket.receive_output(timeout=10)
    assert closed == {"type": "websocket.close", "code": CLOSE_MESSAGE_TOO_BIG}
    await close(socket)


def closed_after(socket: ClientConnection, frame: str | bytes) -> int | None:
    """Send ``frame`` and return the close code the server answers with (1006: no close frame,
    the connection was dropped)."""
    try:
        socket.send(frame)
        while True:
            socket.recv(timeout=30)
    except ConnectionClosed:
        pass
    return socket.close_code


def test_daphne_closes_oversize_frames_with_1009(staff_user, tmp_path):
    server = Server(process_env(TEAMCLAW_RUNTIME_AUTOSTART="0"), tmp_path / "server.log", token="")
    origin = f"http://127.0.0.1:{server.port}"
    cookie = session_cookie(staff_user).decode()

    @contextmanager
    def open_live() -> Iterator[ClientConnection]:
        with connect(
            f"ws://127.0.0.1:{server.port}/ws/live/",
            origin=origin,  # type: ignore[arg-type]
            additional_headers={"Cookie": cookie},
            compression=None,
            proxy=None,
            max_size=None,
            open_timeout=30,
        ) as socket:
            assert json.loads(socket.recv(timeout=30))["type"] == "state"
            yield socket

    try:
        with open_live() as socket:  # refused by the consumer
            assert closed_after(socket, "x" * (MAX_CLIENT_FRAME_BYTES + 1)) == CLOSE_MESSAGE_TOO_BIG, server.output()
        with open_live() as socket:  # refused by daphne (autobahn) before the application sees it
            assert closed_after(socket, b"x" * (DAPHNE_MAX_MESSAGE_BYTES + 1)) == CLOSE_MESSAGE_TOO_BIG, server.output()
        with open_live() as socket:  # a frame within the limits leaves the socket open
            socket.send(json.dumps({"type": "ack", "seq": 1}))
            with pytest.raises(TimeoutError):
                socket.recv(timeout=0.5)
            assert socket.close_code is None
    finally:
        server.stop()


async def test_a_binary_frame_counts_its_bytes(runtime_host, staff_user):
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(socket)
    await socket.send_to(bytes_data=b"\0" * (MAX_CLIENT_FRAME_BYTES + 1))
    assert await socket.receive_output(timeout=10) == {"type": "websocket.close", "code": CLOSE_MESSAGE_TOO_BIG}
    await close(socket)

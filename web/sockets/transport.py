"""Close codes of the live sockets on the wire, under daphne (issue 31).

Two gaps between daphne (4.2, on autobahn) and RFC 6455 §7.4.1, closed once at start-up by
``send_standard_close_codes()`` (``teamclaw.asgi`` calls it, as it turns off Twisted's own
form parsing):

- **A frame over daphne's own limit** (``--websocket-max-message-size`` /
  ``--websocket-max-frame-size``, 1 MiB by default, ``DAPHNE_MAX_MESSAGE_BYTES``) made autobahn
  drop the TCP connection without a close frame (its ``failByDrop`` option defaults to on),
  so the browser saw 1006 (abnormal closure) and no reason. With ``failByDrop`` off autobahn
  sends a close frame with 1009 (Message Too Big) and its reason, and then closes.
- **A consumer's close with a standard code** (``await self.close(code=1009)``): daphne passes
  it to autobahn's ``sendClose``, which accepts only 1000 and 3000-4999 (the browser API's
  rule for scripts, not the protocol's) and raised, so the socket was not closed at all. A
  code autobahn lists as allowed in a close frame (``CLOSE_STATUS_CODES_ALLOWED``: 1001-1003,
  1007-1013) is now sent as it is; any other code still goes through ``sendClose``.
"""

from __future__ import annotations

from typing import Any

from daphne.ws_protocol import WebSocketFactory, WebSocketProtocol

DAPHNE_MAX_MESSAGE_BYTES = 1024 * 1024
"""daphne's default limit of one incoming websocket message and frame (bytes): a bigger one is
closed by autobahn itself, with 1009 once ``send_standard_close_codes`` ran."""


def send_standard_close_codes() -> None:
    """Make daphne close with the code that was asked for (module docstring). Idempotent."""
    if getattr(WebSocketProtocol, "teamclaw_standard_close_codes", False):
        return
    original_close = WebSocketProtocol.serverClose
    original_init = WebSocketFactory.__init__

    def serverClose(self: WebSocketProtocol, code: int | None = None) -> None:
        reserved = code is not None and code != 1000 and not 3000 <= code <= 4999
        if reserved and code in WebSocketProtocol.CLOSE_STATUS_CODES_ALLOWED:
            self.sendCloseFrame(code=code)
            return
        original_close(self, code=code)

    def __init__(self: WebSocketFactory, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # Close with 1009 and a reason instead of dropping the connection (daphne's Server.run
        # sets the size limits afterwards and leaves this option alone).
        self.setProtocolOptions(failByDrop=False)

    WebSocketProtocol.serverClose = serverClose
    WebSocketFactory.__init__ = __init__
    WebSocketProtocol.teamclaw_standard_close_codes = True

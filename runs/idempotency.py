"""Idempotency keys for outside calls (issue 28 item 4; README "REST API").

A client that lost the reply to ``POST /api/v1/capabilities/invoke`` retries it with the same
``Idempotency-Key`` header and gets the first answer instead of a second run:

- The first request with a key records the call (``runs.IdempotentCall``: the user, the key,
  the SHA-256 of the endpoint and body) before it runs, and its answer (status and JSON body)
  once it has one.
- A retry with the same key and body gets that answer again (header ``Idempotent-Replayed:
  true``); while the first still runs it waits for it, up to as long as the call may take,
  then answers 409. A first request whose process died (no answer after that long) is taken
  over by the retry, which runs the call.
- The same key with another body is refused: 422 naming the key.
- A 5xx answer is not kept (nothing ran, or it is unknown whether it did: ``no_worker``, a
  worker that did not answer), so a retry runs the call.
- Keys are per user and kept ``KEEP`` (24 h); an older key may be used again.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import orjson
from asgiref.sync import sync_to_async
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.response import Response

from runs.models import IdempotentCall
from teamclaw.errors import DomainError, InvalidField

HEADER = "Idempotency-Key"
MAX_KEY_CHARS = 255
KEEP = timedelta(hours=24)
"""How long a key's answer is kept."""
POLL_S = 0.1
"""How often a retry looks whether the first request with its key has answered."""


def key_of(headers: Any) -> str | None:
    """The request's ``Idempotency-Key`` (None without one). Raises InvalidField 400 naming
    the header when it is empty, longer than ``MAX_KEY_CHARS`` or not printable ASCII."""
    value = headers.get(HEADER)
    if value is None:
        return None
    if not value or len(value) > MAX_KEY_CHARS or not all(" " <= char <= "~" for char in value):
        raise InvalidField(f"must be 1 to {MAX_KEY_CHARS} printable ASCII characters", HEADER)
    return str(value)


def fingerprint(endpoint: str, body: Any) -> str:
    """SHA-256 (hex) of ``endpoint`` and ``body`` as canonical JSON (keys sorted)."""
    data = orjson.dumps([endpoint, body], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return hashlib.sha256(data).hexdigest()


def _conflict(key: str) -> DomainError:
    reason = f"was used with another request body; send a new key for a new request (key '{key}')"
    return DomainError(f"{HEADER}: {reason}", errors={HEADER: [reason]}, status=422)


def _claim(user_id: int, key: str, print_: str, abandoned_s: float) -> IdempotentCall | None:
    """Record the call as running and return None (this request runs it), or return the
    recorded call (answered, or still running). Raises the 422 for another body."""
    now = timezone.now()
    IdempotentCall.objects.filter(created_at__lt=now - KEEP).delete()
    try:
        with transaction.atomic():
            IdempotentCall.objects.create(user_id=user_id, key=key, fingerprint=print_, created_at=now)
        return None
    except IntegrityError:
        row = IdempotentCall.objects.get(user_id=user_id, key=key)
    if row.fingerprint != print_:
        raise _conflict(key)
    if row.status is None and row.created_at < now - timedelta(seconds=abandoned_s):
        # The first request's process died before it answered: this one runs the call.
        taken = IdempotentCall.objects.filter(pk=row.pk, status=None, created_at=row.created_at).update(created_at=now)
        if taken:
            return None
    return row


def _state(row_id: int) -> str:
    """``running``, ``answered`` or ``gone`` (a 5xx gave the key up) of a recorded call."""
    found = list(IdempotentCall.objects.filter(pk=row_id).values_list("status", flat=True))
    if not found:
        return "gone"
    return "running" if found[0] is None else "answered"


def _store(user_id: int, key: str, response: Response) -> None:
    rows = IdempotentCall.objects.filter(user_id=user_id, key=key, status=None)
    if response.status_code >= 500:
        rows.delete()  # not kept: a retry runs the call (module doc)
    else:
        rows.update(status=response.status_code, body=response.data)


def _replay(row: IdempotentCall) -> Response:
    return Response(row.body, status=row.status, headers={"Idempotent-Replayed": "true"})


async def once(
    user_id: int, key: str, endpoint: str, body: Any, run: Callable[[], Awaitable[Response]], wait_s: float
) -> Response:
    """Answer the call ``run`` makes at most once per ``(user_id, key)`` (module doc);
    ``wait_s`` is as long as the call may take (a retry waits that long for the first).
    Raises DomainError 422 for the key used with another body, 409 when the first request
    with the key is still running after ``wait_s``."""
    print_ = fingerprint(endpoint, body)
    deadline = time.monotonic() + wait_s
    while (row := await sync_to_async(_claim)(user_id, key, print_, wait_s + 10)) is not None:
        if row.status is not None:
            return _replay(row)
        # The first request with this key still runs: wait for its answer (or for it to
        # give the key up with a 5xx, then run the call here).
        while (state := await sync_to_async(_state)(row.pk)) == "running":
            if time.monotonic() >= deadline:
                reason = f"the first request with this key is still running (key '{key}'); retry later"
                raise DomainError(f"{HEADER}: {reason}", errors={HEADER: [reason]}, status=409)
            await asyncio.sleep(POLL_S)
        if state == "answered":
            continue
    try:
        response = await run()
    except BaseException:
        await sync_to_async(IdempotentCall.objects.filter(user_id=user_id, key=key, status=None).delete)()
        raise
    await sync_to_async(_store)(user_id, key, response)
    return response

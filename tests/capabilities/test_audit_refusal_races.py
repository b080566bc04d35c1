"""Issue 31 item 5: every refused governed write leaves exactly one audit row, also when
writes race. Pairs of saves from the same loaded version run at once in real threads (each
with its own database connection) through the whole stack (middleware, views, services):
one save of each pair is valid, the other is valid too (it loses: 409) or carries a value
the form or the API refuses (400). Each refused answer must be one ``refused`` row."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.models import ConfigChange

pytestmark = pytest.mark.django_db(transaction=True)

PAIRS = 6
Attempt = Callable[[Any], int]


def race(clients: Callable[[], Any], make_pair: Callable[[int], tuple[Attempt, Attempt]]) -> list[int]:
    """``PAIRS`` times: make a pair from the version as it is now, run its two attempts at
    once (a barrier); the statuses of all attempts."""
    statuses: list[int] = []
    lock = threading.Lock()
    for index in range(PAIRS):
        pair = make_pair(index)
        barrier = threading.Barrier(len(pair))

        def attempt(send: Attempt, barrier: threading.Barrier = barrier) -> None:
            client = clients()
            try:
                barrier.wait(10)
                status = send(client)
                with lock:
                    statuses.append(status)
            finally:
                connection.close()

        threads = [threading.Thread(target=attempt, args=(send,)) for send in pair]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    return statuses


def refused_rows() -> int:
    return ConfigChange.every.filter(outcome=ConfigChange.REFUSED).count()


def test_racing_constraint_forms_audit_every_refusal(builtin, staff_user):
    def logged_in() -> Client:
        client = Client()
        client.force_login(staff_user)
        return client

    def form(version: int, timeout: str) -> Attempt:
        body = {"version": str(version), "timeout_s": timeout, "max_retries": "3", "file_scope": "project"}
        body |= {"token_budget": "50000", "max_concurrent_instances": "4", "note": "race"}
        return lambda client: client.post("/constraints/pm/", body).status_code

    def make_pair(index: int) -> tuple[Attempt, Attempt]:
        version = token_client(staff_user).get("/api/v1/constraints/pm").json()["version"]
        loser = form(version, str(31 + index)) if index % 2 else form(version, "soon")
        return form(version, str(40 + index)), loser

    before = refused_rows()
    statuses = race(logged_in, make_pair)
    refusals = [s for s in statuses if s >= 400]
    assert sorted(set(refusals)) == [400, 409]
    assert refused_rows() - before == len(refusals)


def test_racing_matrix_saves_through_the_api_and_the_page_audit_every_refusal(builtin, staff_user):
    api_url = "/api/v1/permissions/invoke-matrix"

    def api_put(version: int, value: Any) -> Attempt:
        return lambda client: (
            client.put(api_url, {"version": version, "matrix": {"pm": {"dba": value}}}, format="json").status_code
        )

    def page_post(version: int, value: str) -> Attempt:
        def send(_client: Any) -> int:
            client = Client()
            client.force_login(staff_user)
            body = {"version": str(version), "base": value, "note": "race"}
            return client.post("/permissions/invoke/", body).status_code

        return send

    def make_pair(index: int) -> tuple[Attempt, Attempt]:
        doc = token_client(staff_user).get(api_url).json()
        now = doc["matrix"]["pm"]["dba"]
        allowed = now.get("allowed") if isinstance(now, dict) else now
        loser = api_put(doc["version"], not allowed) if index % 2 else page_post(doc["version"], "not json")
        return api_put(doc["version"], not allowed), loser

    before = refused_rows()
    statuses = race(lambda: token_client(staff_user), make_pair)
    refusals = [s for s in statuses if s >= 400]
    assert len(refusals) == PAIRS
    assert refused_rows() - before == len(refusals)


def token_client(user: Any) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client

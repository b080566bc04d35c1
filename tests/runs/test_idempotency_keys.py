"""Idempotency keys on the outside invoke (issue 28 item 4; ``runs.idempotency``): a retry
with the same ``Idempotency-Key`` and body gets the first answer and runs nothing again, also
when it arrives while the first still runs; the same key with another body is 422 naming the
key; the header is documented in the OpenAPI schema."""

from __future__ import annotations

import asyncio
import threading

import pytest
from drf_spectacular.generators import SchemaGenerator

from monitoring.models import Message
from teamclaw.runtime.executors.offline import synthesise
from tests.conftest import token_client

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"capability_id": "schema_query", "from_role": "coderA", "target_role": "dba", "params": {"table": "users"}}


def post(api, body, key=None):
    headers = {"HTTP_IDEMPOTENCY_KEY": key} if key is not None else {}
    return api.post("/api/v1/capabilities/invoke", body, format="json", **headers)


@pytest.fixture
def runs(runtime_host):
    """How many times the dba ran ``schema_query`` (each run takes 0.3 s)."""
    count = [0]

    async def slow(call):
        count[0] += 1
        await asyncio.sleep(0.3)
        return synthesise(call.card.output_schema, call.params, call.card.capability_id)

    runtime_host.runtime.executors.get("offline").register("schema_query", slow)
    return count


def test_a_retry_with_the_same_key_gets_the_first_answer_without_running_again(api, runtime_host, runs):
    first = post(api, BODY, "order-42")
    assert first.status_code == 200, first.content
    assert first.json()["success"] is True and runs[0] == 1
    again = post(api, BODY, "order-42")
    assert again.status_code == 200
    assert again.json() == first.json()  # the same invoke_id: the same call
    assert again["Idempotent-Replayed"] == "true"
    assert runs[0] == 1
    runtime_host.recorder.flush()
    assert Message.objects.filter(type="invoke_request", capability_id="schema_query").count() == 1

    other = post(api, BODY)  # no key: a new call
    assert other.json()["invoke_id"] != first.json()["invoke_id"] and runs[0] == 2


def test_the_same_key_with_another_body_is_422_naming_the_key(api, runtime_host, runs):
    assert post(api, BODY, "order-43").status_code == 200
    changed = post(api, {**BODY, "params": {"table": "orders"}}, "order-43")
    assert changed.status_code == 422, changed.content
    body = changed.json()
    assert list(body["errors"]) == ["Idempotency-Key"]
    assert "order-43" in body["detail"]
    assert runs[0] == 1


def test_keys_are_per_user(api, runtime_host, runs, django_user_model):
    other_staff = django_user_model.objects.create_user("other", password="x", is_staff=True)
    assert post(api, BODY, "shared").status_code == 200
    assert post(token_client(other_staff), {**BODY, "params": {"table": "orders"}}, "shared").status_code == 200
    assert runs[0] == 2


def test_a_retry_while_the_first_still_runs_waits_for_its_answer(api, runtime_host, runs):
    answers = []

    def call():
        answers.append(post(api, BODY, "order-44"))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json() == answers[1].json()
    assert runs[0] == 1


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9"])
def test_a_bad_key_is_400_naming_the_header(api, builtin, key):
    response = post(api, BODY, key)
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]) == ["Idempotency-Key"]


def test_the_schema_documents_the_header(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operation = schema["paths"]["/api/v1/capabilities/invoke"]["post"]
    [header] = [p for p in operation["parameters"] if p["in"] == "header"]
    assert header["name"] == "Idempotency-Key" and "422" in operation["responses"]

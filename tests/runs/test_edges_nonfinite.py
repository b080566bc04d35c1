"""Issue 17 item 1: a handler's NaN or Infinity is an ``output_invalid`` naming the field
(JSON pointer), never a 500 and never stored as null."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -math.inf])
def test_a_handler_returning_a_non_finite_number_is_output_invalid_naming_the_field(api, runtime_host, bad):
    async def columns(call):
        return {"table": "users", "columns": [{"name": "id", "type": "int", "score": bad}]}

    runtime_host.runtime.executors.get("offline").register("schema_query", columns)
    body = {"capability_id": "schema_query", "from_role": "coderA", "target_role": "dba", "params": {"table": "users"}}
    response = api.post("/api/v1/capabilities/invoke", body, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["success"] is False
    assert answer["error"]["code"] == "output_invalid"
    pointers = [e["pointer"] for e in answer["error"]["details"]["errors"]]
    assert pointers == ["/columns/0/score"]

"""The runtime through the REST API: invoke, hooks, messages, plugin registration, health,
confirmations (issue 3 API; seed 003 invoke call)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.models import CapabilityCard, ConfigChange
from monitoring.models import Message, Task, ToolConfirmation
from tests.factories import PLUGIN

pytestmark = pytest.mark.django_db(transaction=True)


def invoke(api, **body):
    response = api.post("/api/v1/capabilities/invoke", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_invoke_returns_the_invoke_result_and_seed_003_result(api, runtime_host):
    body = invoke(api, capability_id="schema_query", from_role="coderA", target_role="dba", params={"table": "users"})
    assert body["success"] is True
    assert body["error"] is None
    assert body["result"] == body["data"]
    assert body["data"]["columns"]
    assert body["from_instance"].startswith("dba-")
    assert body["latency_ms"] > 0


def test_runtime_refusals_are_200_with_success_false(api, runtime_host):
    denied = invoke(
        api,
        capability_id="deployment_config",
        from_role="coderA",
        target_role="devops",
        params={"service": "web", "environment": "staging"},
    )
    assert denied["success"] is False
    assert denied["error"]["code"] == "permission_denied"
    bad = invoke(api, capability_id="schema_query", from_role="coderA", target_role="dba", params={"table": "1x"})
    assert bad["error"]["code"] == "invalid_params"
    assert bad["error"]["details"]["errors"][0]["pointer"] == "/table"
    missing = invoke(api, address="cap://nowhere/none", from_role="main")
    assert missing["error"]["code"] == "capability_not_found"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"from_role": "main"}, "capability_id"),
        ({"capability_id": "x", "address": "cap://a/b", "from_role": "main"}, "capability_id"),
        ({"capability_id": "schema_query"}, "from_role"),
        ({"capability_id": "schema_query", "from_role": "ghost"}, "from_role"),
        ({"address": "cap://only-skill", "from_role": "main"}, "address"),
        ({"capability_id": "schema_query", "from_role": "main", "priority": "asap"}, "priority"),
        ({"capability_id": "schema_query", "from_role": "main", "timeout": -1}, "timeout"),
        ({"capability_id": "schema_query", "from_role": "main", "params": [1, 2]}, "params"),
        ({"capability_id": "schema_query", "from_role": "main", "project": "ghost"}, "project"),
        ({"capability_id": "schema_query", "from_role": "main", "routing": "by_instance"}, "target_instance_id"),
    ],
)
def test_malformed_invoke_requests_are_400_naming_the_field(api, builtin, body, field):
    response = api.post("/api/v1/capabilities/invoke", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_hooks_return_one_ack_per_receiver(api, runtime_host):
    response = api.post(
        "/api/v1/hooks",
        {
            "event_type": "code_completed",
            "from_role": "coderB",
            "payload": {"files": ["a.py"]},
            "target_roles": ["devops", "dba"],
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    acks = response.json()["acks"]
    assert sorted(a["role"] for a in acks) == ["dba", "devops"]
    assert {a["status"] for a in acks} == {"received"}
    bad = api.post("/api/v1/hooks", {"event_type": "x", "from_role": "main"}, format="json")
    assert bad.status_code == 400
    assert "target_roles" in bad.json()["errors"]


def test_message_log_filters_and_paginates(api, runtime_host):
    for _ in range(3):
        invoke(api, capability_id="schema_query", from_role="coderA", target_role="dba", params={"table": "t"})
    invoke(
        api,
        capability_id="deployment_config",
        from_role="coderA",
        target_role="devops",
        params={"service": "w", "environment": "staging"},
    )
    runtime_host.recorder.flush()
    denied = api.get("/api/v1/messages", {"status": "denied"}).json()
    assert denied["count"] == 1
    assert denied["results"][0]["to"]["role"] == "devops"
    requests = api.get(
        "/api/v1/messages", {"type": "invoke_request", "to_role": "dba", "order": "asc", "page_size": 2}
    ).json()
    assert requests["count"] == 3
    assert len(requests["results"]) == 2
    assert requests["next"]
    seqs = [m["seq"] for m in requests["results"]]
    assert seqs == sorted(seqs)
    assert api.get("/api/v1/messages", {"status": "lost"}).status_code == 400
    assert Message.objects.filter(status="delivered").exists()


def test_registering_a_plugin_capability(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    response = api.post("/api/v1/capabilities", PLUGIN, format="json")
    assert response.status_code == 201, response.content
    card = CapabilityCard.objects.get(capability_id="invoice_total")
    assert card.executor == "http"
    assert list(card.owner_roles.values_list("role", flat=True)) == ["coderB"]
    assert ConfigChange.objects.filter(config_type="capability").exists()
    again = api.post("/api/v1/capabilities", PLUGIN, format="json")
    assert again.status_code == 409


def test_registration_lists_every_error_and_refuses_unlisted_hosts(api, builtin):
    bad = {
        **PLUGIN,
        "version": "one",
        "category": "magic",
        "output_schema": {
            "type": "object",
            "properties": {"total": {"type": "number", "mininum": 0}},
            "required": ["total"],
        },
    }
    response = api.post("/api/v1/capabilities", bad, format="json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert {"version", "category", "output_schema", "executor_config.url"} <= set(errors)
    assert "TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS" in errors["executor_config.url"][0]
    assert not CapabilityCard.objects.filter(capability_id="invoice_total").exists()


def test_registration_refuses_a_format_the_server_does_not_check(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    schema = {"type": "object", "properties": {"total": {"type": "number", "format": "double"}}}
    response = api.post("/api/v1/capabilities", {**PLUGIN, "output_schema": schema}, format="json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body["errors"]) == {"output_schema"}
    assert body["errors"]["output_schema"][0].startswith("/properties/total/format: format 'double' is not checked")
    assert not CapabilityCard.objects.filter(capability_id="invoice_total").exists()


def test_registration_refuses_a_nested_ref_loop_naming_its_path(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    schema = {"type": "object", "properties": {"lines": {"type": "array"}, "meta": {"$ref": "#/properties/meta"}}}
    response = api.post("/api/v1/capabilities", {**PLUGIN, "input_schema": schema}, format="json")
    assert response.status_code == 400, response.content
    (reason,) = response.json()["errors"]["input_schema"]
    assert reason.startswith("/properties/meta/$ref: '#/properties/meta' loops back to /properties/meta")


def test_a_plugin_is_not_idempotent_unless_registered_so(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    assert api.post("/api/v1/capabilities", PLUGIN, format="json").status_code == 201
    assert api.get("/api/v1/capabilities/invoice_total").json()["idempotent"] is False
    again = {**PLUGIN, "id": "invoice_check", "idempotent": True}
    assert api.post("/api/v1/capabilities", again, format="json").status_code == 201
    assert api.get("/api/v1/capabilities/invoice_check").json()["idempotent"] is True
    bad = api.post("/api/v1/capabilities", {**PLUGIN, "id": "invoice_x", "idempotent": "yes"}, format="json")
    assert bad.status_code == 400
    assert "idempotent" in bad.json()["errors"]
    assert api.get("/api/v1/capabilities/schema_query").json()["idempotent"] is True  # in-process


def test_only_staff_may_register(builtin, viewer_user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert client.post("/api/v1/capabilities", PLUGIN, format="json").status_code == 403


def test_capability_health(api, runtime_host):
    body = api.get("/api/v1/capabilities/schema_query/health").json()
    assert body["status"] == "available"
    assert body["instances"] == []
    invoke(api, capability_id="schema_query", from_role="coderA", target_role="dba", params={"table": "t"})
    body = api.get("/api/v1/capabilities/schema_query/health").json()
    assert body["instances"][0]["healthy"] is True
    assert api.get("/api/v1/capabilities/ghost/health").status_code == 404


def test_confirmation_decisions(api, runtime_host, viewer_user):
    assert api.post("/api/v1/confirmations/nope", {"approve": True}, format="json").status_code == 404
    ToolConfirmation.objects.create(
        id="c1",
        context_id="x",
        instance_id="i",
        role="main",
        task_id="t",
        tool="network",
        args={},
        status="approved",
        created_at="2026-01-01T00:00:00Z",
        expires_at="2026-01-01T00:10:00Z",
    )
    assert api.post("/api/v1/confirmations/c1", {"approve": True}, format="json").status_code == 409
    ToolConfirmation.objects.create(
        id="c2",
        context_id="x",
        instance_id="i",
        role="main",
        task_id="t",
        tool="network",
        args={},
        status="pending",
        created_at="2026-01-01T00:00:00Z",
        expires_at="2026-01-01T00:10:00Z",
    )
    gone = api.post("/api/v1/confirmations/c2", {"approve": True}, format="json")
    assert gone.status_code == 409
    assert "no longer waiting" in gone.json()["detail"]
    assert ToolConfirmation.objects.get(pk="c2").status == "expired"
    assert api.post("/api/v1/confirmations/c2", {}, format="json").status_code == 400
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    assert viewer.post("/api/v1/confirmations/c2", {"approve": True}, format="json").status_code == 403


def test_a_tool_waiting_for_confirmation_resumes_when_an_operator_approves_over_the_api(api, runtime_host):
    import threading
    import time

    from django.db import transaction

    from capabilities.config import record_change
    from capabilities.models import ToolPermission

    with transaction.atomic():
        ToolPermission.objects.filter(project=None, role__role="devops", tool="file_write").update(mode="confirm")
        record_change("tool_binding", role="devops", changed_fields=["file_write"])

    async def write_config(call):
        written = await call.use_tool("file_write", path="deploy/web.yaml", content="replicas: 2\n")
        return {"files": [{"path": written["path"], "content": "replicas: 2\n"}], "notes": "written"}

    runtime_host.runtime.executors.get("offline").register("deployment_config", write_config)
    outcome = {}

    def call_api():
        outcome["body"] = invoke(
            api,
            capability_id="deployment_config",
            from_role="main",
            target_role="devops",
            params={"service": "web", "environment": "staging"},
        )

    caller = threading.Thread(target=call_api)
    caller.start()
    deadline = time.monotonic() + 30
    pending = None
    while pending is None and time.monotonic() < deadline:
        runtime_host.recorder.flush()
        pending = ToolConfirmation.objects.filter(status="pending", tool="file_write").first()
        time.sleep(0.05)
    assert pending is not None
    assert pending.role == "devops"
    decision = api.post(f"/api/v1/confirmations/{pending.id}", {"approve": True}, format="json")
    assert decision.status_code == 200
    assert decision.json()["status"] == "approved"
    caller.join(30)
    assert outcome["body"]["success"] is True
    assert ToolConfirmation.objects.get(pk=pending.id).status == "approved"


def test_a_saved_matrix_change_applies_from_the_next_task(api, runtime_host):
    from django.db import transaction

    from capabilities.config import record_change
    from capabilities.models import InvokePermission

    body = dict(capability_id="schema_query", from_role="coderA", target_role="dba", params={"table": "t"})
    assert invoke(api, **body)["success"]
    with transaction.atomic():
        InvokePermission.objects.filter(project=None, caller__role="coderA", target__role="dba").update(allowed=False)
        record_change("permission", role="coderA", changed_fields=["can_invoke"])
    after = invoke(api, **body)
    assert after["success"] is False
    assert after["error"]["code"] == "permission_denied"


def test_only_staff_may_invoke_or_hook_as_a_role(runtime_host, viewer_user):
    client = APIClient()
    client.force_authenticate(viewer_user)
    body = {
        "capability_id": "environment_management",
        "from_role": "main",
        "params": {"environment": "production", "action": "destroy"},
    }
    assert client.post("/api/v1/capabilities/invoke", body, format="json").status_code == 403
    hook = {"event_type": "x", "from_role": "main", "target_roles": ["devops"]}
    assert client.post("/api/v1/hooks", hook, format="json").status_code == 403


def test_a_finished_task_can_never_be_reopened_through_task_id(api, runtime_host):
    from tests.helpers import wait_for_task

    created = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": "# T\n- must work\n"}, format="json"
    ).json()
    task = wait_for_task(runtime_host, created["task_id"])
    before = (task.status, task.tokens_used, task.finished_at, task.error)
    artifacts = dict(task.artifacts.values_list("name", "content"))
    response = api.post(
        "/api/v1/capabilities/invoke",
        {
            "capability_id": "task_orchestration",
            "from_role": "main",
            "task_id": task.id,
            "params": {"workflow": "requirement_review", "task_description": "x", "input_markdown": "# EVIL\n- x\n"},
        },
        format="json",
    )
    assert response.status_code == 400
    assert "is not running" in response.json()["errors"]["task_id"][0]
    hook = api.post(
        "/api/v1/hooks",
        {"event_type": "x", "from_role": "main", "target_roles": ["pm"], "task_id": task.id},
        format="json",
    )
    assert hook.status_code == 400
    runtime_host.recorder.flush()
    task.refresh_from_db()
    assert (task.status, task.tokens_used, task.finished_at, task.error) == before
    assert dict(task.artifacts.values_list("name", "content")) == artifacts


def test_a_hook_cannot_run_a_capability_the_matrix_denies(api, runtime_host):
    response = api.post(
        "/api/v1/hooks",
        {
            "event_type": "please_destroy",
            "from_role": "dba",
            "target_roles": ["devops"],
            "capability_id": "environment_management",
            "payload": {"environment": "production", "action": "destroy"},
        },
        format="json",
    )
    [ack] = response.json()["acks"]
    assert ack["status"] == "rejected"
    assert ack["reason"] == "permission_denied"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"event_type": "bad type!", "from_role": "main", "target_roles": ["pm"]}', "event_type"),
        ('{"event_type": "x", "from_role": "main", "target_roles": ["pm"], "payload": {"k": "\\ud800"}}', "payload.k"),
    ],
)
def test_hook_input_is_checked(api, builtin, raw, field):
    response = api.generic("POST", "/api/v1/hooks", raw, content_type="application/json")
    assert response.status_code == 400
    if field:
        assert field in response.json()["errors"]


def test_oversized_or_unwalkable_params_are_refused_cleanly(api, runtime_host):
    big = api.post(
        "/api/v1/capabilities/invoke",
        {
            "capability_id": "schema_query",
            "from_role": "coderA",
            "target_role": "dba",
            "params": {"table": "x" * 1_100_000},
        },
        format="json",
    )
    assert big.status_code == 400
    assert "limit is 1,000,000" in big.json()["errors"]["params"][0]
    deep: dict = {"table": "t"}
    node = deep
    for _ in range(700):
        node["x"] = {}
        node = node["x"]
    walked = api.post(
        "/api/v1/capabilities/invoke",
        {"capability_id": "schema_query", "from_role": "coderA", "target_role": "dba", "params": deep},
        format="json",
    )
    assert walked.status_code == 400  # past the parser's 64 levels (teamclaw.strict_json.MAX_DEPTH)
    assert "nests too deeply" in walked.json()["detail"]
    runtime_host.recorder.flush()
    assert not Task.objects.filter(status="running").exists()

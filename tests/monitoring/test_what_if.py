"""What-if: a staged matrix change replayed against the recorded invoke traffic (issue 5)."""

from __future__ import annotations

import itertools
import time
from types import SimpleNamespace

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from capabilities.matrices import INVOKE, apply_cells
from capabilities.models import AgentRole, Project
from monitoring.models import Message, Task
from monitoring.whatif import DAY_MS, invoke_what_if, tool_what_if

_ids = itertools.count(1)
EVERYONE = SimpleNamespace(is_authenticated=True, is_active=True, is_staff=True, is_superuser=False)
"""A viewer who sees every task (staff): the report counts all recorded traffic."""


def record(
    caller, callee, capability="schema_query", status="delivered", reason="", project=None, age_days=0.0, n=1, task="t1"
):
    now = int(time.time() * 1000)
    for _ in range(n):
        i = next(_ids)
        Message.objects.create(
            id=f"m{i}",
            seq=i,
            type="invoke_request",
            from_role=caller,
            to_role=callee,
            capability_id=capability,
            task_id=task,
            project_id=project,
            payload={},
            priority="normal",
            ttl_ms=60_000,
            timestamp_ms=now - int(age_days * DAY_MS),
            status=status,
            reason=reason,
        )


@pytest.fixture
def shop(db):
    return Project.objects.create(slug="shop", name="Shop")


def group(report, caller, callee, effect):
    found = [g for g in report["groups"] if (g["caller"], g["callee"], g["effect"]) == (caller, callee, effect)]
    return found[0] if found else None


def test_denying_a_cell_flags_the_calls_it_let_through_and_allowing_one_flags_its_refusals(builtin):
    record("coderA", "dba", n=3)
    record("coderA", "dba", status="expired")
    record("coderA", "dba", age_days=8)  # outside the window
    record("pm", "dba", status="denied", reason="permission_denied", n=2)
    record("coderA", "dba", status="denied", reason="capability_disabled")
    record("coderA", "designer", capability="ui_design", n=5)  # a cell the change does not touch
    record("user", "main", capability="task_orchestration")
    report = invoke_what_if(None, {("coderA", "dba"): False, ("pm", "dba"): True}, days=7, viewer=EVERYONE)
    denied = group(report, "coderA", "dba", "denied")
    assert denied["count"] == 4
    assert denied["statuses"] == {"delivered": 3, "expired": 1}
    assert denied["capabilities"] == ["schema_query"]
    assert denied["label"] == "would now be denied"
    allowed = group(report, "pm", "dba", "allowed")
    assert allowed["count"] == 2
    assert allowed["statuses"] == {"denied": 2}
    assert report["summary"] == {"denied": 4, "allowed": 2, "confirm": 0}
    assert report["refused_for_other_reasons"] == 1
    assert report["considered"] == 6
    assert len(report["groups"]) == 2
    assert {(c["row"], c["column"], c["current"], c["proposed"]) for c in report["changed_cells"]} == {
        ("coderA", "dba", True, False),
        ("pm", "dba", False, True),
    }


def test_a_longer_window_reaches_older_traffic(builtin):
    record("coderA", "dba", age_days=8)
    assert invoke_what_if(None, {("coderA", "dba"): False}, days=7, viewer=EVERYONE)["summary"]["denied"] == 0
    assert invoke_what_if(None, {("coderA", "dba"): False}, days=9, viewer=EVERYONE)["summary"]["denied"] == 1


def test_cells_staged_to_their_current_value_have_no_effect(builtin):
    record("coderA", "dba", n=2)
    report = invoke_what_if(None, {("coderA", "dba"): True}, days=7, viewer=EVERYONE)
    assert report["changed_cells"] == []
    assert report["groups"] == []


def test_a_global_change_does_not_reach_projects_that_override_the_cell(builtin, shop):
    roles = {r.role: r for r in AgentRole.objects.all()}
    apply_cells(INVOKE, shop, {("coderA", "dba"): True}, roles)  # same as global: no override row
    blog = Project.objects.create(slug="blog", name="Blog")
    apply_cells(INVOKE, blog, {("coderA", "dba"): False}, roles)  # blog already denies
    apply_cells(INVOKE, shop, {("pm", "dba"): True}, roles)  # shop pins pm -> dba
    record("coderA", "dba", project="shop", n=2)
    record("coderA", "dba", project="blog", status="denied", reason="permission_denied")
    record("coderA", "dba")
    report = invoke_what_if(None, {("coderA", "dba"): False}, days=7, viewer=EVERYONE)
    denied = group(report, "coderA", "dba", "denied")
    assert denied["count"] == 3
    assert sorted(denied["projects"]) == ["(global)", "shop"]
    assert report["unaffected_by_project_overrides"] == 1


def test_a_project_change_only_looks_at_that_project_s_traffic(builtin, shop):
    record("coderA", "dba", project="shop", n=2)
    record("coderA", "dba", n=7)
    report = invoke_what_if(shop, {("coderA", "dba"): False}, days=7, viewer=EVERYONE)
    assert report["summary"]["denied"] == 2
    assert report["project"] == "shop"
    reset = invoke_what_if(shop, {("coderA", "dba"): None}, days=7, viewer=EVERYONE)  # back to global: no change
    assert reset["changed_cells"] == []


def test_tool_changes_reach_invokes_of_capabilities_that_declare_the_tool(builtin):
    record("coderA", "dba", capability="schema_query", n=2)  # schema_query requires database
    record("main", "devops", capability="deployment_config")  # requires file_write, deployment
    record("coderA", "dba", capability="schema_query", status="denied", reason="permission_denied")
    staged = {("dba", "database"): "confirm", ("devops", "deployment"): "deny"}
    report = tool_what_if(None, staged, days=7, viewer=EVERYONE)
    confirm = group(report, "coderA", "dba", "confirm")
    assert confirm["count"] == 2
    assert confirm["tools"] == ["database"]
    assert confirm["label"] == "would now wait for confirmation"
    denied = group(report, "main", "devops", "denied")
    assert denied["count"] == 1
    assert denied["tools"] == ["deployment"]
    assert report["refused_for_other_reasons"] == 1
    relaxed = tool_what_if(None, {("pm", "network"): "allow"}, days=7, viewer=EVERYONE)
    assert relaxed["groups"] == []
    assert relaxed["changed_cells"][0]["proposed"] == "allow"


def test_the_what_if_endpoint_reads_only_and_checks_its_input(api, builtin, viewer_user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    record("coderA", "dba", n=2)
    response = api.post(
        "/api/v1/permissions/invoke-matrix/what-if?days=3", {"matrix": {"coderA": {"dba": False}}}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["summary"]["denied"] == 2
    assert response.json()["days"] == 3
    bad = api.post("/api/v1/permissions/invoke-matrix/what-if?days=0", {"matrix": {}}, format="json")
    assert bad.status_code == 400
    assert "days" in bad.json()["errors"]
    bad_cell = api.post("/api/v1/permissions/tool-matrix/what-if", {"matrix": {"dba": {"x": "allow"}}}, format="json")
    assert bad_cell.status_code == 400
    assert "matrix.dba.x" in bad_cell.json()["errors"]
    viewer = APIClient()
    viewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    seen = viewer.post(
        "/api/v1/permissions/tool-matrix/what-if", {"matrix": {"dba": {"database": "deny"}}}, format="json"
    )
    assert seen.status_code == 200


def traffic_of_two_users(viewer_user):
    """coderA -> dba: 2 invokes in the viewer's own task, 5 in someone else's, 1 in no one's."""
    other = get_user_model().objects.create_user("someone-else", password="x")
    Task.objects.create(id="mine", status="completed", created_by=viewer_user)
    Task.objects.create(id="theirs", status="completed", created_by=other)
    record("coderA", "dba", n=2, task="mine")
    record("coderA", "dba", n=5, task="theirs")
    record("coderA", "dba", n=1, task="standalone")


INVOKE_BODY = ("/api/v1/permissions/invoke-matrix/what-if", {"matrix": {"coderA": {"dba": False}}})
TOOL_BODY = ("/api/v1/permissions/tool-matrix/what-if", {"matrix": {"dba": {"database": "deny"}}})


@pytest.mark.parametrize(("url", "body"), [INVOKE_BODY, TOOL_BODY])
def test_a_user_who_sees_only_own_tasks_gets_what_if_over_those_tasks_only(builtin, viewer_user, url, body):
    traffic_of_two_users(viewer_user)
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    report = viewer.post(url, body, format="json").json()
    assert report["summary"]["denied"] == 2
    assert report["traffic"] == "your tasks"


@pytest.mark.parametrize(("url", "body"), [INVOKE_BODY, TOOL_BODY])
def test_staff_and_holders_of_view_task_get_what_if_over_all_traffic(api, builtin, viewer_user, url, body):
    traffic_of_two_users(viewer_user)
    report = api.post(url, body, format="json").json()
    assert report["summary"]["denied"] == 8
    assert report["traffic"] == "all"
    viewer_user.user_permissions.add(Permission.objects.get(codename="view_task", content_type__app_label="monitoring"))
    viewer = APIClient()
    viewer.force_authenticate(get_user_model().objects.get(pk=viewer_user.pk))
    assert viewer.post(url, body, format="json").json()["summary"]["denied"] == 8


def test_the_what_if_panel_of_a_user_who_sees_only_own_tasks_counts_those_tasks(builtin, viewer_user):
    from tests.web.test_governance_pages import invoke_form

    traffic_of_two_users(viewer_user)
    client = Client()
    client.force_login(viewer_user)
    html = client.post("/permissions/invoke/what-if/", invoke_form(allow={"coderA:dba": False})).content.decode()
    assert "2 would now be denied" in html
    assert "only the tasks you may see" in html


def run_recorded_tool_uses(tmp_path, uses: dict[str, tuple[str, int]]) -> str:
    """Run a real runtime whose roles use ``file_write`` (``role -> (matrix mode, uses)``),
    each called once by coderA, with the real recorder writing the contexts to the database.
    Returns the task id."""
    import asyncio

    from monitoring.recorder import Recorder
    from teamclaw.runtime import Constraints, ExecutorRegistry, InvokeRequest, OfflineExecutor, Runtime, TaskStatus
    from tests.factories import echo_card, small_snapshot

    async def scenario() -> str:
        recorder = Recorder(batch_wait_s=0.001)
        recorder.start()
        offline = OfflineExecutor(charge_tokens=False)

        async def save(call):
            for i in range(uses[call.role][1]):
                try:
                    await call.use_tool("file_write", path=f"{call.role}/copy{i}.md", content="# saved\n")
                except Exception:
                    return {"text": "refused"}
            return {"text": "saved"}

        cards = [echo_card(f"save_{role}", owners=(role,)) for role in uses]
        for card in cards:
            offline.register(card.capability_id, save)
        snapshot = small_snapshot(
            roles=["coderA", *uses],
            cards=cards,
            allowed=[("coderA", role) for role in uses],
            tool_modes={(role, "file_write"): mode for role, (mode, _n) in uses.items()},
            project_dir=str(tmp_path),
            constraints=Constraints(max_retries=0),
        )
        runtime = Runtime(snapshot=snapshot, sinks=[recorder], executors=ExecutorRegistry({"offline": offline}))
        try:
            task = await runtime.begin_task(entry_role="coderA")
            for role in uses:
                await runtime.invoke(
                    InvokeRequest(f"save_{role}", {"text": "x"}), from_role="coderA", task_id=task.task_id
                )
            runtime.end_task(task.task_id, TaskStatus.COMPLETED)
            await asyncio.to_thread(recorder.flush)
        finally:
            await runtime.stop()
            await asyncio.to_thread(recorder.stop)
        return task.task_id

    return asyncio.run(scenario())


@pytest.mark.django_db(transaction=True)
def test_the_tool_what_if_counts_the_recorded_tool_uses_of_each_role_and_tool(builtin, tmp_path):
    """Issue 17: right after main used file_write three times, confirming main's file_write
    reported 0 affected. The recorded uses (a real runtime, the real recorder) are counted."""
    from capabilities.models import ToolPermission

    ToolPermission.objects.filter(role__role="pm", tool="file_write", project__isnull=True).update(mode="deny")
    run_recorded_tool_uses(tmp_path, {"main": ("allow", 3), "pm": ("deny", 1)})
    assert (tmp_path / "main" / "copy2.md").exists()
    report = tool_what_if(None, {("main", "file_write"): "confirm", ("pm", "file_write"): "allow"}, viewer=EVERYONE)
    uses = report["tool_uses"]
    [confirm] = [g for g in uses["groups"] if g["role"] == "main"]
    assert (confirm["tool"], confirm["effect"], confirm["count"]) == ("file_write", "confirm", 3)
    assert confirm["outcomes"] == {"used": 3}
    assert confirm["projects"] == ["(global)"]
    [allowed] = [g for g in uses["groups"] if g["role"] == "pm"]
    assert (allowed["effect"], allowed["count"], allowed["outcomes"]) == ("allowed", 1, {"denied": 1})
    assert uses["summary"] == {"denied": 0, "allowed": 1, "confirm": 3}
    assert uses["considered"] == 4
    untouched = tool_what_if(None, {("main", "file_read"): "deny"}, viewer=EVERYONE)["tool_uses"]
    assert untouched["groups"] == [] and untouched["considered"] == 0


@pytest.mark.django_db(transaction=True)
def test_the_tool_what_if_panel_shows_the_recorded_tool_uses(builtin, tmp_path, staff_user):
    from capabilities.matrices import TOOL, matrix_document
    from capabilities.matrix_forms import base_json

    run_recorded_tool_uses(tmp_path, {"main": ("allow", 3)})
    doc = matrix_document(TOOL, None)
    form = {"version": doc["version"], "base": base_json(TOOL, doc), "cell:main:file_write": "deny", "days": "7"}
    client = Client()
    client.force_login(staff_user)
    html = client.post("/permissions/tools/what-if/", form).content.decode()
    assert "3 recorded tool uses would now be denied" in html
    assert "Main (Supervisor)</span> · <code>file_write</code>" in html  # the role by name (issue 32)

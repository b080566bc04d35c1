"""The skills pages: list with state badges and actions, upload with every problem listed,
detail with capabilities by type, confirmation before deactivating with dependents, the
dependency graph as SVG, workflows and alerts; login, staff and CSRF everywhere."""

from __future__ import annotations

import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from capabilities.models import Skill
from capabilities.skill_models import Workflow
from monitoring.models import Alert
from tests.helpers import wait_for_task
from tests.skills.support import add_fields, bring_up, seed_text, skill_yaml, upload
from tests.skills.test_workflows import ASSISTANT, FLOW

PAGES = ["/skills/", "/skills/_upload/", "/graph/", "/workflows/", "/workflows/_new/", "/alerts/"]


@pytest.mark.parametrize("path", PAGES)
def test_pages_need_a_login(builtin, path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_the_empty_skill_list_says_what_a_skill_is(page_client, builtin):
    html = page_client.get("/skills/").content.decode()
    assert "No skill yet" in html
    assert "skill-index.yaml" in html


def test_uploading_a_file_lands_on_the_detail_page(page_client, builtin):
    file = SimpleUploadedFile("skill-index.yaml", seed_text("hr-assistant").encode(), "application/yaml")
    response = page_client.post("/skills/_upload/", {"file": file})
    assert response.status_code == 302
    assert response["Location"] == "/skills/hr-assistant/"
    html = page_client.get("/skills/").content.decode()
    assert "skill-discovered" in html
    assert "/skills/hr-assistant/install/" in html


def test_a_refused_upload_lists_every_problem_with_its_line(page_client, builtin):
    response = page_client.post("/skills/_upload/", {"yaml": seed_text("weather-service")})
    assert response.status_code == 400
    html = response.content.decode()
    assert "2 problems" in html
    assert "skill.name" in html
    assert "skill.version" in html
    assert "line 3" in html
    assert not Skill.objects.exists()


def test_the_detail_page_groups_capabilities_by_type_with_addresses_health_and_metrics(page_client, api, runtime_host):
    bring_up(api, seed_text("hr-assistant"))
    html = page_client.get("/skills/hr-assistant/").content.decode()
    for text in ("capabilities-entry", "capabilities-exposed", "capabilities-internal", "cap://hr-assistant/chat"):
        assert text in html
    assert "health-healthy" in html
    assert "ACTIVATED" in html
    assert "activate" in html
    assert "Install" in html  # the history


def test_the_detail_page_shows_dependencies_with_status_and_providers(page_client, api, runtime_host):
    bring_up(api, add_fields(seed_text("llm-provider"), version="1.0.0"), role="architect")
    upload(api, add_fields(seed_text("smart-workflow"), version="1.0.0"))
    api.post("/api/v1/skills/smart-workflow/install", {}, format="json")
    html = page_client.get("/skills/smart-workflow/").content.decode()
    assert "MISSING" in html
    assert "cap://llm-service/chat" in html
    assert "required dependencies missing" in html
    provider = page_client.get("/skills/llm-provider/").content.decode()
    assert 'id="providers"' in provider
    assert "OpenAI" in provider
    assert "active" in provider


def test_deactivation_is_confirmed_on_a_page_listing_what_depends_on_the_skill(page_client, api, builtin):
    bring_up(api, skill_yaml("base", "core"), role="dba")
    bring_up(api, skill_yaml("top", "use:ENTRY", extra="  dependencies:\n    - {skillId: base, capability: core}\n"))
    page = page_client.get("/skills/base/deactivate/").content.decode()
    assert 'id="dependents"' in page
    assert "/skills/top/" in page
    assert "requires it" in page
    assert "dba" in page
    refused = page_client.post("/skills/base/deactivate/", {})
    assert refused.status_code == 409
    assert "Nothing was changed" in refused.content.decode()
    assert Skill.objects.get(skill_id="base").status == "ACTIVATED"
    done = page_client.post("/skills/base/deactivate/", {"force": "on"})
    assert done.status_code == 302
    assert Skill.objects.get(skill_id="base").status == "DEACTIVATED"


def test_activation_form_refuses_a_missing_role_and_accepts_a_real_one(page_client, api, builtin):
    upload(api, skill_yaml("formed", "x"))
    page_client.post("/skills/formed/install/", {"config": '{"a": 1}'})
    assert Skill.objects.get(skill_id="formed").install_config == {"a": 1}
    refused = page_client.post("/skills/formed/activate/", {"role": ""})
    assert refused.status_code == 400
    assert "role" in refused.content.decode()
    assert page_client.post("/skills/formed/activate/", {"role": "coderB"}).status_code == 302
    assert Skill.objects.get(skill_id="formed").status == "ACTIVATED"


def test_bad_install_config_json_is_refused_with_the_line(page_client, api, builtin):
    upload(api, skill_yaml("cfg", "x"))
    response = page_client.post("/skills/cfg/install/", {"config": '{"a": '})
    assert response.status_code == 400
    assert "not JSON" in response.content.decode()
    assert Skill.objects.get(skill_id="cfg").status == "DISCOVERED"


def test_viewers_see_skills_but_cannot_change_them(client, viewer_user, api, builtin):
    upload(api, skill_yaml("seen", "x"))
    client.force_login(viewer_user)
    assert client.get("/skills/seen/").status_code == 200
    assert "/skills/seen/install/" not in client.get("/skills/").content.decode()
    assert client.post("/skills/seen/install/", {}).status_code == 403
    assert client.get("/skills/_upload/").status_code == 403
    assert Skill.objects.get(skill_id="seen").status == "DISCOVERED"


def test_forms_need_the_csrf_token(staff_user, builtin):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    assert client.post("/skills/_upload/", {"yaml": seed_text("hr-assistant")}).status_code == 403
    page = client.get("/skills/_upload/").content.decode()
    assert "csrfmiddlewaretoken" in page


def test_the_dependency_graph_is_an_svg_with_roles_capabilities_and_skills(page_client, api, builtin):
    bring_up(api, skill_yaml("base", "core"), role="dba")
    upload(api, skill_yaml("top", "use:ENTRY", extra="  dependencies:\n    - {skillId: base, capability: core}\n"))
    html = page_client.get("/graph/").content.decode()
    assert "<svg" in html
    assert "Capability dependency graph" in html
    assert 'data-id="skill:top"' in html
    assert 'data-id="role:dba"' in html
    assert 'data-id="cap:base__core"' in html
    assert 'data-kind="depends_on"' in html
    assert 'data-kind="owns"' in html
    assert 'data-kind="provides"' in html
    full = page_client.get("/graph/?scope=all&invoke=1").content.decode()
    assert 'data-id="cap:task_orchestration"' in full
    assert 'data-kind="may_invoke"' in full


def test_graph_labels_are_escaped(page_client, api, builtin):
    upload(api, skill_yaml("xss", "x", extra="  spec: {description: '<script>alert(1)</script>'}\n"))
    text = skill_yaml("evil", "x").replace("name: evil skill", "name: '<script>alert(1)</script>'")
    upload(api, text)
    html = page_client.get("/skills/evil/").content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "<script>alert" not in page_client.get("/graph/").content.decode()


def test_workflow_pages_save_refuse_and_run(page_client, api, runtime_host):
    bring_up(api, ASSISTANT)
    refused = page_client.post("/workflows/_new/", {"yaml": FLOW.replace("next: format-response", "next: nowhere")})
    assert refused.status_code == 400
    assert "unknown step" in refused.content.decode()
    saved = page_client.post("/workflows/_new/", {"yaml": FLOW})
    assert saved.status_code == 302
    assert Workflow.objects.filter(workflow_id="assistant-flow").exists()
    detail = page_client.get("/workflows/assistant-flow/").content.decode()
    assert "route-by-intent" in detail
    assert "switch on" in detail
    bad = page_client.post("/workflows/assistant-flow/", {"input": "[1"})
    assert bad.status_code == 400
    assert "not JSON" in bad.content.decode()
    run = page_client.post("/workflows/assistant-flow/", {"input": '{"intent": "smalltalk", "query": "hi"}'})
    assert run.status_code == 302
    assert run["Location"].startswith("/tasks/")
    task = wait_for_task(runtime_host, run["Location"].split("/")[2])
    assert task.status == "completed", task.error
    assert "assistant-flow" in page_client.get("/workflows/assistant-flow/").content.decode()


def test_the_alerts_page_lists_filters_and_resolves(page_client, builtin):
    first = Alert.objects.create(
        kind="alert_rule", severity="critical", message="p99 too high", created_at="2026-01-01T00:00:00Z"
    )
    Alert.objects.create(
        kind="queue_full", severity="warning", message="queue dropped", created_at="2026-01-01T00:00:01Z"
    )
    html = page_client.get("/alerts/").content.decode()
    assert "p99 too high" in html
    assert "queue dropped" in html
    critical = page_client.get("/alerts/?severity=critical").content.decode()
    assert "p99 too high" in critical
    assert "queue dropped" not in critical
    rows = page_client.get("/alerts/", HTTP_HX_REQUEST="true").content.decode()
    assert rows.lstrip().startswith('<table class="alerts"')
    assert page_client.post(f"/alerts/{first.pk}/resolve/").status_code == 302
    first.refresh_from_db()
    assert first.resolved_at is not None
    assert "No alert matches" in page_client.get("/alerts/?status=open").content.decode()


def test_the_dashboard_shows_active_entry_points(page_client, api, builtin):
    bring_up(api, seed_text("hr-assistant"))
    html = page_client.get("/").content.decode()
    assert 'id="entry-points"' in html
    assert "cap://hr-assistant/chat" in html
    assert "cap://hr-assistant/queryEmployeeInfo" not in html  # EXPOSED is not an entry point


def test_the_detail_page_renders_while_the_runtime_has_not_loaded_a_new_card(page_client, api, builtin, monkeypatch):
    bring_up(api, skill_yaml("fresh", "lookup"))
    monkeypatch.setattr("web.pages.skills.capability_status_here", lambda capability_id, timeout_s: None)
    response = page_client.get("/skills/fresh/")
    assert response.status_code == 200
    assert "UNKNOWN" in response.content.decode()
    assert "not loaded" in response.content.decode()


def test_a_runtime_that_does_not_answer_delays_the_page_once_not_per_capability(page_client, api, builtin, monkeypatch):
    """The page's capabilities share one wait (HEALTH_WAIT_S) for the runtime's health."""
    bring_up(api, skill_yaml("slow", "lookup", "search"))
    waits: list[float] = []

    def no_answer(capability_id, timeout_s):
        waits.append(timeout_s)
        time.sleep(timeout_s)
        raise TimeoutError

    monkeypatch.setattr("web.pages.skills.HEALTH_WAIT_S", 0.3)
    monkeypatch.setattr("web.pages.skills.capability_status_here", no_answer)
    html = page_client.get("/skills/slow/").content.decode()
    assert "the runtime did not answer within 0.3 s" in html
    assert len(waits) == 2 and waits[0] <= 0.3 and waits[1] <= 0.1  # the second gets what is left
    zh = page_client.get("/skills/slow/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "运行时在 0.3 秒内没有应答" in zh


@pytest.mark.django_db(transaction=True)  # stops a host an earlier test left, so the last line means something
def test_a_web_process_without_agents_shows_the_workers_health(page_client, api, builtin, settings):
    """TEAMCLAW_RUNTIME=remote: the page reads health from the workers' rows (none alive here)
    and starts no runtime of its own (runs.health_here)."""
    from runs.host import current_host
    from runs.models import RuntimeWorker

    bring_up(api, skill_yaml("far", "lookup"))
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}
    RuntimeWorker.objects.all().delete()  # no worker alive here, whatever earlier tests left
    html = page_client.get("/skills/far/").content.decode()
    assert "UNHEALTHY" in html and "no runtime worker is alive" in html
    assert current_host() is None


def error_box(response) -> str:
    return response.content.decode().split('id="action-error"')[1].split("</div>")[0]


def test_a_refused_action_states_each_reason_once(page_client, api, builtin):
    upload(api, skill_yaml("once", "x"))
    bad_json = error_box(page_client.post("/skills/once/install/", {"config": '{"a": '}))
    assert bad_json.count("not JSON") == 1
    page_client.post("/skills/once/install/", {"config": "{}"})
    no_role = error_box(page_client.post("/skills/once/activate/", {"role": ""}))
    assert "role is required" in no_role
    assert no_role.count("required") == 1
    ghost = error_box(page_client.post("/skills/once/activate/", {"role": "ghost"}))
    assert '<strong class="error">there is no role &#x27;ghost&#x27;</strong>' in ghost
    assert ghost.count("there is no role") == 1


def test_the_activate_form_requires_a_role_offers_only_fitting_ones_and_says_why(page_client, api, builtin):
    """Issue 17: the form let an operator submit no role and wrote a permanent FAILED entry."""
    from capabilities.models import AgentRole, InvokePermission
    from capabilities.skill_models import SkillOperation

    AgentRole.objects.filter(role="dba").update(enabled=False)
    InvokePermission.objects.filter(target__role="main", project__isnull=True).delete()  # nobody may invoke main
    upload(api, skill_yaml("fitted", "lookup"))  # an EXPOSED capability
    api.post("/api/v1/skills/fitted/install", {}, format="json")
    html = page_client.get("/skills/fitted/activate/").content.decode()
    select = html.split('<select id="id_role"')[1].split("</select>")[0]
    assert select.startswith(' name="role" required>')
    assert 'value="devops"' in select
    assert 'value="dba"' not in select and 'value="main"' not in select
    fit = html.split('id="roles-that-fit"')[1].split("</ul>")[0]
    assert 'data-role="devops"' in fit and "can be invoked by" in fit
    unfit = html.split('id="roles-that-do-not-fit"')[1].split("</ul>")[0]
    assert 'data-role="dba"' in unfit and "disabled" in unfit
    assert 'data-role="main"' in unfit and "no role may invoke it" in unfit
    before = SkillOperation.objects.count()
    for role in ("", "main", "dba", "ghost"):
        response = page_client.post("/skills/fitted/activate/", {"role": role})
        assert response.status_code == 400, role
    assert SkillOperation.objects.count() == before  # refused without writing anything
    assert Skill.objects.get(skill_id="fitted").status == "INSTALLED"
    assert "does not fit" in error_box(page_client.post("/skills/fitted/activate/", {"role": "main"}))
    assert page_client.post("/skills/fitted/activate/", {"role": "devops"}).status_code == 302
    assert Skill.objects.get(skill_id="fitted").status == "ACTIVATED"


def test_the_api_refuses_activation_without_a_role_without_writing_history(api, builtin):
    from capabilities.skill_models import SkillOperation

    upload(api, skill_yaml("nohist", "x"))
    api.post("/api/v1/skills/nohist/install", {}, format="json")
    before = SkillOperation.objects.count()
    response = api.post("/api/v1/skills/nohist/activate", {"role": ""}, format="json")
    assert response.status_code == 400
    assert "activationId" not in response.json()
    assert SkillOperation.objects.count() == before


def test_skill_states_read_in_the_page_s_language(page_client, builtin):
    """The badge and the state filter say 已发现 on a Chinese page, not DISCOVERED (the
    identifier stays in the option's value, the badge's class and data-state)."""
    file = SimpleUploadedFile("skill-index.yaml", seed_text("hr-assistant").encode(), "application/yaml")
    page_client.post("/skills/_upload/", {"file": file})
    html = page_client.get("/skills/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert 'data-state="DISCOVERED" title="生命周期状态">已发现</span>' in html
    assert '<option value="ERROR" >出错</option>' in html
    assert ">DISCOVERED<" not in html and ">ERROR<" not in html
    english = page_client.get("/skills/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert 'data-state="DISCOVERED" title="Lifecycle state">discovered</span>' in english


def test_a_refused_upload_keeps_what_was_typed_and_ticked(page_client, builtin):
    """Issue 32: the upload page binds ``SkillUploadForm``; a refused upload shows the pasted
    text and the "replace the stored version" box as they were sent."""
    text = "skill:\n  id: broken\n  version: not-a-version\n"
    response = page_client.post("/skills/_upload/", {"yaml": text, "allow_downgrade": "true"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "not-a-version" in html
    assert 'name="allow_downgrade" value="true" checked' in html

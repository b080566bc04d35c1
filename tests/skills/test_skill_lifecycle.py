"""The skill lifecycle of seed 003: only legal transitions, dependency checks, cards that
join and leave routing, transactional failures, and what depends on a skill."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from capabilities.lifecycle import (
    TRANSITIONS,
    LifecycleError,
    activate_skill,
    check_transition,
    deactivate_skill,
    install_skill,
    uninstall_skill,
)
from capabilities.models import AgentRole, CapabilityCard, ConfigChange, Skill
from capabilities.skill_models import SkillOperation, SkillStatus
from monitoring.models import Message
from teamclaw.runtime import InvokeRequest
from tests.skills.support import add_fields, bring_up, seed_text, skill_yaml, upload

STATES = [s.value for s in SkillStatus]
SEED_EDGES = {
    ("DISCOVERED", "INSTALLING"),
    ("DISCOVERED", "UNINSTALLING"),
    ("INSTALLING", "INSTALLED"),
    ("INSTALLING", "ERROR"),
    ("INSTALLED", "ACTIVATING"),
    ("INSTALLED", "UNINSTALLING"),
    ("ACTIVATING", "ACTIVATED"),
    ("ACTIVATED", "DEACTIVATING"),
    ("DEACTIVATING", "DEACTIVATED"),
    ("DEACTIVATED", "ACTIVATING"),
    ("DEACTIVATED", "UNINSTALLING"),
    ("UNINSTALLING", "UNINSTALLED"),
    ("UNINSTALLED", "DISCOVERED"),
    ("ERROR", "INSTALLING"),
    ("ERROR", "UNINSTALLING"),
    ("ERROR", "DISCOVERED"),
}
LEGAL_FROM = {
    "install": {"DISCOVERED", "ERROR"},
    "activate": {"INSTALLED", "DEACTIVATED"},
    "deactivate": {"ACTIVATED"},
    "uninstall": {"DISCOVERED", "INSTALLED", "DEACTIVATED", "ERROR"},
}
FINAL = {"install": "INSTALLED", "activate": "ACTIVATED", "deactivate": "DEACTIVATED", "uninstall": "UNINSTALLED"}


def test_the_transition_table_is_the_seed_state_machine():
    assert set(TRANSITIONS) == set(STATES)
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == SEED_EDGES


@pytest.mark.parametrize("source", STATES)
@pytest.mark.parametrize("target", STATES)
def test_check_transition_allows_exactly_the_seed_edges(source, target):
    if (source, target) in SEED_EDGES:
        check_transition(source, target)
    else:
        with pytest.raises(LifecycleError) as caught:
            check_transition(source, target)
        assert caught.value.code == "illegal_transition"
        assert source in caught.value.message


@pytest.mark.parametrize(
    ("source", "expected"),
    [("ACTIVATED", "an ACTIVATED skill"), ("ERROR", "an ERROR skill"), ("DISCOVERED", "a DISCOVERED skill")],
)
def test_an_illegal_transition_reads_as_english(source, expected):
    with pytest.raises(LifecycleError) as caught:
        check_transition(source, "ACTIVATING" if source != "DISCOVERED" else "ACTIVATED")
    assert caught.value.message.startswith(f"{expected} cannot become")


def _skill_in(status: str) -> Skill:
    from capabilities.lifecycle import discover_skill

    skill, _, _ = discover_skill(skill_yaml("probe", "ping"))
    Skill.objects.filter(pk=skill.pk).update(status=status)
    return Skill.objects.get(pk=skill.pk)


def _run(operation: str, skill_id: str) -> SkillOperation:
    if operation == "install":
        return install_skill(skill_id, {})
    if operation == "activate":
        return activate_skill(skill_id, "devops")
    if operation == "deactivate":
        return deactivate_skill(skill_id)
    return uninstall_skill(skill_id)


@pytest.mark.parametrize("status", STATES)
@pytest.mark.parametrize("operation", sorted(LEGAL_FROM))
def test_each_operation_from_each_state_is_legal_or_refused(builtin, status, operation):
    skill = _skill_in(status)
    versions = ConfigChange.objects.count()
    if status in LEGAL_FROM[operation]:
        record = _run(operation, skill.skill_id)
        skill.refresh_from_db()
        assert skill.status == FINAL[operation] == record.to_status
        assert record.outcome == "COMPLETED"
        assert record.from_status == status
        first, *_ = record.transitions
        assert first["from"] == status
        assert record.transitions[-1]["to"] == FINAL[operation]
        assert ConfigChange.objects.count() == versions + 1
    else:
        with pytest.raises(LifecycleError) as caught:
            _run(operation, skill.skill_id)
        assert caught.value.code == "illegal_transition"
        skill.refresh_from_db()
        assert skill.status == status
        assert ConfigChange.objects.count() == versions
        assert not SkillOperation.objects.filter(skill=skill).exclude(operation="discover").exists()


def test_activation_registers_cards_by_type_and_deactivation_keeps_their_history(api, runtime_host):
    skill_id = bring_up(api, seed_text("hr-assistant"), role="devops")
    assert skill_id == "hr-assistant"
    exposed = api.get("/api/v1/capabilities", {"skillId": "hr-assistant", "type": "EXPOSED"}).json()
    assert sorted(c["address"] for c in exposed["capabilities"]) == [
        "cap://hr-assistant/queryEmployeeInfo",
        "cap://hr-assistant/submitLeaveRequest",
    ]
    internal = api.get("/api/v1/capabilities", {"skillId": "hr-assistant", "type": "INTERNAL"}).json()
    assert {c["owner_roles"][0] for c in internal["capabilities"]} == {"devops"}
    runtime = runtime_host.runtime

    def invoke(address: str, role: str = "main"):
        return runtime_host.call(runtime.invoke(InvokeRequest(address, {"employee": "e1"}), from_role=role))

    ok = invoke("cap://hr-assistant/queryEmployeeInfo?format=json")
    assert ok.success, ok.error
    denied = invoke("cap://hr-assistant/validateLeaveBalance")
    assert not denied.success
    assert denied.error.code == "permission_denied"
    assert "INTERNAL" in denied.error.message

    response = api.post("/api/v1/skills/hr-assistant/deactivate", {}, format="json")
    assert response.status_code == 200
    assert response.json()["status"] == "DEACTIVATED"
    gone = invoke("cap://hr-assistant/queryEmployeeInfo")
    assert not gone.success
    assert gone.error.code == "capability_disabled"
    runtime_host.recorder.flush()
    card = CapabilityCard.objects.get(address="cap://hr-assistant/queryEmployeeInfo")
    assert not card.enabled
    assert Message.objects.filter(capability_id=card.capability_id, type="invoke_response").count() == 1

    assert api.post("/api/v1/skills/hr-assistant/activate", {"role": "devops"}, format="json").status_code == 200
    assert invoke("cap://hr-assistant/queryEmployeeInfo").success


def test_uninstall_removes_cards_keeps_the_skill_and_allows_a_new_upload(api, builtin):
    bring_up(api, seed_text("hr-assistant"))
    refused = api.delete("/api/v1/skills/hr-assistant")
    assert refused.status_code == 409
    assert "deactivate" in refused.json()["detail"]
    api.post("/api/v1/skills/hr-assistant/deactivate", {}, format="json")
    removed = api.delete("/api/v1/skills/hr-assistant")
    assert removed.status_code == 200
    assert removed.json()["status"] == "UNINSTALLED"
    assert not CapabilityCard.objects.filter(skill__skill_id="hr-assistant").exists()
    history = api.get("/api/v1/skills/hr-assistant").json()["history"]
    assert [h["operation"] for h in history][:4] == ["uninstall", "deactivate", "activate", "install"]
    again = upload(api, seed_text("hr-assistant"))
    assert again.status_code == 200
    assert again.json()["status"] == "DISCOVERED"


def test_uploading_over_an_installed_skill_is_refused(api, builtin):
    assert upload(api, seed_text("hr-assistant")).status_code == 201
    api.post("/api/v1/skills/hr-assistant/install", {}, format="json")
    again = upload(api, seed_text("hr-assistant"))
    assert again.status_code == 409
    assert "uninstall" in again.json()["detail"]


def test_install_with_a_missing_required_dependency_goes_to_error_with_the_reason(api, builtin):
    upload(api, add_fields(seed_text("smart-workflow"), version="1.0.0"))
    response = api.post("/api/v1/skills/smart-workflow/install", {"config": {"region": "eu"}}, format="json")
    assert response.status_code == 409
    body = response.json()
    assert body["status"] == "ERROR"
    assert body["installId"]
    skill = Skill.objects.get(skill_id="smart-workflow")
    assert skill.status == "ERROR"
    assert "cap://llm-service/chat" in skill.error_reason
    assert "cap://database-service/query" in skill.error_reason
    assert "email-service" not in skill.error_reason  # optional ones do not fail the install
    detail = api.get("/api/v1/skills/smart-workflow").json()
    assert detail["errorReason"] == skill.error_reason
    assert {d["address"]: d["status"] for d in detail["dependencies"]}["cap://llm-service/chat"] == "MISSING"


def test_install_succeeds_once_required_dependencies_exist_and_warns_about_optional_ones(api, builtin):
    upload(api, add_fields(seed_text("smart-workflow"), version="1.0.0"))
    api.post("/api/v1/skills/smart-workflow/install", {}, format="json")
    for skill_id, capability in (("llm-service", "chat"), ("database-service", "query")):
        upload(api, skill_yaml(skill_id, capability))
        assert api.post(f"/api/v1/skills/{skill_id}/install", {}, format="json").status_code == 200
    response = api.post("/api/v1/skills/smart-workflow/install", {"config": {"region": "eu"}}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "INSTALLED"
    warned = {w["path"] for w in response.json()["warnings"]}
    assert warned == {"skill.dependencies[2]", "skill.dependencies[3]"}
    skill = Skill.objects.get(skill_id="smart-workflow")
    assert skill.install_config == {"region": "eu"}
    assert skill.error_reason == ""


def test_activation_needs_required_dependencies_active_and_failure_leaves_the_state(api, builtin):
    upload(api, skill_yaml("llm-service", "chat"))
    api.post("/api/v1/skills/llm-service/install", {}, format="json")
    upload(
        api, skill_yaml("app", "run:ENTRY", extra="  dependencies:\n    - {skillId: llm-service, capability: chat}\n")
    )
    assert api.post("/api/v1/skills/app/install", {}, format="json").status_code == 200
    refused = api.post("/api/v1/skills/app/activate", {"role": "devops"}, format="json")
    assert refused.status_code == 409
    body = refused.json()
    assert body["status"] == "INSTALLED"
    assert body["activationId"]
    assert [p["phase"] for p in body["phases"]] == ["INITIALIZING", "INSTALLING", "FAILED"]
    assert "llm-service" in body["errors"]["dependencies[0]"][0]
    assert not CapabilityCard.objects.filter(skill__skill_id="app").exists()
    failed = SkillOperation.objects.get(pk=body["activationId"])
    assert failed.outcome == "FAILED"
    assert failed.from_status == failed.to_status == "INSTALLED"

    api.post("/api/v1/skills/llm-service/activate", {"role": "dba"}, format="json")
    done = api.post("/api/v1/skills/app/activate", {"role": "devops"}, format="json")
    assert done.status_code == 200
    assert [p["phase"] for p in done.json()["phases"]] == [
        "INITIALIZING",
        "INSTALLING",
        "CONFIGURING",
        "ACTIVATING",
        "COMPLETED",
    ]


def test_a_provider_address_satisfies_a_dependency_on_it(api, builtin):
    bring_up(api, add_fields(seed_text("llm-provider"), version="1.0.0"), role="architect")
    upload(api, skill_yaml("chatbot", "talk:ENTRY", extra="  dependencies:\n    - cap://llm/default\n"))
    assert api.post("/api/v1/skills/chatbot/install", {}, format="json").status_code == 200
    deps = api.get("/api/v1/skills/chatbot").json()["dependencies"]
    assert deps[0]["providedBy"] == "llm-provider"
    assert deps[0]["status"] == "ACTIVATED"
    assert api.post("/api/v1/skills/chatbot/activate", {"role": "devops"}, format="json").status_code == 200


@pytest.mark.parametrize(("role", "reason"), [("", "required"), ("nobody", "no role 'nobody'"), ("dba", "disabled")])
def test_activation_with_a_bad_role_is_refused_naming_the_role(api, builtin, role, reason):
    AgentRole.objects.filter(role="dba").update(enabled=False)
    upload(api, skill_yaml("roled", "x"))
    api.post("/api/v1/skills/roled/install", {}, format="json")
    response = api.post("/api/v1/skills/roled/activate", {"role": role}, format="json")
    assert response.status_code == 400
    assert reason in " ".join(response.json()["errors"]["role"])
    assert Skill.objects.get(skill_id="roled").status == "INSTALLED"


def test_an_address_clash_fails_activation_in_configuring_and_changes_nothing(api, builtin):
    provider = add_fields(seed_text("llm-provider"), version="1.0.0")
    bring_up(api, provider, role="architect")
    clone = provider.replace("id: llm-provider", "id: llm-provider-b")
    upload(api, clone)
    api.post("/api/v1/skills/llm-provider-b/install", {}, format="json")
    before = CapabilityCard.objects.count()
    response = api.post("/api/v1/skills/llm-provider-b/activate", {"role": "architect"}, format="json")
    assert response.status_code == 409
    assert response.json()["phases"][-2]["phase"] == "CONFIGURING"
    assert "cap://llm/default is already served by skill llm-provider" in str(response.json()["errors"])
    assert CapabilityCard.objects.count() == before
    assert Skill.objects.get(skill_id="llm-provider-b").status == "INSTALLED"


def test_deactivating_a_skill_others_require_lists_them_and_needs_force(api, builtin):
    bring_up(api, skill_yaml("base", "core"), role="dba")
    bring_up(api, skill_yaml("top", "use:ENTRY", extra="  dependencies:\n    - {skillId: base, capability: core}\n"))
    dependents = api.get("/api/v1/skills/base/dependents").json()
    assert [d["skillId"] for d in dependents["skills"]] == ["top"]
    assert dependents["roles"] == [{"role": "dba"}]
    refused = api.post("/api/v1/skills/base/deactivate", {}, format="json")
    assert refused.status_code == 409
    assert refused.json()["dependents"]["skills"][0]["skillId"] == "top"
    assert Skill.objects.get(skill_id="base").status == "ACTIVATED"
    forced = api.post("/api/v1/skills/base/deactivate", {"force": True}, format="json")
    assert forced.status_code == 200
    deps = api.get("/api/v1/skills/top").json()["dependencies"]
    assert deps[0]["status"] == "DEACTIVATED"
    assert not deps[0]["active"]


@pytest.mark.django_db(transaction=True)
def test_racing_activate_and_uninstall_leave_one_consistent_outcome(builtin):
    if connection.vendor != "sqlite":
        pytest.skip("exercises SQLite's IMMEDIATE transactions")
    from capabilities.lifecycle import discover_skill

    for round_ in range(4):
        skill_id = f"race{round_}"
        discover_skill(skill_yaml(skill_id, "a", "b:ENTRY"))
        install_skill(skill_id, {})
        outcomes: dict[str, str] = {}
        barrier = threading.Barrier(2)

        def attempt(name: str, fn, skill_id=skill_id, outcomes=outcomes, barrier=barrier) -> None:
            barrier.wait()
            try:
                fn(skill_id)
                outcomes[name] = "ok"
            except LifecycleError as exc:
                outcomes[name] = exc.code
            finally:
                connection.close()

        threads = [
            threading.Thread(target=attempt, args=("activate", lambda s: activate_skill(s, "devops"))),
            threading.Thread(target=attempt, args=("uninstall", uninstall_skill)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        skill = Skill.objects.get(skill_id=skill_id)
        assert sorted(outcomes.values()) == ["illegal_transition", "ok"], outcomes
        cards = CapabilityCard.objects.filter(skill=skill)
        if outcomes["activate"] == "ok":
            assert skill.status == "ACTIVATED"
            assert cards.count() == 2
            assert all(c.enabled for c in cards)
        else:
            assert skill.status == "UNINSTALLED"
            assert not cards.exists()


def test_internal_capabilities_answer_calls_from_inside_their_own_skill_only(api, runtime_host):
    """Seed 003: INTERNAL only from inside its skill. The caller's skill is the card its
    executor is running; the owner is main, whom the PRD matrix lets invoke itself."""
    other = skill_yaml("other", "probe:ENTRY")
    bring_up(api, seed_text("hr-assistant"), role="main")
    bring_up(api, other, role="main")
    offline = runtime_host.runtime.executors.get("offline")

    async def through(call, address="cap://hr-assistant/validateLeaveBalance"):
        result = await call.invoke(address, {})
        return {"inner": result.error.code if result.error else "ok"}

    offline.register("hr_assistant__chat", through)
    offline.register("other__probe", through)
    inside = runtime_host.call(
        runtime_host.runtime.invoke(InvokeRequest("cap://hr-assistant/chat", {}), from_role="main")
    )
    outside = runtime_host.call(runtime_host.runtime.invoke(InvokeRequest("cap://other/probe", {}), from_role="main"))
    assert inside.data == {"inner": "ok"}
    assert outside.data == {"inner": "permission_denied"}


def test_a_skill_cannot_claim_addresses_in_another_skills_namespace(api, builtin):
    upload(api, skill_yaml("victim", "pay"))
    thief = skill_yaml("thief", "x").replace("type: EXPOSED", "type: EXPOSED\n      address: cap://victim/pay")
    upload(api, thief)
    api.post("/api/v1/skills/thief/install", {}, format="json")
    refused = api.post("/api/v1/skills/thief/activate", {"role": "devops"}, format="json")
    assert refused.status_code == 409
    assert "namespace of skill victim" in str(refused.json()["errors"])


@pytest.mark.django_db(transaction=True)
def test_racing_deactivate_and_activate_keep_cards_in_step_with_the_state(builtin):
    if connection.vendor != "sqlite":
        pytest.skip("exercises SQLite's IMMEDIATE transactions")
    from capabilities.lifecycle import discover_skill

    for round_ in range(4):
        skill_id = f"flip{round_}"
        discover_skill(skill_yaml(skill_id, "a", "b:ENTRY"))
        install_skill(skill_id, {"n": round_})
        activate_skill(skill_id, "devops")
        barrier = threading.Barrier(2)
        outcomes: dict[str, str] = {}

        def attempt(name, fn, skill_id=skill_id, outcomes=outcomes, barrier=barrier) -> None:
            barrier.wait()
            try:
                fn(skill_id)
                outcomes[name] = "ok"
            except LifecycleError as exc:
                outcomes[name] = exc.code
            finally:
                connection.close()

        threads = [
            threading.Thread(target=attempt, args=("deactivate", deactivate_skill)),
            threading.Thread(target=attempt, args=("activate", lambda s: activate_skill(s, "devops"))),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert outcomes["deactivate"] == "ok"  # legal whichever runs first
        skill = Skill.objects.get(skill_id=skill_id)
        expected = "ACTIVATED" if outcomes["activate"] == "ok" else "DEACTIVATED"
        assert skill.status == expected, outcomes
        enabled = set(CapabilityCard.objects.filter(skill=skill).values_list("enabled", flat=True))
        assert enabled == {skill.status == "ACTIVATED"}
        assert all(c.executor_config["install_config"] == {"n": round_} for c in skill.cards.all())


def test_the_invoke_api_reaches_skill_capabilities_by_address(api, runtime_host):
    bring_up(api, seed_text("hr-assistant"))

    def invoke(address: str) -> dict:
        response = api.post(
            "/api/v1/capabilities/invoke", {"address": address, "from_role": "main", "params": {}}, format="json"
        )
        assert response.status_code == 200, response.content
        return response.json()

    ok = invoke("cap://hr-assistant/queryEmployeeInfo?format=json")
    assert ok["success"] is True
    assert ok["result"] == ok["data"]
    internal = invoke("cap://hr-assistant/notifyManager")
    assert internal["success"] is False
    assert internal["error"]["code"] == "permission_denied"
    api.post("/api/v1/skills/hr-assistant/deactivate", {}, format="json")
    assert invoke("cap://hr-assistant/queryEmployeeInfo")["error"]["code"] == "capability_disabled"
    unknown = invoke("cap://hr-assistant/noSuchThing")
    assert unknown["error"]["code"] == "capability_not_found"


def test_a_reupload_never_moves_a_skill_back_to_an_older_version_unless_asked(api):
    assert upload(api, skill_yaml("versioned", "ping", version="1.10.0")).status_code == 201
    older = upload(api, skill_yaml("versioned", "ping", "pong", version="1.9.3"))
    assert older.status_code == 409, older.content
    body = older.json()
    assert "1.10.0" in body["detail"] and "1.9.3" in body["detail"]
    assert body["errors"]["skill.version"]
    assert body["errorCode"] == "conflict"
    assert (body["current_version"], body["uploaded_version"]) == ("1.10.0", "1.9.3")
    skill = Skill.objects.get(skill_id="versioned")
    assert skill.version == "1.10.0"
    assert "pong" not in skill.source
    assert upload(api, skill_yaml("versioned", "ping", version="1.10.0")).status_code == 200  # the same: fine
    assert upload(api, skill_yaml("versioned", "ping", version="2.0.0-rc.1")).status_code == 200  # newer
    assert upload(api, skill_yaml("versioned", "ping", version="1.10.0")).status_code == 409  # 1.10.0 < 2.0.0-rc.1
    forced = api.post(
        "/api/v1/skills?allow_downgrade=true",
        skill_yaml("versioned", "ping", version="1.9.3").encode(),
        content_type="application/yaml",
    )
    assert forced.status_code == 200, forced.content
    assert Skill.objects.get(skill_id="versioned").version == "1.9.3"

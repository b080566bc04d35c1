"""Health from heartbeats and output-schema failures, metrics from the recorded invokes,
and alert rules that open, act and resolve (seed 003 health, metrics, alerting)."""

from __future__ import annotations

import asyncio
import math

import pytest

from capabilities.models import RoleConstraint
from monitoring.models import Alert, Message
from runs.alerting import evaluate_alert_rules
from teamclaw.runtime import AgentFailure, ErrorCode
from tests.skills.support import bring_up

TIMED = """\
skill:
  id: timed
  name: Timed
  version: 1.0.0
  capabilities:
    - name: work
      type: EXPOSED
      inputParameters:
        - {name: delay_ms, type: integer, required: true}
        - {name: outcome, type: string}
      outputParameters:
        - {name: done, type: boolean}
    - name: secret
      type: INTERNAL
"""
WORK = "timed__work"


async def timed_work(call):
    """Works for exactly ``delay_ms`` of the manual clock (it moves the clock itself, so the
    recorded latency is known), then answers well, breaks its output schema or fails."""
    call.clock.advance(call.params["delay_ms"] / 1000)
    await asyncio.sleep(0)
    outcome = call.params.get("outcome", "ok")
    if outcome == "bad_output":
        return {"done": "not a boolean"}
    if outcome == "refuse":
        raise AgentFailure(ErrorCode.INVALID_PARAMS, "refused", retryable=False)
    return {"done": True}


@pytest.fixture
def timed(clocked, api):
    clocked.runtime.executors.get("offline").register(WORK, timed_work)
    bring_up(api, TIMED + ALERTING, role="devops")
    return clocked


ALERTING = """\
alerting:
  rules:
    - name: high error rate
      condition: success_rate < 95%
      duration: 1m
      severity: warning
      actions:
        - notify: ops-team
        - auto_restart: true
    - name: slow
      condition: p99_latency_ms > 5000
      duration: 0s
      severity: critical
      actions:
        - notify: ops-team
        - scale_out: 2
"""


def _call(clocked, delay_ms: int, outcome: str = "ok"):
    return clocked.invoke(f"cap://timed/work?outcome={outcome}", {"delay_ms": delay_ms}, wait=True)


def test_metrics_are_the_arithmetic_of_the_recorded_invokes(timed, api):
    plan = [(12, "ok"), (30, "ok"), (7, "bad_output"), (50, "ok"), (3, "refuse"), (41, "ok")]
    for delay, outcome in plan:
        _call(timed, delay, outcome)
    denied = timed.invoke("cap://timed/secret", {}, wait=True)
    assert denied.error.code == "permission_denied"
    timed.flush()
    body = api.get(f"/api/v1/metrics/{WORK}").json()
    latencies = [float(d) for d, _ in plan]
    ok = sum(1 for _, o in plan if o == "ok")
    assert body["callCount"] == len(plan)
    assert body["successCount"] == ok
    assert body["errorCount"] == len(plan) - ok
    assert body["successRate"] == pytest.approx(ok / len(plan))
    assert body["avgLatencyMs"] == pytest.approx(sum(latencies) / len(latencies), abs=0.001)
    assert body["p99LatencyMs"] == sorted(latencies)[math.ceil(0.99 * len(latencies)) - 1]
    assert body["errorsByCode"] == {"invalid_params": 1, "output_invalid": 1}
    assert body["inFlight"] == 0
    requests = Message.objects.filter(type="invoke_request", capability_id=WORK).exclude(status="denied")
    assert requests.count() == body["callCount"]
    secret = api.get("/api/v1/metrics/timed__secret").json()
    assert secret["callCount"] == 0
    assert secret["refusedCount"] == 1
    assert secret["successRate"] is None


def test_metrics_for_an_unknown_capability_or_bad_window_are_4xx(timed, api):
    assert api.get("/api/v1/metrics/nope").status_code == 404
    bad = api.get(f"/api/v1/metrics/{WORK}", {"window": "five minutes"})
    assert bad.status_code == 400
    assert "window" in bad.json()["errors"]


def test_health_follows_heartbeats(timed, api):
    def status():
        body = api.get(f"/api/v1/health/{WORK}").json()
        return body["status"], body["message"]

    assert status()[0] == "HEALTHY"
    assert "no instance yet" in status()[1]
    _call(timed, 1)
    assert status()[0] == "HEALTHY"
    timed.advance(40)
    state, message = status()
    assert state == "DEGRADED"
    assert "missed a heartbeat" in message
    timed.advance(55)
    state, message = status()
    assert state == "UNHEALTHY"
    assert "no heartbeat" in message
    body = api.get(f"/api/v1/health/{WORK}").json()
    assert body["lastCheck"].endswith("Z")
    assert body["lastHeartbeat"] < body["lastCheck"]
    for instance in list(timed.runtime.pool):
        timed.runtime.heartbeat(instance.instance_id)
    assert status()[0] == "HEALTHY"


def test_health_degrades_when_outputs_keep_failing_their_schema(timed, api):
    for _ in range(3):
        _call(timed, 1, "bad_output")
        for instance in list(timed.runtime.pool):
            timed.runtime.heartbeat(instance.instance_id)
    timed.flush()
    body = api.get(f"/api/v1/health/{WORK}").json()
    assert body["status"] == "DEGRADED"
    assert body["outputFailures"] == 3
    _call(timed, 1)
    timed.flush()
    assert api.get(f"/api/v1/health/{WORK}").json()["status"] == "HEALTHY"


def test_a_deactivated_capability_is_unhealthy(timed, api):
    api.post("/api/v1/skills/timed/deactivate", {}, format="json")
    body = api.get(f"/api/v1/health/{WORK}").json()
    assert body["status"] == "UNHEALTHY"
    assert "not active" in body["message"]
    assert api.get("/api/v1/health/nope").status_code == 404


def _evaluate(clocked):
    clocked.flush()
    return [c for c in evaluate_alert_rules(now_ms=clocked.clock.now_ms(), host=clocked.host) if c["rule"]]


def test_an_alert_opens_after_its_duration_acts_and_resolves(timed, api):
    _call(timed, 5)
    _call(timed, 5, "bad_output")
    changes = {c["rule"]: c["change"] for c in _evaluate(timed)}
    assert changes == {"high error rate": "pending"}
    timed.advance(30)
    _call(timed, 5, "bad_output")
    assert _evaluate(timed) == []  # still pending, 30 s of the 60 s
    timed.advance(31)
    _call(timed, 5, "bad_output")
    opened = [c for c in _evaluate(timed) if c["change"] == "opened"]
    assert [c["rule"] for c in opened] == ["high error rate"]
    alert = Alert.objects.get(pk=opened[0]["alert_id"])
    assert alert.severity == "warning"
    assert alert.resolved_at is None
    assert alert.rule.name == "high error rate"
    assert alert.capability_id == WORK
    assert alert.details["notify"] == "ops-team"
    assert alert.details["actions_taken"][0] == "notified ops-team"
    assert alert.details["actions_taken"][1].startswith("auto_restart: devops-")  # the instance that failed
    listed = api.get("/api/v1/alerts", {"status": "open"}).json()["results"]
    assert [a["id"] for a in listed] == [alert.pk]
    timed.advance(61)
    for _ in range(3):
        _call(timed, 5)
    resolved = [c for c in _evaluate(timed) if c["change"] == "resolved"]
    assert [c["alert_id"] for c in resolved] == [alert.pk]
    alert.refresh_from_db()
    assert alert.resolved_at is not None
    assert alert.resolved_at > alert.created_at
    assert api.get("/api/v1/alerts", {"status": "resolved"}).json()["results"][0]["id"] == alert.pk


def test_scale_out_adds_instances_within_the_role_limit(timed):
    RoleConstraint.objects.filter(project=None, role__role="devops").update(max_concurrent_instances=2)
    _call(timed, 6000)
    changes = [c for c in _evaluate(timed) if c["rule"] == "slow"]
    assert [c["change"] for c in changes] == ["opened"]
    taken = changes[0]["actions_taken"]
    assert taken[-1] == "scale_out: added 1 of 2 devops instance(s) (the devops limit of 2 instances is reached)"
    assert len(timed.runtime.pool.alive("devops")) == 2


def test_auto_restart_replaces_an_unhealthy_instance(clocked, api):
    clocked.runtime.executors.get("offline").register(WORK, timed_work)
    rule = (
        "alerting:\n  rules:\n    - {name: down, condition: health_status == UNHEALTHY, duration: 0s,"
        " severity: critical, actions: [{auto_restart: true}]}\n"
    )
    bring_up(api, TIMED + rule)
    _call(clocked, 1)
    (old,) = clocked.runtime.pool.alive("devops")
    clocked.advance(95)
    opened = [c for c in _evaluate(clocked) if c["change"] == "opened"]
    assert opened
    assert opened[0]["actions_taken"][0].startswith(f"auto_restart: {old.instance_id} -> devops-")
    (fresh,) = clocked.runtime.pool.alive("devops")
    assert fresh.instance_id != old.instance_id
    assert fresh.healthy
    assert api.get(f"/api/v1/health/{WORK}").json()["status"] == "HEALTHY"
    resolved = [c for c in _evaluate(clocked) if c["change"] == "resolved"]
    assert resolved
    assert Alert.objects.get(pk=resolved[0]["alert_id"]).resolved_at is not None


def test_a_failover_action_moves_a_provider_off_its_active_implementation(clocked, api):
    from tests.skills.test_providers import PROVIDER_YAML, ScriptedProviders

    scripted = ScriptedProviders()
    clocked.runtime.executors.register("scripted", scripted)
    rule = (
        "alerting:\n  rules:\n"
        "    - {name: errors, condition: success_rate < 95%, duration: 0s, severity: critical,"
        " actions: [{notify: all}, {failover: true}]}\n"
    )
    bring_up(api, PROVIDER_YAML + rule, role="architect")
    scripted.behaviour.update(OpenAI="bad")
    clocked.invoke("cap://llm/default", {"prompt": "x"})
    opened = [c for c in _evaluate(clocked) if c["change"] == "opened"]
    assert opened[0]["actions_taken"] == ["notified all", "failover: OpenAI -> Claude"]
    scripted.behaviour.clear()
    assert clocked.invoke("cap://llm/default", {"prompt": "y"}).data["answer"].startswith("Claude")


def test_operators_can_resolve_an_alert_and_viewers_cannot(timed, api, viewer_user):
    from rest_framework.test import APIClient

    alert = Alert.objects.create(kind="queue_full", severity="warning", message="m", created_at="2026-01-01T00:00:00Z")
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    assert viewer.post(f"/api/v1/alerts/{alert.pk}/resolve").status_code == 403
    body = api.post(f"/api/v1/alerts/{alert.pk}/resolve").json()
    assert body["resolvedAt"] is not None


def test_deactivating_a_skill_resolves_its_open_alerts(clocked, api):
    clocked.runtime.executors.get("offline").register(WORK, timed_work)
    bring_up(api, TIMED + ALERTING)
    _call(clocked, 6000)
    (opened,) = [c for c in _evaluate(clocked) if c["change"] == "opened"]
    api.post("/api/v1/skills/timed/deactivate", {}, format="json")
    resolved = [c for c in _evaluate(clocked) if c["change"] == "resolved"]
    assert [c["alert_id"] for c in resolved] == [opened["alert_id"]]
    assert "no longer active" in Alert.objects.get(pk=opened["alert_id"]).details["resolved_because"]

"""PROVIDER skills: calls go to the healthy implementation with the highest priority and
fail over to the next on unavailable or timeout, recording each failover (seed 003)."""

from __future__ import annotations

import asyncio

import pytest

from monitoring.models import Alert
from teamclaw.runtime import AgentFailure, ErrorCode
from tests.skills.support import bring_up

PROVIDER_YAML = """\
skill:
  id: llm-provider
  name: LLM provider
  version: 1.0.0
  skillForm: PROVIDER
  capabilities:
    - name: chat
      type: EXPOSED
      address: cap://llm/default
      inputParameters:
        - {name: prompt, type: string, required: true}
      outputParameters:
        - {name: answer, type: string}
  implementations:
    - {provider: LocalLLM, priority: 50, executor: scripted, config: {endpoint: 'http://localhost:8080'}}
    - {provider: OpenAI, priority: 100, executor: scripted, timeoutMs: 2000, config: {model: gpt-4}}
    - {provider: Claude, priority: 90, executor: scripted, timeoutMs: 2000, config: {model: claude-3}}
"""


class ScriptedProviders:
    """Stands in for the external services: each provider answers, is down, hangs or
    refuses the params, as the test says."""

    kind = "scripted"

    def __init__(self, **behaviour: str) -> None:
        self.behaviour = behaviour
        self.calls: list[str] = []

    async def execute(self, call):
        provider = call.card.executor_config["provider"]
        self.calls.append(provider)
        mode = self.behaviour.get(provider, "ok")
        if mode == "unavailable":
            raise AgentFailure(ErrorCode.UNAVAILABLE, f"{provider} answers 503")
        if mode == "hang":
            await asyncio.Event().wait()
        if mode == "bad":
            raise AgentFailure(ErrorCode.INVALID_PARAMS, f"{provider} refuses the prompt", retryable=False)
        return {"answer": f"{provider}/{call.card.executor_config.get('model', '-')}: {call.params['prompt']}"}


@pytest.fixture
def providers(clocked, api):
    scripted = ScriptedProviders()
    clocked.runtime.executors.register("scripted", scripted)
    bring_up(api, PROVIDER_YAML, role="architect")
    return scripted


def _failovers() -> list[tuple[str, str | None, str]]:
    return [
        (a.details["from_provider"], a.details["to_provider"], a.details["reason"])
        for a in Alert.objects.filter(kind="failover").order_by("id")
    ]


def test_the_highest_priority_implementation_answers(clocked, providers):
    result = clocked.invoke("cap://llm/default", {"prompt": "hi"})
    assert result.success, result.error
    assert result.data == {"answer": "OpenAI/gpt-4: hi"}
    assert providers.calls == ["OpenAI"]


def test_failover_goes_down_the_priority_order_on_unavailable_and_timeout(clocked, providers):
    providers.behaviour.update(OpenAI="unavailable", Claude="hang")
    result = clocked.invoke("cap://llm-provider/chat", {"prompt": "hi"}, step_s=0.25)
    assert result.success, result.error
    assert result.data["answer"].startswith("LocalLLM")
    assert providers.calls == ["OpenAI", "Claude", "LocalLLM"]
    clocked.flush()
    assert _failovers() == [("OpenAI", "Claude", "unavailable"), ("Claude", "LocalLLM", "timeout")]


def test_failed_implementations_are_skipped_until_their_cooldown_ends(clocked, providers):
    providers.behaviour.update(OpenAI="unavailable")
    assert clocked.invoke("cap://llm/default", {"prompt": "1"}).data["answer"].startswith("Claude")
    providers.behaviour.clear()
    assert clocked.invoke("cap://llm/default", {"prompt": "2"}).data["answer"].startswith("Claude")
    assert providers.calls == ["OpenAI", "Claude", "Claude"]
    clocked.advance(31)
    for instance in list(clocked.runtime.pool):
        clocked.runtime.heartbeat(instance.instance_id)
    assert clocked.invoke("cap://llm/default", {"prompt": "3"}).data["answer"].startswith("OpenAI")


def test_other_failures_do_not_fail_over(clocked, providers):
    providers.behaviour.update(OpenAI="bad")
    result = clocked.invoke("cap://llm/default", {"prompt": "hi"})
    assert not result.success
    assert result.error.code == "invalid_params"
    assert providers.calls == ["OpenAI"]
    clocked.flush()
    assert _failovers() == []


def test_when_every_implementation_fails_the_call_is_unavailable_with_each_attempt(clocked, providers):
    providers.behaviour.update(OpenAI="unavailable", Claude="unavailable", LocalLLM="unavailable")
    result = clocked.invoke("cap://llm/default", {"prompt": "hi"})
    assert not result.success
    assert result.error.code == "unavailable"
    assert [a["provider"] for a in result.error.details["attempts"]] == ["OpenAI", "Claude", "LocalLLM"]
    clocked.flush()
    assert _failovers()[-1] == ("LocalLLM", None, "unavailable")
    assert Alert.objects.filter(kind="failover", severity="critical").count() == 1


def test_health_lists_the_providers_and_which_one_is_active(clocked, providers, api):
    providers.behaviour.update(OpenAI="unavailable")
    clocked.invoke("cap://llm/default", {"prompt": "hi"})
    body = api.get("/api/v1/health/llm_provider__chat").json()
    states = {p["provider"]: (p["state"], p["active"]) for p in body["providers"]}
    assert states == {"OpenAI": ("down", False), "Claude": ("up", True), "LocalLLM": ("up", False)}

"""Model settings: endpoints from the environment, options from cards and roles, and keys
that never show."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from capabilities.executors import model_status
from teamclaw.env import env_model_endpoints
from teamclaw.runtime import AgentFailure, RoleSpec
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings, public_url, redact, resolve_options
from tests.factories import echo_card

ROOT = Path(__file__).resolve().parent.parent.parent


def test_extra_endpoints_come_with_keys_from_their_own_variables(monkeypatch):
    monkeypatch.setenv("TEAMCLAW_MODEL_ENDPOINTS", "local=http://127.0.0.1:11434/v1, vllm=https://gpu.internal/v1")
    monkeypatch.setenv("TEAMCLAW_MODEL_ENDPOINT_VLLM_API_KEY", "sk-vllm")
    monkeypatch.setenv("TEAMCLAW_MODEL_ENDPOINT_VLLM_STRUCTURED_OUTPUT", "off")
    assert env_model_endpoints() == {
        "local": {"base_url": "http://127.0.0.1:11434/v1", "api_key": "", "structured_output": True},
        "vllm": {"base_url": "https://gpu.internal/v1", "api_key": "sk-vllm", "structured_output": False},
    }


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("local", "must be name=url"),
        ("Local=http://x", "must be name=url"),
        ("default=http://x", "other than 'default'"),
        ("a=http://x,a=http://y", "listed twice"),
        ("a=ftp://x", "must start with http"),
    ],
)
def test_malformed_endpoints_stop_start_up_naming_the_variable(monkeypatch, value, message):
    monkeypatch.setenv("TEAMCLAW_MODEL_ENDPOINTS", value)
    with pytest.raises(ImproperlyConfigured, match=message):
        env_model_endpoints()


def run_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TEAMCLAW_"))}
    script = (
        "import json; from django.conf import settings as s; "  # settings alone, no app loading
        "print(json.dumps({k: s.TEAMCLAW[k] for k in ('EXECUTOR', 'MODEL', 'MODEL_MAX_ROUNDS')}))"
    )
    return subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**keep, **env, "TEAMCLAW_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "teamclaw.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pointing_openai_base_url_at_a_server_makes_the_model_the_default_brain(tmp_path):
    plain = run_settings(tmp_path)
    assert json.loads(plain.stdout)["EXECUTOR"] == "offline"
    configured = run_settings(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:8080/v1", TEAMCLAW_MODEL="qwen2.5:7b")
    assert json.loads(configured.stdout) == {"EXECUTOR": "openai", "MODEL": "qwen2.5:7b", "MODEL_MAX_ROUNDS": 8}
    pinned = run_settings(tmp_path, OPENAI_BASE_URL="http://127.0.0.1:8080/v1", TEAMCLAW_EXECUTOR="offline")
    assert json.loads(pinned.stdout)["EXECUTOR"] == "offline"


def test_a_bad_executor_setting_stops_start_up(tmp_path):
    result = run_settings(tmp_path, TEAMCLAW_EXECUTOR="gpt")
    assert result.returncode != 0
    assert "TEAMCLAW_EXECUTOR" in result.stderr


SETTINGS = ModelSettings(
    endpoints={
        "default": ModelEndpoint("default", "https://user:hunter22@models.example.com/v1?key=querysecret", "sk-one"),
        "local": ModelEndpoint("local", "http://127.0.0.1:11434/v1", ""),
    },
    model="server-model",
    max_rounds=8,
)


def test_options_come_from_settings_then_the_card_then_the_role():
    card = echo_card(executor="openai", executor_config={"model": "card-model", "max_rounds": 3, "url": "ignored"})
    options = resolve_options(SETTINGS, card, RoleSpec("b", "B"))
    assert (options.model, options.max_rounds, options.endpoint.name) == ("card-model", 3, "default")
    role = RoleSpec("b", "B", executor_config={"model": "role-model", "endpoint": "local"})
    options = resolve_options(SETTINGS, card, role)
    assert (options.model, options.max_rounds, options.endpoint.name) == ("role-model", 3, "local")


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({"model": "two words"}, "no spaces"),
        ({"endpoint": "elsewhere"}, "no endpoint 'elsewhere'"),
        ({"max_rounds": 0}, "between 1 and 50"),
        ({"stream": "yes"}, "must be a bool"),
        ({"temperature": 9}, "between 0 and 2"),
    ],
)
def test_unusable_options_fail_the_call_naming_the_option(config, reason):
    with pytest.raises(AgentFailure) as caught:
        resolve_options(SETTINGS, echo_card(executor_config=config), None)
    assert reason in caught.value.error.message
    assert caught.value.error.code == "executor_error"


def test_no_endpoint_configured_says_how_to_configure_one():
    with pytest.raises(AgentFailure, match="OPENAI_BASE_URL"):
        resolve_options(ModelSettings(), echo_card(), None)


def test_urls_are_shown_without_credentials_and_secrets_are_redacted():
    endpoint = SETTINGS.endpoints["default"]
    assert endpoint.label == "https://models.example.com/v1"
    assert "sk-one" not in repr(endpoint)
    secrets = SETTINGS.secrets()
    assert {"sk-one", "hunter22", "key=querysecret"} <= set(secrets)
    text = f"failed at {endpoint.base_url} with key sk-one"
    assert all(secret not in redact(text, secrets) for secret in secrets)
    assert public_url("http://[::1]:8080/v1/") == "http://[::1]:8080/v1"


def test_the_endpoint_list_says_which_endpoints_get_response_format(settings):
    local = {"base_url": "http://127.0.0.1:8080/v1", "api_key": "", "structured_output": False}
    settings.TEAMCLAW = {
        **settings.TEAMCLAW,
        "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
        "MODEL_ENDPOINTS": {"local": local},
    }
    assert model_status()["endpoints"] == [
        {"name": "default", "url": "http://127.0.0.1:11434/v1", "structured_output": True},
        {"name": "local", "url": "http://127.0.0.1:8080/v1", "structured_output": False},
    ]

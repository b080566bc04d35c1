"""Choosing executors per role and per project (issue 8): the snapshot's effective choice,
the API that changes it (audited, validated field by field), what the pages show, and no key
anywhere in them."""

from __future__ import annotations

import pytest

from capabilities.models import AgentRole, ConfigChange, Project, RoleExecutor
from team.snapshot import build_snapshot


@pytest.fixture
def project(builtin):
    return Project.objects.create(slug="shop", name="Shop")


@pytest.fixture
def model_settings(settings):
    """A model server configured the way the environment would (key included)."""
    settings.TEAMCLAW = {
        **settings.TEAMCLAW,
        "OPENAI_BASE_URL": "https://proxy-user:proxy-pass@models.example.com/v1?tenant=x",
        "OPENAI_API_KEY": "sk-live-never-show-me",
        "MODEL": "house-model",
        "EXECUTOR": "offline",
        "MODEL_ENDPOINTS": {"local": {"base_url": "http://127.0.0.1:11434/v1", "api_key": "sk-local-secret"}},
    }
    return settings


def test_role_choices_apply_globally_and_a_project_overrides_them_field_by_field(project):
    pm = AgentRole.objects.get(role="pm")
    RoleExecutor.objects.create(role=pm, executor="openai", model="global-model", endpoint="local")
    RoleExecutor.objects.create(role=pm, project=project, executor="offline")
    RoleExecutor.objects.create(role=AgentRole.objects.get(role="dba"), project=project, model="dba-model")
    global_pm = build_snapshot().roles["pm"]
    assert global_pm.executor == "openai"
    assert dict(global_pm.executor_config) == {"model": "global-model", "endpoint": "local"}
    shop = build_snapshot("shop")
    assert shop.roles["pm"].executor == "offline"
    assert dict(shop.roles["pm"].executor_config) == {"model": "global-model", "endpoint": "local"}
    assert shop.roles["dba"].executor is None
    assert dict(shop.roles["dba"].executor_config) == {"model": "dba-model"}
    assert build_snapshot().roles["architect"].executor is None


def test_the_api_shows_what_runs_each_capability_of_a_role(api, builtin, model_settings):
    body = api.get("/api/v1/roles/pm/executor").json()
    pm_cards = sorted(c.capability_id for c in build_snapshot().cards.values() if "pm" in c.owner_roles)
    assert [row["capability_id"] for row in body["capabilities"]] == pm_cards
    assert {row["executor"] for row in body["capabilities"]} == {"offline"}
    assert body["model"] is None
    assert body["choice"] == {"executor": "", "model": "", "endpoint": ""}
    assert "openai" in body["available"]
    assert "http" not in body["available"]


def test_putting_a_role_executor_is_audited_and_takes_effect(api, builtin, model_settings):
    before = build_snapshot().version
    response = api.put("/api/v1/roles/pm/executor", {"executor": "openai", "model": "llama3.1:8b"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["kinds"] == {"openai": len(body["capabilities"])}
    assert body["model"] == "llama3.1:8b"
    assert body["endpoint"] == "https://models.example.com/v1"
    change = ConfigChange.objects.get(new_version=before + 1)
    assert change.config_type == "role"
    assert change.role == "pm"
    assert change.changed_fields == ["executor.executor", "executor.model"]
    assert change.changes["model"] == {"old": "", "new": "llama3.1:8b"}


def test_a_project_choice_overrides_the_global_one_only_in_that_project(api, project, model_settings):
    api.put("/api/v1/roles/pm/executor", {"executor": "openai"}, format="json")
    response = api.put("/api/v1/roles/pm/executor?project=shop", {"executor": "offline"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["kinds"] == {"offline": len(response.json()["capabilities"])}
    assert set(api.get("/api/v1/roles/pm/executor").json()["kinds"]) == {"openai"}
    assert ConfigChange.objects.filter(project=project, role="pm").count() == 1


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"executor": "http"}, "executor", "not an executor a role can use"),
        ({"executor": "quantum"}, "executor", "not an executor a role can use"),
        ({"model": "has spaces in it"}, "model", "no spaces"),
        ({"endpoint": "nowhere"}, "endpoint", "no endpoint 'nowhere' is configured"),
        ({"executor": 3}, "executor", "must be a string"),
        ({"temperature": 0.2}, "temperature", "unknown field"),
    ],
)
def test_bad_choices_are_refused_naming_the_field(api, builtin, model_settings, body, field, reason):
    response = api.put("/api/v1/roles/pm/executor", body, format="json")
    assert response.status_code == 400
    assert reason in response.json()["errors"][field][0]
    assert not RoleExecutor.objects.exists()


def test_only_staff_may_change_a_role_executor(client, viewer_user, builtin):
    client.force_login(viewer_user)
    response = client.put("/api/v1/roles/pm/executor", {"executor": "openai"}, content_type="application/json")
    assert response.status_code == 403
    assert client.get("/api/v1/roles/pm/executor").status_code == 200


def test_unknown_role_or_project_is_404(api, builtin):
    assert api.get("/api/v1/roles/nobody/executor").status_code == 404
    assert api.put("/api/v1/roles/pm/executor?project=nope", {}, format="json").status_code == 404


def test_the_dashboard_shows_each_roles_executor_and_no_key(page_client, builtin, model_settings):
    RoleExecutor.objects.create(role=AgentRole.objects.get(role="pm"), executor="openai", model="pm-model")
    page = page_client.get("/").content.decode()
    assert 'data-role="pm"' in page
    assert "model · pm-model" in page  # the openai executor reads "model" (teamclaw.labels)
    assert 'data-role="dba"' in page
    assert "roles set to <code>openai</code> use <code>house-model</code>" in page
    for secret in ("sk-live-never-show-me", "sk-local-secret", "proxy-pass", "tenant=x"):
        assert secret not in page
    detail = page_client.get("/roles/pm/").content.decode()
    assert "pm-model" in detail
    assert "models.example.com" in detail
    assert "proxy-pass" not in detail
    assert "sk-live" not in detail


def test_the_api_never_shows_a_key(api, builtin, model_settings):
    raw = api.get("/api/v1/roles/pm/executor").content.decode()
    assert "models.example.com" in raw
    for secret in ("sk-live-never-show-me", "sk-local-secret", "proxy-pass", "tenant=x"):
        assert secret not in raw


def test_a_model_default_without_a_server_is_flagged(page_client, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "EXECUTOR": "openai", "OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}
    page = page_client.get("/").content.decode()
    assert "no model configured" in page


def test_registration_helpers_check_plugin_urls_and_model_options(model_settings):
    from capabilities.executors import model_option_errors, plugin_url_errors

    model_settings.TEAMCLAW = {**model_settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.example.com"]}
    assert plugin_url_errors("https://plugins.example.com/translate") == []
    assert "not in TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS" in plugin_url_errors("https://169.254.169.254/")[0]
    assert model_option_errors({"model": "m", "endpoint": "local"}) == {}
    assert set(model_option_errors({"endpoint": "gone", "max_rounds": 99})) == {"endpoint", "max_rounds"}

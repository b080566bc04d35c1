"""The admin shows configuration and the record of runs but cannot change either: every
configuration change must be versioned, audited and published (PRD §4.8), which only the
governance pages and API do; the record (tasks, contexts, messages, snapshots, confirmations,
alerts...) is what happened and is read-only everywhere."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client, RequestFactory

from capabilities.models import AgentRole, InvokePermission
from monitoring.models import Message


@pytest.fixture
def admin_client(db):
    user = get_user_model().objects.create_superuser("root", password="pw-for-tests-only-123")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "model", ["invokepermission", "toolpermission", "roleconstraint", "agentrole", "capabilitycard", "project"]
)
def test_config_models_are_view_only_in_the_admin(admin_client, builtin, model):
    listing = admin_client.get(f"/admin/capabilities/{model}/")
    assert listing.status_code == 200
    assert admin_client.get(f"/admin/capabilities/{model}/add/").status_code == 403


def test_an_admin_post_cannot_flip_a_cell(admin_client, builtin):
    cell = InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba")
    response = admin_client.post(
        f"/admin/capabilities/invokepermission/{cell.pk}/change/",
        {"caller": cell.caller_id, "target": cell.target_id, "allowed": "on"},
    )
    assert response.status_code == 403
    cell.refresh_from_db()
    assert not cell.allowed
    role = AgentRole.objects.get(role="dba")
    assert admin_client.post(f"/admin/capabilities/agentrole/{role.pk}/delete/", {"post": "yes"}).status_code == 403
    assert AgentRole.objects.filter(role="dba").exists()


PRODUCT_APPS = {"capabilities", "prompts", "team", "monitoring", "runs"}
REGISTERED = sorted(
    (model._meta.app_label, model._meta.model_name)
    for model in admin.site._registry
    if model._meta.app_label in PRODUCT_APPS
)


def test_every_recorded_model_is_in_the_admin():
    """The record of runs is listed (so the parametrised check below covers it)."""
    recorded = {m._meta.model_name for m in apps.get_app_config("monitoring").get_models()}
    bookkeeping = {"alertrulestate", "recordercheckpoint"}  # the rules' and the recorder's own state, not a run's
    assert recorded - bookkeeping <= {name for app, name in REGISTERED if app == "monitoring"}


@pytest.mark.parametrize(("app", "model"), REGISTERED)
def test_every_product_model_is_view_only_in_the_admin(admin_client, builtin, app, model):
    """Configuration and the record of runs alike: nothing is added, changed or deleted in
    the admin (the record is what happened; configuration changes are versioned)."""
    model_admin = admin.site._registry[apps.get_model(app, model)]
    request = RequestFactory().get("/admin/")
    request.user = get_user_model().objects.get(username="root")
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)
    assert admin_client.get(f"/admin/{app}/{model}/").status_code == 200
    assert admin_client.get(f"/admin/{app}/{model}/add/").status_code == 403


def test_an_admin_post_cannot_change_or_delete_a_recorded_message(admin_client, builtin):
    message = Message.objects.create(
        id="m-admin",
        seq=1,
        type="invoke_request",
        from_role="pm",
        to_role="dba",
        capability_id="schema_query",
        task_id="t-admin",
        payload={},
        priority="normal",
        ttl_ms=60_000,
        timestamp_ms=0,
        status="delivered",
    )
    change = admin_client.post(f"/admin/monitoring/message/{message.pk}/change/", {"status": "denied"})
    assert change.status_code == 403
    delete = admin_client.post(f"/admin/monitoring/message/{message.pk}/delete/", {"post": "yes"})
    assert delete.status_code == 403
    message.refresh_from_db()
    assert message.status == "delivered"

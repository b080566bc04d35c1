"""The admin shows configuration but cannot change it: every change must be versioned,
audited and published (PRD §4.8), which only the governance pages and API do."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from capabilities.models import AgentRole, InvokePermission


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

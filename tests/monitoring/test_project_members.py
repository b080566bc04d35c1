"""A project is for its members (issue 31; ``monitoring.access.can_use_project``): a
non-staff user who is not a member cannot start a task in it (so cannot pull its knowledge
into a task), fork into it, run a workflow in it or read its knowledge; staff manage the
members through the API and the project page, audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.test import APIClient

from capabilities.models import ConfigChange, Project
from knowledge.sources import Upload, add_source
from monitoring.models import Task
from tests.knowledge.helpers import librarian

SECRET = "The launch codes are zebra seven."


@pytest.fixture
def alice(db):
    return get_user_model().objects.create_user("alice", password="x")


@pytest.fixture
def alice_api(alice) -> APIClient:
    from tests.conftest import token_client

    return token_client(alice)


@pytest.fixture
def secret(builtin) -> Project:
    librarian()
    project = Project.objects.create(slug="secret", name="Secret")
    add_source(
        Upload("plan.md", "text/markdown", f"# Plan\n\n{SECRET}\n".encode()),
        role=None,
        project="secret",
        load_level="full",
    )
    return project


def review_in(client, project: str):
    body = {"workflow": "generic", "task_description": "Summarise the plan", "project": project}
    return client.post("/api/v1/tasks", body, format="json")


def test_a_non_member_can_neither_start_a_task_in_a_project_nor_read_its_knowledge(alice_api, secret):
    """The measured escalation: starting a task in any project opened its knowledge."""
    response = review_in(alice_api, "secret")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "project": ["you are not a member of project 'secret': a staff user can add you to its members"]
    }
    assert not Task.objects.exists()
    assert alice_api.get("/api/v1/knowledge/sources").json()["sources"] == []
    assert alice_api.get("/api/v1/knowledge/search", {"q": "launch codes"}).json()["results"] == []


def test_staff_add_a_member_who_may_then_use_the_project(api, alice_api, secret, runtime_host):
    from tests.helpers import wait_for_task

    doc = api.get("/api/v1/projects/secret").json()
    assert doc["members"] == []
    response = api.patch(
        "/api/v1/projects/secret", {"version": doc["version"], "members": ["alice"], "note": "joins"}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["members"] == ["alice"]
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.changes["projects.secret.members"] == {"old": [], "new": ["alice"]}
    started = review_in(alice_api, "secret")
    assert started.status_code == 201, started.content
    wait_for_task(runtime_host, started.json()["task_id"])
    hits = alice_api.get("/api/v1/knowledge/search", {"q": "launch codes"}).json()["results"]
    assert [hit["source"]["name"] for hit in hits] == ["plan.md"]


@pytest.mark.parametrize(
    ("members", "reason"),
    [
        (["nobody"], "there is no user 'nobody'"),
        ("alice", "must be a list of usernames"),
        ([5], "must be a list"),
    ],
)
def test_bad_members_are_refused_by_field_and_change_nothing(api, secret, alice, members, reason):
    version = api.get("/api/v1/projects/secret").json()["version"]
    response = api.patch("/api/v1/projects/secret", {"version": version, "members": members}, format="json")
    assert response.status_code == 400
    assert reason in response.json()["errors"]["members"][0]
    assert list(secret.members.all()) == []


def test_a_removed_member_cannot_fork_their_old_task_into_the_project(api, alice, alice_api, secret):
    secret.members.add(alice)
    task = Task.objects.create(
        id="t-old", status="completed", project=secret, created_by=alice, run_spec={"capability_id": "x"}
    )
    secret.members.remove(alice)
    response = alice_api.post(f"/api/v1/tasks/{task.id}/fork", {"from_step": 0}, format="json")
    assert response.status_code == 400
    assert "project" in response.json()["errors"]


def test_a_workflow_run_in_a_closed_project_is_refused(alice_api, secret):
    from capabilities.skill_models import Workflow

    Workflow.objects.create(workflow_id="greet", name="Greet", source="", definition={})
    response = alice_api.post("/api/v1/workflows/greet/run", {"input": {}, "project": "secret"}, format="json")
    assert response.status_code == 400
    assert "project" in response.json()["errors"]
    assert not Task.objects.exists()


def test_the_project_page_edits_members_and_the_new_task_page_offers_only_usable_projects(page_client, secret, alice):
    page = page_client.get("/projects/secret/").content.decode()
    assert 'name="members"' in page
    from capabilities.versions import document_version

    form = {
        "version": str(document_version("project", secret)),
        "name": "Secret",
        "description": "",
        "tech_stack": "",
        "working_directory": "",
        "members": "alice,  operator",
    }
    assert page_client.post("/projects/secret/", form).status_code == 302
    assert sorted(secret.members.values_list("username", flat=True)) == ["alice", "operator"]
    other = Client()
    other.force_login(get_user_model().objects.create_user("bob", password="x"))
    assert 'value="secret"' not in other.get("/tasks/new/").content.decode()
    mine = Client()
    mine.force_login(alice)
    assert 'value="secret"' in mine.get("/tasks/new/").content.decode()

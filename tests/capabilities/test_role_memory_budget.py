"""A role's memory budget (PRD §4.7 constraints, seed 003 MemoryContext): the
``memory_tokens`` constraint is checked like the others (400 naming the field), may stay
``null`` globally (the process default ``TEAMCLAW_MEMORY_TOKENS``), is editable on the pages
and the roles API, and the record of a real run says the budget that applied."""

from __future__ import annotations

import pytest
import yaml

from capabilities.models import Project, RoleConstraint
from runs.tasks import start_task
from team.snapshot import build_snapshot
from tests.helpers import wait_for_task

CONSTRAINTS = "/api/v1/constraints/coderA"


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (99, "between 100 and 1000000 tokens"),
        (0, "between 100 and 1000000 tokens"),
        (-5, "between 100 and 1000000 tokens"),
        (1_000_001, "between 100 and 1000000 tokens"),
        ("4000", "whole number"),
        (True, "whole number"),
        (2.5, "whole number"),
        ([4000], "whole number"),
    ],
)
def test_a_bad_memory_budget_is_refused_naming_the_field(api, builtin, value, reason):
    doc = api.get(CONSTRAINTS).json()
    before = RoleConstraint.objects.get(project=None, role__role="coderA").timeout_s
    response = api.put(
        CONSTRAINTS,
        {"version": doc["version"], "constraints": {"timeout_s": 90, "memory_tokens": value}},
        format="json",
    )
    assert response.status_code == 400
    assert reason in response.json()["errors"]["constraints.memory_tokens"][0]
    # nothing of the change was applied, not even the good field beside it
    assert RoleConstraint.objects.get(project=None, role__role="coderA").timeout_s == before


def test_a_new_role_with_a_bad_memory_budget_is_refused(api, builtin):
    body = {"role": "archivist", "display_name": "Archivist", "constraints": {"memory_tokens": 50}}
    response = api.post("/api/v1/roles", body, format="json")
    assert response.status_code == 400
    assert "between 100 and 1000000" in response.json()["errors"]["constraints.memory_tokens"][0]
    body["constraints"] = {"memory_tokens": 1500}
    created = api.post("/api/v1/roles", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["constraints"]["memory_tokens"] == 1500
    assert build_snapshot().constraints_for("archivist").memory_tokens == 1500


def test_the_memory_budget_is_set_globally_reset_to_the_default_and_inherited(api, builtin):
    doc = api.get(CONSTRAINTS).json()
    assert doc["constraints"]["memory_tokens"] is None  # the built-in team leaves it to the process
    assert doc["bounds"]["memory_tokens"] == {"minimum": 100, "maximum": 1_000_000}
    saved = api.put(CONSTRAINTS, {"version": doc["version"], "constraints": {"memory_tokens": 2500}}, format="json")
    assert saved.status_code == 200, saved.json()
    assert build_snapshot().constraints_for("coderA").memory_tokens == 2500

    Project.objects.create(slug="shop", name="Shop")
    shop_doc = api.get(f"{CONSTRAINTS}?project=shop").json()
    assert shop_doc["constraints"]["memory_tokens"] == 2500  # a project inherits the global value
    shop_saved = api.put(
        f"{CONSTRAINTS}?project=shop",
        {"version": shop_doc["version"], "constraints": {"memory_tokens": 600}},
        format="json",
    )
    assert shop_saved.status_code == 200, shop_saved.json()
    assert build_snapshot("shop").constraints_for("coderA").memory_tokens == 600

    # null globally (unlike the other fields) hands the role back to TEAMCLAW_MEMORY_TOKENS
    doc = api.get(CONSTRAINTS).json()
    reset = api.put(CONSTRAINTS, {"version": doc["version"], "constraints": {"memory_tokens": None}}, format="json")
    assert reset.status_code == 200, reset.json()
    assert build_snapshot().constraints_for("coderA").memory_tokens is None
    assert build_snapshot("shop").constraints_for("coderA").memory_tokens == 600


def test_the_openapi_document_describes_the_memory_budget(api, builtin):
    schema = api.get("/api/v1/schema/", {"format": "json"}).json()
    components = schema["components"]["schemas"]
    fields = components["ConstraintsSave"]["properties"]["constraints"]["properties"]
    memory = fields["memory_tokens"]  # OpenAPI 3.0 has no null type: nullable instead
    assert (memory["type"], memory["minimum"], memory["maximum"], memory["nullable"]) == (
        "integer",
        100,
        1_000_000,
        True,
    )
    new_role = components["RoleCreate"]["properties"]["constraints"]["properties"]
    assert new_role["memory_tokens"]["nullable"] is True
    assert new_role["timeout_s"]["type"] == "integer"  # not nullable for a new role
    assert "nullable" not in new_role["timeout_s"]


def test_the_constraints_page_edits_the_memory_budget(page_client, builtin):
    page = page_client.get("/constraints/coderA/").content.decode()
    assert 'name="memory_tokens"' in page and "process default: 4000" in page
    form = {
        "version": "0",
        "timeout_s": "60",
        "max_retries": "3",
        "file_scope": ".",
        "token_budget": "50000",
        "max_concurrent_instances": "4",
        "memory_tokens": "12",
    }
    refused = page_client.post("/constraints/coderA/", form)
    assert refused.status_code == 400
    assert "between 100 and 1000000 tokens" in refused.content.decode()
    form["memory_tokens"] = "900"
    assert page_client.post("/constraints/coderA/", form).status_code == 302
    assert RoleConstraint.objects.get(project=None, role__role="coderA").memory_tokens == 900
    detail = page_client.get("/roles/coderA/").content.decode()
    assert "900 tokens (this role's)" in detail
    chinese = page_client.get("/roles/coderA/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "记忆预算" in chinese
    form["memory_tokens"] = ""  # empty: back to the process default
    form["version"] = str(page_client.get("/api/v1/constraints/coderA").json()["version"])
    assert page_client.post("/constraints/coderA/", form).status_code == 302
    assert RoleConstraint.objects.get(project=None, role__role="coderA").memory_tokens is None
    assert "(the server's default for every role)" in page_client.get("/roles/coderA/").content.decode()


def test_the_new_role_form_takes_a_memory_budget(page_client, builtin):
    assert 'name="constraint_memory_tokens"' in page_client.get("/roles/new/").content.decode()
    form = {
        "role": "archivist",
        "display_name": "Archivist",
        "can_be_invoked_by": ["main"],
        "constraint_memory_tokens": "700",
    }
    response = page_client.post("/roles/new/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert RoleConstraint.objects.get(project=None, role__role="archivist").memory_tokens == 700


@pytest.fixture
def memory_budget(settings) -> int:
    """The process default the host's runtime is built with (set before ``runtime_host``)."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MEMORY_TOKENS": 1234, "DEMO_THINK_MS": 0}
    return 1234


def test_the_record_says_which_budget_applied(memory_budget, runtime_host, staff_user, client):
    """A real task on the runtime host: pm has its own budget, main keeps the default; the
    contexts API and the inspector show each with where it came from."""
    RoleConstraint.objects.filter(project=None, role__role="pm").update(memory_tokens=777)
    task = start_task(workflow="generic", task_description="Write the changelog", user=staff_user)
    task = wait_for_task(runtime_host, task.id)
    pm, main = task.contexts.get(role="pm"), task.contexts.get(role="main")
    assert (pm.memory["budget_tokens"], pm.memory["budget_source"]) == (777, "role")
    assert (main.memory["budget_tokens"], main.memory["budget_source"]) == (memory_budget, "default")
    client.force_login(staff_user)
    body = client.get(f"/api/v1/contexts/{pm.id}").json()
    assert body["memory"]["budget_tokens"] == 777
    inspector = client.get(f"/live/contexts/{pm.id}/").content.decode()
    assert "replays up to 777" in inspector and "(the role's memory_tokens)" in inspector
    default = client.get(f"/live/contexts/{main.id}/").content.decode()
    assert "replays up to 1234" in default and "(the process default)" in default


def test_the_memory_budget_travels_in_the_configuration_document(api, builtin):
    """Exported (``null`` = the process default), imported, and refused with its path when
    out of bounds (US-10)."""
    document = yaml.safe_load(api.get("/api/v1/config/export").content.decode())
    assert document["constraints"]["pm"]["memory_tokens"] is None
    document["constraints"]["pm"]["memory_tokens"] = 50
    refused = api.post(
        "/api/v1/config/import?dry_run=false", data=yaml.safe_dump(document).encode(), content_type="application/yaml"
    )
    assert refused.status_code == 400
    assert "/constraints/pm/memory_tokens" in refused.json()["errors"]
    assert build_snapshot().constraints_for("pm").memory_tokens is None  # nothing applied
    document["constraints"]["pm"]["memory_tokens"] = 6000
    taken = api.post(
        "/api/v1/config/import?dry_run=false", data=yaml.safe_dump(document).encode(), content_type="application/yaml"
    )
    assert taken.status_code == 200, taken.json()
    assert build_snapshot().constraints_for("pm").memory_tokens == 6000


@pytest.mark.parametrize("text", ["²", "--5", "١٢٠٠٠", "9" * 5000, "12.5", "1e3"])
def test_a_number_field_that_is_not_plain_digits_is_refused_by_both_forms(page_client, builtin, text):
    """``str.isdigit`` takes ``²`` and Arabic-Indic digits, and ``int`` then fails or reads them:
    the forms accept ASCII digits only and name the field, never a 500 (issue 17)."""
    form = {
        "version": "0",
        "timeout_s": "60",
        "max_retries": "3",
        "file_scope": ".",
        "token_budget": "50000",
        "max_concurrent_instances": "4",
        "memory_tokens": text,
    }
    refused = page_client.post("/constraints/coderA/", form)
    assert refused.status_code == 400
    assert "memory_tokens" in refused.content.decode()
    assert RoleConstraint.objects.get(project=None, role__role="coderA").memory_tokens is None
    new_role = {"role": "archivist", "display_name": "Archivist", "constraint_memory_tokens": text}
    refused = page_client.post("/roles/new/", new_role)
    assert refused.status_code == 400
    assert not RoleConstraint.objects.filter(role__role="archivist").exists()
    assert page_client.post("/constraints/coderA/", {**form, "memory_tokens": "", "version": text}).status_code != 500

"""A role allowed to invoke itself needs two instances (``capabilities.matrices.
self_invocation_conflicts``): main asks main (``question_aggregation``) during a review, and
with one main instance that call finds its only instance busy with the caller and fails
(``limit_too_low``). The constraint save, the invoke matrix save and the import refuse the
combination, naming the field, and save nothing."""

from __future__ import annotations

import html
import json

import pytest
import yaml

from capabilities.models import ConfigChange, InvokePermission, Project, RoleConstraint
from team.snapshot import build_snapshot


@pytest.fixture
def shop(db):
    return Project.objects.create(slug="shop", name="Shop", working_directory="/srv/shop")


def put_constraints(api, role, values, project=None):
    query = f"?project={project}" if project else ""
    doc = api.get(f"/api/v1/constraints/{role}{query}").json()
    return api.put(
        f"/api/v1/constraints/{role}{query}", {"version": doc["version"], "constraints": values}, format="json"
    )


def put_invoke(api, matrix, project=None):
    url = "/api/v1/permissions/invoke-matrix" + (f"?project={project}" if project else "")
    doc = api.get(url).json()
    return api.put(url, {"version": doc["version"], "matrix": matrix}, format="json")


def test_one_main_instance_is_refused_while_main_may_invoke_itself(api, builtin):
    changes = ConfigChange.objects.count()
    response = put_constraints(api, "main", {"max_concurrent_instances": 1, "timeout_s": 30})
    assert response.status_code == 400, response.content
    reason = response.json()["errors"]["constraints.max_concurrent_instances"][0]
    assert "main may invoke itself" in reason and "set 2 or more, or deny main -> main first" in reason
    assert build_snapshot(None).roles["main"].constraints.max_concurrent_instances == 4
    assert build_snapshot(None).roles["main"].constraints.timeout_s != 30  # the whole save rolled back
    assert ConfigChange.objects.count() == changes
    assert put_constraints(api, "main", {"max_concurrent_instances": 2}).status_code == 200
    assert put_constraints(api, "dba", {"max_concurrent_instances": 1}).status_code == 200  # dba never asks dba


def test_denying_the_self_call_first_allows_one_instance_and_allowing_it_again_is_refused(api, builtin):
    assert put_invoke(api, {"main": {"main": False}}).status_code == 200
    assert put_constraints(api, "main", {"max_concurrent_instances": 1}).status_code == 200
    refused = put_invoke(api, {"main": {"main": True}})
    assert refused.status_code == 400, refused.content
    assert "max_concurrent_instances 1" in refused.json()["errors"]["matrix.main.main"][0]
    assert not InvokePermission.objects.get(project=None, caller__role="main", target__role="main").allowed


def test_a_project_inheriting_the_global_limit_is_checked_with_it(api, builtin, shop):
    assert put_invoke(api, {"main": {"main": False}}).status_code == 200
    assert put_invoke(api, {"main": {"main": True}}, project="shop").status_code == 200  # shop lets main ask main
    refused = put_constraints(api, "main", {"max_concurrent_instances": 1})
    assert refused.status_code == 400
    assert "in project 'shop'" in refused.json()["errors"]["constraints.max_concurrent_instances"][0]
    # shop keeps its own two instances: then the global 1 harms nobody
    assert put_constraints(api, "main", {"max_concurrent_instances": 2}, project="shop").status_code == 200
    assert put_constraints(api, "main", {"max_concurrent_instances": 1}).status_code == 200
    refused = put_constraints(api, "main", {"max_concurrent_instances": None}, project="shop")  # back to inherit 1
    assert refused.status_code == 400
    assert RoleConstraint.objects.get(project=shop, role__role="main").max_concurrent_instances == 2


def test_the_import_refuses_it_and_imports_nothing(api, builtin):
    changes = ConfigChange.objects.count()
    document = yaml.safe_load(api.get("/api/v1/config/export").content)
    document["constraints"]["main"].update(max_concurrent_instances=1, max_retries=0)
    response = api.post("/api/v1/config/import", json.dumps(document), content_type="application/json")
    assert response.status_code == 400, response.content
    assert "main may invoke itself" in response.json()["errors"]["/constraints/main/max_concurrent_instances"][0]
    assert build_snapshot(None).roles["main"].constraints.max_retries != 0
    assert ConfigChange.objects.count() == changes
    document["invoke_matrix"]["main"]["main"] = False  # the same document without main -> main imports
    assert api.post("/api/v1/config/import", json.dumps(document), content_type="application/json").status_code == 200


FORM = {"version": "0", "timeout_s": "60", "max_retries": "3", "file_scope": ".", "token_budget": "50000"}


@pytest.mark.parametrize(
    ("language", "words"),
    [("en", "main may invoke itself (invoke matrix main -> main) globally"), ("zh-hans", "main 在全局可以调用自己")],
)
def test_the_constraints_page_refuses_it_in_the_operators_language(page_client, builtin, language, words):
    refused = page_client.post(
        "/constraints/main/", {**FORM, "max_concurrent_instances": "1"}, HTTP_ACCEPT_LANGUAGE=language
    )
    assert refused.status_code == 400
    assert words in html.unescape(refused.content.decode())
    banner = {"en": "<strong>Not saved.</strong> Fix the fields marked below", "zh-hans": "<strong>未保存。</strong>"}
    assert banner[language] in refused.content.decode()  # said at the top too, not only under the field
    assert build_snapshot(None).roles["main"].constraints.max_concurrent_instances == 4


def import_document(api, document):
    return api.post("/api/v1/config/import", json.dumps(document), content_type="application/json")


def project_document(**sections):
    return {"format": "teamclaw-config/1", "scope": "project", "project": {"slug": "shop", "name": "Shop"}, **sections}


def test_a_project_import_resetting_the_self_call_to_inherit_is_checked(api, builtin, shop):
    """The project denies main -> main and keeps one main instance; an import that sets the
    cell back to null (inherit the global allow) would let main ask itself with one."""
    assert put_invoke(api, {"main": {"main": False}}, project="shop").status_code == 200
    assert put_constraints(api, "main", {"max_concurrent_instances": 1}, project="shop").status_code == 200
    response = import_document(api, project_document(invoke_matrix={"main": {"main": None}}))
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert "in project 'shop'" in errors["/invoke_matrix/main/main"][0]
    assert "/constraints/main/max_concurrent_instances" not in errors  # the document did not set the limit
    assert InvokePermission.objects.filter(project=shop, caller__role="main", target__role="main").exists()


def test_an_import_names_the_invoke_cell_when_the_cell_causes_it(api, builtin):
    assert put_invoke(api, {"main": {"main": False}}).status_code == 200
    assert put_constraints(api, "main", {"max_concurrent_instances": 1}).status_code == 200
    response = import_document(api, project_document(invoke_matrix={"main": {"main": True}}))
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]) == ["/invoke_matrix/main/main"]
    assert not Project.objects.filter(slug="shop").exists()  # the new project went with the refusal


@pytest.mark.parametrize("where", ["permissions", "constraints"])
def test_a_custom_role_that_may_invoke_itself_needs_two_instances(api, builtin, where):
    body = {"role": "selfy", "display_name": "Selfy", "permissions": {"can_invoke": ["selfy"]}}
    body.setdefault(where, {})["max_concurrent_instances"] = 1
    response = api.post("/api/v1/roles", body, format="json")
    assert response.status_code == 400, response.content
    assert "selfy may invoke itself" in response.json()["errors"][f"{where}.max_concurrent_instances"][0]
    body[where]["max_concurrent_instances"] = 2
    assert api.post("/api/v1/roles", body, format="json").status_code == 201


def test_a_conflict_stored_before_the_check_does_not_block_other_saves(api, builtin, shop):
    """Rows written before this rule (or outside the product) keep main at 1 with main ->
    main allowed in shop: saves that do not introduce a conflict still go through, and
    re-importing the export changes nothing."""
    RoleConstraint.objects.update_or_create(
        project=shop, role=builtin_role("main"), defaults={"max_concurrent_instances": 1}
    )
    assert put_constraints(api, "main", {"max_concurrent_instances": 3}).status_code == 200  # global, shop unchanged
    assert put_constraints(api, "main", {"timeout_s": 90}, project="shop").status_code == 200
    exported = yaml.safe_load(api.get("/api/v1/config/export", {"project": "shop"}).content)
    assert import_document(api, exported).status_code == 200
    assert put_constraints(api, "main", {"max_concurrent_instances": 1}, project="shop").status_code == 200  # still 1
    refused = put_constraints(api, "main", {"max_concurrent_instances": 1})  # a new one: globally
    assert refused.status_code == 400
    assert "globally" in refused.json()["errors"]["constraints.max_concurrent_instances"][0]


def builtin_role(slug):
    from capabilities.models import AgentRole

    return AgentRole.objects.get(role=slug)

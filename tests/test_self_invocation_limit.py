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
    assert build_snapshot(None).roles["main"].constraints.max_concurrent_instances == 4

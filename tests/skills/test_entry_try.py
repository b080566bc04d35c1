"""Trying an ENTRY capability from the dashboard (issue 17): a form built from the card's
input schema, checked with jsonschema by field, then a real invoke through the runtime."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from monitoring.models import Message
from tests.skills.support import bring_up
from web.capability_input_form import input_fields, read_params

ENUM_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "description": "who asks"},
        "count": {"type": "integer", "minimum": 1},
        "ratio": {"type": "number"},
        "urgent": {"type": "boolean"},
        "tone": {"enum": ["formal", "casual"]},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "count"],
}


def test_the_form_has_one_field_per_property_with_its_widget_and_required_marked():
    fields = {f.name: f for f in input_fields(ENUM_SCHEMA)}
    assert [f.name for f in input_fields(ENUM_SCHEMA)] == list(ENUM_SCHEMA["properties"])
    assert {n: f.widget for n, f in fields.items()} == {
        "name": "text",
        "count": "number",
        "ratio": "number",
        "urgent": "boolean",
        "tone": "enum",
        "level": "enum",
        "tags": "json",
    }
    assert (fields["count"].step, fields["ratio"].step) == ("1", "any")
    assert fields["tone"].choices == ("formal", "casual")
    assert {n for n, f in fields.items() if f.required} == {"name", "count"}
    assert input_fields({"type": "object"}) == []


def test_posted_values_become_typed_params_and_schema_errors_come_back_by_field():
    params, errors = read_params(
        ENUM_SCHEMA,
        {
            "param:name": "Ann",
            "param:count": "3",
            "param:ratio": "0.5",
            "param:urgent": "false",
            "param:tone": "casual",
            "param:level": "2",
            "param:tags": '["a", "b"]',
        },
    )
    assert errors == {}
    assert params == {
        "name": "Ann",
        "count": 3,
        "ratio": 0.5,
        "urgent": False,
        "tone": "casual",
        "level": 2,
        "tags": ["a", "b"],
    }
    _, errors = read_params(ENUM_SCHEMA, {"param:name": "A", "param:count": "0", "param:tags": '["a", 1]'})
    assert set(errors) == {"name", "count", "tags"}
    assert "is too short" in errors["name"][0]
    assert "less than the minimum" in errors["count"][0]
    _, missing = read_params(ENUM_SCHEMA, {"param:ratio": "x", "param:tags": "{bad"})
    assert set(missing) == {"ratio", "tags"}  # unreadable fields first
    _, missing = read_params(ENUM_SCHEMA, {})
    assert missing == {"name": ["is required"], "count": ["is required"]}
    _, wrong = read_params(ENUM_SCHEMA, {"param:name": "Ann", "param:count": "1.5", "param:tone": "rude"})
    assert set(wrong) == {"count", "tone"}


ASK_SKILL = """skill:
  id: askdesk
  name: Ask desk
  version: 1.0.0
  skillForm: SCENE
  capabilities:
    - name: ask
      type: ENTRY
      description: Ask the desk
      inputParameters:
        - {name: question, type: string, required: true, description: what you want to know}
        - {name: copies, type: integer}
        - {name: loud, type: boolean}
        - {name: context, type: object}
"""


@pytest.fixture
def staff_page(staff_user) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


def test_an_operator_tries_an_entry_capability_from_the_dashboard(api, runtime_host, staff_page, viewer_user):
    bring_up(api, ASK_SKILL, role="devops")
    dashboard = staff_page.get("/").content.decode()
    link = dashboard.split('class="button small try-entry" href="')[1].split('"')[0]
    assert link == "/capabilities/askdesk__ask/try/"
    page = staff_page.get(link)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="param:question"' in html and 'name="param:copies"' in html and 'step="1"' in html
    assert 'name="param:context"' in html and "<textarea" in html
    question = html.split('data-field="question"')[1].split("</div>")[0]
    assert 'class="required"' in question
    before = Message.objects.count()
    bad = staff_page.post(link, {"from_role": "main", "param:question": "", "param:copies": "two"})
    assert bad.status_code == 400
    text = bad.content.decode()
    assert 'data-field="copies">is not a number' in text
    assert Message.objects.count() == before  # nothing was invoked
    missing = staff_page.post(link, {"from_role": "main", "param:copies": "2"}).content.decode()
    assert 'data-field="question">is required' in missing
    ok = staff_page.post(
        link, {"from_role": "main", "param:question": "Where?", "param:copies": "2", "param:loud": "true"}
    )
    assert ok.status_code == 200
    body = ok.content.decode()
    assert 'id="try-result" data-success="true"' in body, body.split('id="try-result"')[-1][:500]
    runtime_host.recorder.flush()
    assert Message.objects.filter(type="invoke_request", capability_id="askdesk__ask", from_role="main").exists()
    viewer = Client()
    viewer.force_login(viewer_user)
    assert viewer.get(link).status_code == 403


def test_a_refused_try_shows_the_error_code(api, runtime_host, staff_page):
    from capabilities.matrices import INVOKE, matrix_document

    bring_up(api, ASK_SKILL, role="devops")
    matrix = matrix_document(INVOKE)["matrix"]
    outsider = next(caller for caller, cells in matrix.items() if not cells["devops"] and caller != "devops")
    page = staff_page.get("/capabilities/askdesk__ask/try/").content.decode()
    option = re.search(rf'<option value="{outsider}" >([^<]*)</option>', page)  # the role's name shown
    assert option and option.group(1) and "may invoke it" not in option.group(1)
    refused = staff_page.post("/capabilities/askdesk__ask/try/", {"from_role": outsider, "param:question": "Why?"})
    assert refused.status_code == 200
    html = refused.content.decode()
    assert 'data-success="false"' in html
    assert '<code id="try-error-code">permission_denied</code>' in html


def test_a_capability_that_is_not_an_entry_point_offers_no_form_and_invokes_nothing(staff_page, builtin):
    page = staff_page.get("/capabilities/schema_query/try/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="not-entry"' in html and 'id="try-form"' not in html
    before = Message.objects.count()
    assert staff_page.post("/capabilities/schema_query/try/", {"from_role": "main"}).status_code == 400
    assert Message.objects.count() == before

"""The prompt pages (US-03): login for reading, staff (or prompts.add_promptversion) for
changing, CSRF on every form, every value escaped."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from rest_framework.test import APIClient

from prompts.models import PromptVersion
from tests.conftest import PASSWORD

PAGES = [
    "/prompts/",
    "/prompts/pm/",
    "/prompts/pm/persona/",
    "/prompts/pm/persona/?version=1.0.0",
    "/prompts/pm/persona/diff/?from=1.0.0&to=1.0.0",
    "/prompts/pm/preview/",
]
EDITOR_PAGES = [
    "/prompts/pm/persona/edit/",
    "/prompts/pm/persona/rollback/1.0.0/",
    "/prompts/pm/persona/activate/1.0.0/",
]


def active(role="pm", template_type="persona"):
    return PromptVersion.objects.get(
        template__role__role=role, template__template_type=template_type, template__project=None, is_active=True
    )


def edit(client, content, **fields):
    data = {
        "content": content,
        "variables": "[]",
        "bump": "patch",
        "base_version": active().version,
        "action": "activate",
    }
    data.update(fields)
    return client.post("/prompts/pm/persona/edit/", data)


@pytest.fixture
def viewer_client(viewer_user) -> Client:
    client = Client()
    client.force_login(viewer_user)
    return client


@pytest.mark.parametrize("path", PAGES + EDITOR_PAGES)
def test_prompt_pages_need_a_login(builtin, path):
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", PAGES + EDITOR_PAGES[:2])
def test_staff_see_every_prompt_page(page_client, builtin, path):
    assert page_client.get(path).status_code == 200


def test_viewers_read_but_cannot_open_the_editor_or_change_anything(viewer_client, builtin):
    for path in PAGES:
        assert viewer_client.get(path).status_code == 200, path
    html = viewer_client.get("/prompts/pm/persona/").content.decode()
    assert "/edit/" not in html
    assert "roll back" not in html
    for path in EDITOR_PAGES:
        assert viewer_client.get(path).status_code == 403, path
        assert viewer_client.post(path, {"content": "x"}).status_code == 403, path
    assert active().version == "1.0.0"


def test_the_api_refuses_changes_from_viewers_and_anonymous_clients(viewer_user, builtin):
    anonymous = APIClient()
    assert anonymous.get("/api/v1/prompts/pm").status_code == 401
    assert anonymous.post("/api/v1/prompts/pm/render", {}, format="json").status_code == 401
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    for path, body in [
        ("/api/v1/prompts/pm/persona/versions", {"content": "x"}),
        ("/api/v1/prompts/pm/persona/rollback", {"version": "1.0.0"}),
        ("/api/v1/prompts/pm/persona/activate", {"version": "1.0.0"}),
    ]:
        response = viewer.post(path, body, format="json")
        assert response.status_code == 403, path
        assert "staff" in response.json()["detail"], path
    assert viewer.get("/api/v1/prompts/pm/persona/versions").status_code == 200
    assert viewer.post("/api/v1/prompts/pm/render", {}, format="json").status_code == 200
    assert viewer.post("/api/v1/prompts/pm/persona/preview", {"content": "hi"}, format="json").status_code == 200


def test_the_prompt_permission_is_enough_without_staff(builtin):
    user = get_user_model().objects.create_user("writer", password=PASSWORD)
    user.user_permissions.add(Permission.objects.get(codename="add_promptversion"))
    client = Client()
    client.force_login(user)
    response = edit(client, "Written by a prompt editor.")
    assert response.status_code == 302
    assert active().content == "Written by a prompt editor."


def test_forms_need_a_csrf_token(staff_user, builtin):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    assert edit(client, "No token").status_code == 403
    assert client.post("/prompts/pm/persona/rollback/1.0.0/", {}).status_code == 403
    page = client.get("/prompts/pm/persona/edit/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in page
    assert active().version == "1.0.0"


def test_the_editor_saves_a_new_active_version_and_says_so(page_client, builtin):
    response = edit(page_client, "Edited in the browser.", bump="minor", note="from the editor")
    assert response.status_code == 302
    assert response["Location"] == "/prompts/pm/persona/"
    version = active()
    assert (version.version, version.content, version.note, version.created_by.username) == (
        "1.1.0",
        "Edited in the browser.",
        "from the editor",
        "operator",
    )
    page = page_client.get(response["Location"]).content.decode()
    assert "persona 1.1.0 is active." in page


def test_the_editor_keeps_what_was_typed_and_names_the_field_at_fault(page_client, builtin):
    response = edit(page_client, "Keep <this> text", variables="[{oops")
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="variables-error"' in html
    assert "not valid JSON" in html
    assert "Keep &lt;this&gt; text" in html
    assert active().version == "1.0.0"
    hostile = edit(page_client, "{{ ''.__class__.__mro__ }}")
    assert hostile.status_code == 400
    assert "access to attribute &#x27;__mro__&#x27; is not allowed" in hostile.content.decode()


def test_a_stale_editor_is_told_someone_else_saved_first(page_client, builtin):
    assert edit(page_client, "First edit", base_version="1.0.0").status_code == 302
    response = edit(page_client, "Second edit", base_version="1.0.0")
    assert response.status_code == 409
    assert "the active version is now 1.0.1" in response.content.decode()
    assert active().content == "First edit"


def test_a_draft_can_be_saved_and_activated_after_confirmation(page_client, builtin):
    assert edit(page_client, "A draft", action="draft").status_code == 302
    assert active().version == "1.0.0"
    page = page_client.get("/prompts/pm/persona/").content.decode()
    assert "draft" in page
    assert "/prompts/pm/persona/activate/1.0.1/" in page
    confirm = page_client.get("/prompts/pm/persona/activate/1.0.1/")
    assert confirm.status_code == 200
    assert "Activate 1.0.1" in confirm.content.decode()
    assert page_client.post("/prompts/pm/persona/activate/1.0.1/", {}).status_code == 302
    assert active().version == "1.0.1"


def test_live_preview_renders_the_draft_content_without_saving(page_client, builtin):
    count = PromptVersion.objects.count()
    response = page_client.post(
        "/prompts/pm/persona/edit/preview/",
        {"content": "Hello {{ who }} at {{ project_name }}", "variables": "[]", "values": '{"who": "<b>Ann</b>"}'},
        HTTP_HX_REQUEST="true",
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html
    assert "Hello &lt;b&gt;Ann&lt;/b&gt; at TeamClaw" in html
    assert "Used but neither declared nor always available" in html
    refused = page_client.post("/prompts/pm/persona/edit/preview/", {"content": "{{ 'a' * 10**9 }}"}).content.decode()
    assert 'id="preview-error"' in refused
    assert "larger than 100,000" in refused
    assert PromptVersion.objects.count() == count


def test_rollback_asks_for_confirmation_then_restores(page_client, builtin):
    edit(page_client, "Second version")
    confirm = page_client.get("/prompts/pm/persona/rollback/1.0.0/")
    html = confirm.content.decode()
    assert confirm.status_code == 200
    assert "Roll back to 1.0.0" in html
    assert "<del>" in html
    assert active().version == "1.0.1"  # a GET changes nothing
    response = page_client.post("/prompts/pm/persona/rollback/1.0.0/", {"bump": "minor", "base_version": "1.0.1"})
    assert response.status_code == 302
    restored = active()
    assert (restored.version, restored.rollback_of) == ("1.1.0", "1.0.0")
    stale = page_client.post("/prompts/pm/persona/rollback/1.0.1/", {"base_version": "1.0.1"})
    assert stale.status_code == 400
    assert "the active version is now 1.1.0" in stale.content.decode()


def test_every_value_is_escaped_on_the_pages(page_client, builtin):
    evil = "<script>alert('x')</script>"
    edit(page_client, f"Persona {evil}", note=f"note {evil}", variables=f'[{{"name": "v", "description": "{evil}"}}]')
    pages = [
        "/prompts/pm/persona/",
        "/prompts/pm/persona/diff/?from=1.0.0&to=1.0.1",
        "/prompts/pm/persona/rollback/1.0.0/",
        "/prompts/pm/preview/?task_description=" + "%3Cscript%3E",
    ]
    for path in pages:
        html = page_client.get(path).content.decode()
        assert "<script>alert" not in html, path
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page_client.get(pages[0]).content.decode()


def test_history_is_paginated_newest_first(page_client, builtin):
    from prompts.actions import save_version
    from prompts.queries import get_role

    role = get_role("pm")
    for n in range(30):
        save_version(role=role, template_type="persona", content=f"Persona {n}", actor=None)
    first = page_client.get("/prompts/pm/persona/").content.decode()
    assert "Page 1 of 2" in first
    assert "1.0.30" in first
    assert 'data-version="1.0.0"' not in first
    second = page_client.get("/prompts/pm/persona/?page=2").content.decode()
    assert 'data-version="1.0.0"' in second


def test_the_layered_preview_shows_each_layer_and_the_final_prompt(page_client, builtin, shop, api):
    api.post("/api/v1/prompts/pm/persona/versions", {"content": "Shop rule.", "project": "shop"}, format="json")
    html = page_client.get(
        "/prompts/pm/preview/?project=shop&task_description=Plan+it&prompt_enhancement=Be+brief"
    ).content.decode()
    assert "project 1.0.0" in html
    assert "Shop rule." in html
    assert 'id="final-prompt"' in html
    assert "Current task: Plan it" in html
    assert "Be brief" in html
    partial = page_client.get("/prompts/pm/preview/?project=shop", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial
    assert "Shop rule." in partial
    bad = page_client.get("/prompts/pm/preview/?variables=%5B1%5D").content.decode()
    assert "variables: must be a JSON object" in bad


def test_unknown_roles_types_projects_and_versions_are_404s(page_client, builtin):
    for path in [
        "/prompts/ghost/",
        "/prompts/pm/mood/",
        "/prompts/pm/persona/?project=nowhere",
        "/prompts/pm/persona/?version=7.7.7",
        "/prompts/pm/persona/diff/?from=1.0.0&to=7.7.7",
        "/prompts/pm/persona/rollback/7.7.7/",
    ]:
        assert page_client.get(path).status_code == 404, path


def test_the_role_page_links_to_its_prompts_and_the_nav_has_prompts(page_client, builtin):
    html = page_client.get("/roles/pm/").content.decode()
    assert 'href="/prompts/pm/"' in html
    assert 'href="/prompts/pm/persona/"' in html
    assert 'href="/prompts/"' in page_client.get("/").content.decode()


def test_a_project_without_an_override_says_so_and_offers_to_add_one(page_client, builtin, shop):
    html = page_client.get("/prompts/pm/persona/?project=shop").content.decode()
    assert "No override for Online shop" in html
    assert "Add project override" in html
    editor = page_client.get("/prompts/pm/persona/edit/?project=shop")
    assert editor.status_code == 200
    assert "<h1>Override <code>persona</code> for Online shop</h1>" in editor.content.decode()  # not "a Online shop"


def test_the_layered_preview_can_start_from_an_existing_task(page_client, builtin, shop, api):
    from monitoring.models import Task

    api.post("/api/v1/prompts/pm/persona/versions", {"content": "Shop rule.", "project": "shop"}, format="json")
    Task.objects.create(
        id="t-layers", workflow="generic", description="Price the books", project=shop, prompt_enhancement="Cite ISBNs."
    )
    html = page_client.get("/prompts/pm/preview/?task_id=t-layers").content.decode()
    assert "Shop rule." in html
    assert "Current task: Price the books" in html
    assert "Cite ISBNs." in html
    missing = page_client.get("/prompts/pm/preview/?task_id=nope").content.decode()
    assert "task_id: task &#x27;nope&#x27; does not exist" in missing


def test_the_admin_shows_prompts_read_only(builtin):
    admin_user = get_user_model().objects.create_superuser("root", password=PASSWORD)
    page_client = Client()
    page_client.force_login(admin_user)
    version = active()
    assert page_client.get("/admin/prompts/promptversion/").status_code == 200
    assert page_client.get("/admin/prompts/promptversion/add/").status_code == 403
    page = page_client.get(f"/admin/prompts/promptversion/{version.pk}/change/")
    assert page.status_code == 200
    assert 'name="content"' not in page.content.decode()
    page_client.post(f"/admin/prompts/promptversion/{version.pk}/change/", {"content": "edited in admin"})
    assert active().content == version.content


def diff_links(html: str) -> dict[str, str]:
    """Each history row's "diff with active" query, by the row's version."""
    import re

    rows = re.findall(r'<tr data-version="([^"]+)">(.*?)</tr>', html, re.S)
    out = {}
    for version, row in rows:
        found = re.search(r'href="/prompts/pm/persona/diff/\?([^"]+)">diff with active', row)
        if found:
            out[version] = found.group(1).replace("&amp;", "&")
    return out


def test_diff_with_active_goes_from_the_older_version_to_the_newer(page_client, builtin):
    from prompts.actions import save_version
    from prompts.queries import get_role

    role = get_role("pm")
    save_version(role=role, template_type="persona", content="Persona two", actor=None)
    save_version(role=role, template_type="persona", content="Persona draft", actor=None, activate=False)
    assert active().version == "1.0.1"
    links = diff_links(page_client.get("/prompts/pm/persona/").content.decode())
    assert links == {"1.0.0": "from=1.0.0&to=1.0.1", "1.0.2": "from=1.0.1&to=1.0.2"}
    diff = page_client.get("/prompts/pm/persona/diff/?" + links["1.0.0"]).content.decode()
    assert "Persona two" in diff


def test_a_chinese_page_names_the_template_type_in_chinese(page_client, builtin):
    """ "人设 1.1.0 已生效", not "persona 1.1.0 已生效" (the slug stays in URLs and data-type)."""
    page_client.cookies["django_language"] = "zh-hans"
    response = edit(page_client, "中文编辑。", bump="minor")
    page = page_client.get(response["Location"]).content.decode()
    assert "人设 1.1.0" in page and "persona 1.1.0" not in page
    heading = page_client.get("/prompts/pm/persona/edit/").content.decode().split("<h1>", 1)[1].split("</h1>")[0]
    assert "人设" in heading and "persona" not in heading

"""Rollback and diff (PRD §4.5 支持版本回退和 diff 对比): a rollback is a new version with the
old content, marked as such; a diff shows unified text and side-by-side words, escaped."""

from __future__ import annotations

from capabilities.models import ConfigChange
from prompts.diff import diff_texts
from prompts.models import PromptVersion


def save(api, content, **body):
    response = api.post("/api/v1/prompts/pm/persona/versions", {"content": content, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def rollback(api, version, **body):
    return api.post("/api/v1/prompts/pm/persona/rollback", {"version": version, **body}, format="json")


def history(api):
    return [
        (v["version"], v["is_active"], v["rollback_of"])
        for v in api.get("/api/v1/prompts/pm/persona/versions").json()["results"]
    ]


def test_rollback_creates_a_new_active_version_with_the_old_content(api, builtin):
    original = PromptVersion.objects.get(template__role__role="pm", template__template_type="persona", version="1.0.0")
    save(api, "Second persona", variables=[{"name": "tone", "default": "dry"}], language="de")
    save(api, "Third persona", bump="minor")
    response = rollback(api, "1.0.0")
    assert response.status_code == 201
    body = response.json()
    assert (body["version"], body["rollback_of"], body["is_active"], body["note"]) == (
        "1.1.1",
        "1.0.0",
        True,
        "Rollback to 1.0.0",
    )
    assert (body["content"], body["variables"], body["language"]) == (original.content, original.variables, "en")
    assert history(api) == [
        ("1.1.1", True, "1.0.0"),
        ("1.1.0", False, None),
        ("1.0.1", False, None),
        ("1.0.0", False, None),
    ]
    change = ConfigChange.objects.filter(config_type="prompt").first()
    assert "persona.rollback" in change.changed_fields
    assert change.changes == {"persona.active_version": {"old": "1.1.0", "new": "1.1.1"}}


def test_a_rollback_can_pick_its_bump_and_restore_variables_and_language(api, builtin):
    save(api, "With a variable {{ tone }}", variables=[{"name": "tone", "default": "dry"}], language="de")
    save(api, "Plain again")
    body = rollback(api, "1.0.1", bump="major", note="bring back tone").json()
    assert (body["version"], body["note"]) == ("2.0.0", "bring back tone")
    assert (body["variables"], body["language"]) == (
        [{"name": "tone", "description": "", "required": False, "default": "dry"}],
        "de",
    )


def test_rolling_back_to_the_active_version_or_an_unknown_one_is_refused(api, builtin):
    save(api, "Second persona")
    same = rollback(api, "1.0.1")
    assert same.status_code == 400
    assert same.json()["errors"]["version"] == ["nothing to roll back: it is"]
    missing = rollback(api, "9.9.9")
    assert missing.status_code == 404
    assert missing.json()["errors"]["version"] == ["version '9.9.9' does not exist"]
    assert history(api) == [("1.0.1", True, None), ("1.0.0", False, None)]


def test_a_rollback_by_a_stale_page_is_a_conflict(api, builtin):
    save(api, "Second persona")
    save(api, "Third persona")
    response = rollback(api, "1.0.0", base_version="1.0.1")
    assert response.status_code == 409
    assert len(history(api)) == 3


def test_diff_marks_changed_words_inside_changed_lines():
    diff = diff_texts("Be concise and concrete.\nSame line\n", "Be brief and concrete.\nSame line\nNew line\n")
    assert (diff.added, diff.removed) == (2, 1)
    first = diff.rows[0]
    assert first.kind == "replace"
    assert [(s.text, s.changed) for s in first.left] == [("Be ", False), ("concise", True), (" and concrete.", False)]
    assert [(s.text, s.changed) for s in first.right] == [("Be ", False), ("brief", True), (" and concrete.", False)]
    assert [r.kind for r in diff.rows] == ["replace", "equal", "insert"]
    assert "-Be concise and concrete.\n+Be brief and concrete." in diff.unified


def test_diff_html_escapes_everything():
    diff = diff_texts("<b>old</b> & 'x'", '<script>alert("new")</script>')
    html = diff.html()
    assert "<script>" not in html
    assert "<b>" not in html
    text = html
    for tag in ("<ins>", "</ins>", "<del>", "</del>"):
        text = text.replace(tag, "")
    assert "&lt;script&gt;alert(&quot;new&quot;)&lt;/script&gt;" in text
    assert "&lt;b&gt;old&lt;/b&gt; &amp; &#x27;x&#x27;" in text


def test_identical_texts_have_no_changes():
    diff = diff_texts("same\n", "same\n")
    assert diff.identical
    assert diff.unified == ""
    assert "same content" in diff.html()


def test_diff_api_gives_unified_text_rows_and_html(api, builtin):
    save(api, "Be brief.\n<i>Always</i> measure.", language="fr")
    response = api.get("/api/v1/prompts/pm/persona/diff?from=1.0.0&to=1.0.1")
    assert response.status_code == 200
    body = response.json()
    assert (body["from"], body["to"], body["identical"]) == ("1.0.0", "1.0.1", False)
    assert body["unified"].startswith("--- pm/persona 1.0.0\n+++ pm/persona 1.0.1")
    assert "+<i>Always</i> measure." in body["unified"]
    assert body["rows"][-1]["right"][-1]["text"].endswith("measure.")
    assert "&lt;i&gt;Always&lt;/i&gt;" in body["html"]
    assert "<ins>" in body["html"]
    assert body["language"] == {"from": "en", "to": "fr", "changed": True}


def test_diff_api_names_a_missing_or_unknown_version(api, builtin):
    missing = api.get("/api/v1/prompts/pm/persona/diff?from=1.0.0")
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"to": ["this query parameter is required"]}
    unknown = api.get("/api/v1/prompts/pm/persona/diff?from=1.0.0&to=3.0.0")
    assert unknown.status_code == 404
    assert unknown.json()["errors"] == {"to": ["version '3.0.0' does not exist"]}

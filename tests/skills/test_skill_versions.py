"""A skill's version never goes backwards, and one version names one content (issue 31):
re-uploading an older version, or the stored version with other content, is a 409 naming
both versions unless staff force it with ``allow_downgrade``; a forced step is in the audit
trail with who forced it and both versions. Through the API and the upload page."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from capabilities.models import Skill
from tests.skills.support import skill_yaml, upload

CHANGES = "/api/v1/config/changes?config_type=skill"


def force(api, text: str):
    return api.post("/api/v1/skills?allow_downgrade=true", text.encode(), content_type="application/yaml")


def test_the_stored_version_with_other_content_is_refused_until_the_version_is_bumped(api, builtin):
    assert upload(api, skill_yaml("same", "ping", version="1.2.0")).status_code == 201
    other = upload(api, skill_yaml("same", "ping", "pong", version="1.2.0"))
    assert other.status_code == 409, other.content
    body = other.json()
    assert "bump the version" in body["detail"]
    assert body["errors"]["skill.version"] == ["1.2.0 is already stored with other content: bump the version"]
    assert (body["current_version"], body["uploaded_version"]) == ("1.2.0", "1.2.0")
    assert "pong" not in Skill.objects.get(skill_id="same").source
    assert upload(api, skill_yaml("same", "ping", version="1.2.0")).status_code == 200  # the same content again
    assert upload(api, skill_yaml("same", "ping", "pong", version="1.2.1")).status_code == 200


def test_a_forced_downgrade_is_for_staff_and_is_audited_with_who_and_both_versions(api, builtin, viewer_user):
    assert upload(api, skill_yaml("versioned", "ping", version="2.0.0")).status_code == 201
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    assert force(viewer, skill_yaml("versioned", "ping", version="1.0.0")).status_code == 403
    assert force(api, skill_yaml("versioned", "ping", version="1.0.0")).status_code == 200
    newest = api.get(CHANGES).json()["results"][0]
    assert newest["actor"] == "operator"
    assert newest["changes"]["version"] == {"old": "2.0.0", "new": "1.0.0"}
    assert newest["changes"]["forced"] == "downgrade"
    assert "forced with allow_downgrade" in newest["note"] and "2.0.0" in newest["note"]
    assert force(api, skill_yaml("versioned", "ping", "pong", version="1.0.0")).status_code == 200
    replaced = api.get(CHANGES).json()["results"][0]
    assert (replaced["changes"]["forced"], replaced["changes"]["version"]) == (
        "replace",
        {"old": "1.0.0", "new": "1.0.0"},
    )


@pytest.mark.parametrize(
    ("language", "older", "same"),
    [
        ("en", "this upload is the older 1.0.0", "1.5.0 is already stored with other content. Bump the version"),
        ("zh-hans", "本次上传的是较旧的 1.0.0", "版本 1.5.0 已以不同的内容存储。请提升版本号"),
    ],
)
def test_the_upload_page_names_both_versions_in_the_page_language(page_client, builtin, language, older, same):
    page_client.cookies["django_language"] = language
    assert (
        page_client.post("/skills/_upload/", {"yaml": skill_yaml("paged", "ping", version="1.5.0")}).status_code == 302
    )
    refused = page_client.post("/skills/_upload/", {"yaml": skill_yaml("paged", "ping", version="1.0.0")})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert older in html and "1.5.0" in html
    refused = page_client.post("/skills/_upload/", {"yaml": skill_yaml("paged", "ping", "pong", version="1.5.0")})
    assert refused.status_code == 400
    assert same in refused.content.decode()
    forced = {"yaml": skill_yaml("paged", "ping", version="1.0.0"), "allow_downgrade": "true"}
    assert page_client.post("/skills/_upload/", forced).status_code == 302
    assert Skill.objects.get(skill_id="paged").version == "1.0.0"

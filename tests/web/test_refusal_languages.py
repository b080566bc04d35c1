"""Issue 32 "every word in the page's language": a refusal the services raise (runs.tasks,
runs.confirmations, runs.operator_inputs, runs.commands, runs.open_points, knowledge.sources,
team.revert, capabilities roles, matrices and skills) reads in the request's language, on a page
and in the API, and stays English for an English request."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone, translation

from monitoring.models import Task, ToolConfirmation
from runs.confirmations import ConfirmationError, decide_as
from teamclaw.errors import DomainError
from teamclaw.labels import worded

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


@pytest.fixture
def tasks(staff_user):
    """An ended task (cancel refused) and a running one (fork refused)."""
    common = {"workflow": "requirement_review", "created_by": staff_user}
    Task.objects.create(id="t-done", title="完成", status="completed", **common)
    Task.objects.create(id="t-live", title="运行", status="running", **common)


def test_a_refused_cancel_reads_in_chinese_on_the_page(page_client, tasks):
    response = page_client.post("/tasks/t-done/cancel", {"reason": ""}, follow=True, **ZH)
    html = response.content.decode()
    assert "任务 t-done 已经结束（已完成）" in html
    assert "has already ended" not in html


@pytest.mark.parametrize(
    ("path", "body", "chinese", "english"),
    [
        (
            "/api/v1/tasks/t-done/cancel",
            {},
            "任务 t-done 已经结束（已完成）",
            "task t-done has already ended (completed)",
        ),
        (
            "/api/v1/tasks/t-live/fork",
            {"from_step": 0},
            "任务 t-live 仍处于“运行中”状态；请在它结束后再分叉",
            "task t-live is still running; fork it once it has ended",
        ),
        ("/api/v1/tasks/t-nope/cancel", {}, "没有任务 t-nope", "there is no task t-nope"),
    ],
)
def test_a_task_refusal_from_the_api_reads_in_the_request_language(api, tasks, path, body, chinese, english):
    zh = api.post(path, body, format="json", **ZH)
    en = api.post(path, body, format="json", **EN)
    assert zh.status_code == en.status_code and zh.status_code in (404, 409)
    assert (zh.json()["detail"], en.json()["detail"]) == (chinese, english)


def test_a_decided_confirmation_is_refused_in_chinese(api, tasks):
    ToolConfirmation.objects.create(
        id="c-1",
        context_id="ctx",
        instance_id="i",
        role="pm",
        task_id="t-live",
        tool="write_file",
        status="approved",
        created_at=timezone.now(),
        expires_at=timezone.now() + timedelta(hours=1),
    )
    response = api.post("/api/v1/confirmations/c-1", {"approve": True}, format="json", **ZH)
    assert response.status_code == 409
    assert response.json()["detail"] == "确认请求 c-1 已经是“已批准”状态"


def test_a_refusal_is_worded_when_it_is_read_not_when_it_is_raised(db):
    """Raised under English (a worker, a management command), read under Chinese (the page
    that shows it): the reader's language wins; ``str(exc)`` and ``message`` agree."""
    with translation.override("en"), pytest.raises(ConfirmationError) as raised:
        decide_as("c-missing", True, "operator")
    error: DomainError = raised.value
    assert error.message == "confirmation c-missing does not exist"
    with translation.override("zh-hans"):
        assert error.message == str(error) == "确认请求 c-missing 不存在"
        assert worded("%(a)s-%(b)s", a=1, b="x") == "1-x"


# knowledge.sources and team.revert (issue 32): the same mechanism beyond runs/.


def test_a_refused_knowledge_upload_reads_in_the_request_language_in_the_api(api, db):
    from django.core.files.uploadedfile import SimpleUploadedFile

    def post(language):
        upload = SimpleUploadedFile("a.md", b"# A\n\ntext", content_type="text/markdown")
        return api.post("/api/v1/knowledge/sources", {"file": upload, "role": "ghost"}, format="multipart", **language)

    zh, en = post(ZH), post(EN)
    assert zh.status_code == en.status_code == 400
    assert zh.json()["errors"] == {"role": ["没有角色“ghost”"]}
    assert zh.json()["detail"] == "role: 没有角色“ghost”"
    assert en.json()["errors"] == {"role": ["there is no role 'ghost'"]}


def test_a_refused_knowledge_upload_reads_in_chinese_on_the_page(page_client, db):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.knowledge.helpers import librarian

    librarian()
    binary = SimpleUploadedFile("a.md", b"# A\x00", content_type="text/markdown")
    response = page_client.post("/knowledge/upload", {"file": binary, "owner": "role:librarian"}, **ZH)
    html = response.content.decode()
    assert response.status_code == 400
    assert "是二进制文件（含有 NUL 字节）" in html and "is a binary file" not in html


@pytest.mark.parametrize(
    ("language", "words"), [(ZH, "没有配置更改 99999"), (EN, "there is no configuration change 99999")]
)
def test_an_unknown_change_to_revert_reads_in_the_request_language(api, page_client, language, words):
    from django.utils.html import escape

    refused = api.post("/api/v1/config/changes/99999/revert", {"version": 1}, format="json", **language)
    assert (refused.status_code, refused.json()["detail"]) == (404, words)
    page = page_client.get("/config/changes/99999/revert/", **language)
    assert page.status_code == 404 and escape(words).lower() in page.content.decode().lower()


# capabilities (roles, skills): refused in the request's language, field names unchanged.


@pytest.mark.parametrize(
    ("language", "words"),
    [(ZH, "内置角色可以停用，但不能删除"), (EN, "built-in roles can be disabled but not deleted")],
)
def test_deleting_a_built_in_role_is_refused_in_the_request_language(api, page_client, builtin, language, words):
    version = api.get("/api/v1/roles/pm").json()["version"]
    refused = api.delete(f"/api/v1/roles/pm?version={version}", **language)
    assert refused.status_code == 400
    assert refused.json()["errors"] == {"role": [words]} and refused.json()["detail"] == f"role: {words}"
    page = page_client.post("/roles/pm/delete/", {"version": version}, follow=True, **language)
    assert f"role: {words}" in page.content.decode()


@pytest.mark.parametrize(
    ("language", "api_words", "words"),
    [(ZH, "没有技能“ghost”", "没有技能 'ghost'"), (EN, "there is no skill 'ghost'", "there is no skill 'ghost'")],
)
def test_an_unknown_skill_is_refused_in_the_request_language(api, language, api_words, words):
    from capabilities.lifecycle import unknown_skill

    assert api.get("/api/v1/skills/ghost", **language).json()["detail"] == api_words
    with translation.override("zh-hans" if language is ZH else "en"):
        refusal = unknown_skill("ghost")
        assert refusal.message == words and list(refusal.errors) == ["skillId"]


@pytest.mark.parametrize(("language", "words"), [(ZH, "版本 1.0.0 已经启用"), (EN, "version 1.0.0 is already active")])
def test_activating_the_active_prompt_is_refused_in_the_request_language(api, page_client, builtin, language, words):
    refused = api.post("/api/v1/prompts/pm/persona/activate", {"version": "1.0.0"}, format="json", **language)
    assert refused.status_code == 409
    assert refused.json()["errors"] == {"version": [words]} and refused.json()["detail"] == f"version: {words}"
    page = page_client.post("/prompts/pm/persona/activate/1.0.0/", {}, follow=True, **language)
    assert words in page.content.decode()

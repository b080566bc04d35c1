"""MCP prompts and resources (issue 29; ``interop.mcp_content``) through the official ``mcp``
client against a real daphne process: the token's role's prompt rendered as an agent of the
role gets it, a task's artifacts as resources following what the token's issuer may see, and
the protocol's errors for what is not there or not theirs."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from mcp.shared.exceptions import MCPError

from interop import mcp_content, role_tokens
from monitoring.models import Artifact, Task
from team.prompt_preview import preview_role
from tests.interop.test_mcp_server import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)


def task_with_artifact(task_id: str, user: Any, name: str, content: str) -> Artifact:
    task = Task.objects.create(id=task_id, status="completed", title=task_id, created_by=user)
    return Artifact.objects.create(
        task=task, name=name, content=content, content_type="text/markdown", created_at=timezone.now()
    )


def test_prompts_are_the_roles_own_rendered_and_other_names_are_refused(server, staff_user):
    secret = role_tokens.issue("architect", "prompts", staff_user).secret
    # What the prompt page's preview shows for the role (rendered by the runtime's renderer).
    expected = preview_role("architect", task_description="Design the refund service").final

    async def scenario() -> None:
        async with mcp_session(server, secret) as session:
            listed = await session.list_prompts()
            assert [p.name for p in listed.prompts] == ["architect"]
            got = await session.get_prompt("architect", {"task_description": "Design the refund service"})
            [message] = got.messages
            assert message.content.text == expected
            assert "Design the refund service" in message.content.text
            for name, arguments in [("pm", {}), ("architect", {"audience": "x"})]:
                with pytest.raises(MCPError) as refused:
                    await session.get_prompt(name, arguments)
                assert refused.value.error.code == -32602

    asyncio.run(scenario())


def test_artifacts_are_resources_only_for_the_tasks_the_issuer_may_see(server, staff_user, viewer_user):
    mine = task_with_artifact("t-viewer", viewer_user, "requirement_final.md", "# 最终需求\n\n- FR-001")
    theirs = task_with_artifact("t-other", staff_user, "review_dev.json", '{"secret": true}')
    # A token issued by a user who can see only their own tasks (a staff user since demoted).
    secret = role_tokens.issue("pm", "resources", viewer_user).secret

    async def scenario() -> None:
        async with mcp_session(server, secret) as session:
            listed = await session.list_resources()
            uris = [str(r.uri) for r in listed.resources]
            assert uris == [f"teamclaw://tasks/{mine.task_id}/artifacts/requirement_final.md"]
            read = await session.read_resource(uris[0])
            assert read.contents[0].text == "# 最终需求\n\n- FR-001"
            assert read.contents[0].mime_type == "text/markdown"
            for uri in [
                f"teamclaw://tasks/{theirs.task_id}/artifacts/review_dev.json",
                "teamclaw://tasks/t-viewer/artifacts/none.md",
                "file:///etc/passwd",
            ]:
                with pytest.raises(MCPError) as refused:
                    await session.read_resource(uri)
                assert refused.value.error.code == -32002
            templates = await session.list_resource_templates()
            assert [t.uri_template for t in templates.resource_templates] == [
                "teamclaw://tasks/{task_id}/artifacts/{name}"
            ]

    asyncio.run(scenario())


def test_resource_pages_hold_fifty_and_a_cursor_not_given_is_refused(server, staff_user):
    for n in range(55):
        task_with_artifact(f"t-{n:02d}", staff_user, "a.md", str(n))
    secret = role_tokens.issue("pm", "pages", staff_user).secret

    async def scenario() -> None:
        async with mcp_session(server, secret) as session:
            first = await session.list_resources()
            assert len(first.resources) == 50 and first.next_cursor
            second = await session.list_resources(params=types.PaginatedRequestParams(cursor=first.next_cursor))
            assert len(second.resources) == 5 and second.next_cursor is None
            assert {str(r.uri) for r in first.resources}.isdisjoint(str(r.uri) for r in second.resources)
            with pytest.raises(MCPError) as refused:
                await session.list_resources(params=types.PaginatedRequestParams(cursor="-1"))
            assert refused.value.error.code == -32602

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "uri", ["teamclaw://tasks/t-viewer/artifacts/a%00.md", "teamclaw://tasks/t-viewer/artifacts/%00"]
)
def test_a_resource_name_with_nul_is_not_found_without_asking_the_database(staff_user, uri):
    """PostgreSQL cannot compare text with NUL: asking it raised a DataError (checked there) in
    place of the one answer, -32002."""
    token = role_tokens.issue("pm", "nul", staff_user).row
    with CaptureQueriesContext(connection) as queries, pytest.raises(MCPError) as refused:
        mcp_content.read_resource(token.pk, uri)
    assert refused.value.error.code == -32002
    assert not any("artifact" in query["sql"] for query in queries.captured_queries)

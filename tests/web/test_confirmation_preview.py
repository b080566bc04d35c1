"""A file_write confirmation shows its content as text and a diff against the current file
(issue 17: the card showed the content JSON-escaped)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from capabilities.snapshot import project_directory
from monitoring.models import Task, ToolConfirmation

CONTENT = '# Final\n\nUse "quotes" & <script>alert(1)</script>\n第二行\n'


def waiting_write(path: str, content: str = CONTENT) -> Task:
    task = Task.objects.create(id=f"t-{abs(hash(path)) % 10**8}", status="running", title="copy")
    now = timezone.now()
    ToolConfirmation.objects.create(
        id=f"cf-{task.id}",
        context_id="c1",
        instance_id="main-1",
        role="main",
        task_id=task.id,
        tool="file_write",
        args={"path": path, "content": content},
        created_at=now,
        expires_at=now + timedelta(minutes=10),
    )
    return task


def card(page_client, task: Task) -> str:
    html = page_client.get(f"/tasks/{task.id}/").content.decode()
    return html.split(f'id="confirmation-cf-{task.id}"')[1].split("</li>")[0]


def test_a_new_file_s_content_is_shown_as_escaped_preformatted_text(page_client, builtin):
    assert str(project_directory(None)).startswith(str(settings.TEAMCLAW["PROJECTS_ROOT"]))
    shown = card(page_client, waiting_write("reviews/new-file.md"))
    assert "new file" in shown
    content = shown.split('<pre class="content">')[1].split("</pre>")[0]
    assert content == "# Final\n\nUse &quot;quotes&quot; &amp; &lt;script&gt;alert(1)&lt;/script&gt;\n第二行\n"
    assert "\\n" not in shown and "\\u" not in shown  # not JSON-escaped
    assert 'class="diff"' not in shown


def test_an_existing_file_gets_a_unified_diff_against_what_it_holds_now(page_client, builtin):
    target = project_directory(None) / "reviews" / "old-file.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# Final\n\nUse quotes\n第二行\n", encoding="utf-8")
    shown = card(page_client, waiting_write("reviews/old-file.md"))
    assert "replaces the existing file" in shown
    diff = shown.split('<pre class="diff">')[1].split("</pre>")[0]
    assert '<span class="d-file">--- reviews/old-file.md (now)</span>' in diff
    assert '<span class="d-del">-Use quotes</span>' in diff
    assert '<span class="d-add">+Use &quot;quotes&quot; &amp; &lt;script&gt;alert(1)&lt;/script&gt;</span>' in diff
    assert '<span class="d-hunk">@@' in diff
    assert "第二行" not in diff.split("@@")[0]  # unchanged lines are context, not changes


def test_a_path_the_tool_would_refuse_is_never_read(page_client, builtin):
    shown = card(page_client, waiting_write("../../etc/passwd"))
    assert "the tool would refuse this path" in shown
    assert "root:" not in shown


def test_an_approved_write_keeps_showing_what_was_approved(api, runtime_host):
    """Issue 30: after the approval the file exists with that content; the card must still
    say what the operator approved (a new file), not "replaces the existing file" or "same
    content"."""
    from tests.documents import BOOKSTORE
    from tests.helpers import wait_for_task
    from tests.live_helpers import wait_for_confirmation
    from tests.runs.test_fork_policy import saved_copies, set_main_file_write

    set_main_file_write(api, "confirm")
    task_id = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json"
    ).json()["task_id"]
    confirmation = wait_for_confirmation(runtime_host, task_id)
    runtime_host.recorder.flush()
    asked = ToolConfirmation.objects.get(pk=confirmation.id).preview
    assert asked["exists"] is False and asked["path"].endswith("requirement_final.md")
    assert api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json").status_code == 200
    assert wait_for_task(runtime_host, task_id).status == "completed"
    assert len(saved_copies(task_id)) == 1  # the file exists now
    from django.template.loader import render_to_string
    from django.utils import translation

    from monitoring.live_items import confirmation_item

    row = ToolConfirmation.objects.get(pk=confirmation.id)
    assert row.status == "approved"
    pushed = {  # the event a live socket renders the decided card from
        "id": row.id,
        "context_id": row.context_id,
        "instance_id": row.instance_id,
        "role": row.role,
        "task_id": row.task_id,
        "project_id": row.project_id,
        "kind": "tool",
        "tool": row.tool,
        "args": row.args,
        "status": "approved",
        "decided_by": "operator",
    }
    with translation.override("en"):
        for source in (row, pushed):
            shown = render_to_string("monitoring/_confirmation.html", {"cf": confirmation_item(source)})
            assert "new file" in shown
            assert "replaces the existing file" not in shown
            assert "The content is the same as the current file." not in shown

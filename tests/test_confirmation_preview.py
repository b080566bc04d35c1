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

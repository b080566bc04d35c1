"""Issue 30 point 5: the prompt page lists the runs of each prompt version, read from what each
context recorded having rendered (``input_context.prompt_versions``), for the user who may see
them."""

from __future__ import annotations

import re

from django.test import Client

from monitoring.models import ExecutionContext
from monitoring.prompt_runs import version_runs
from prompts.models import PromptVersion
from tests.documents import CLINIC
from tests.helpers import wait_for_task


def test_each_version_lists_the_contexts_that_rendered_it(api, staff_user, viewer_user, transactional_db, settings):
    from tests.executors.test_review_on_a_model import ReviewBrain
    from tests.model_server import host_on_model

    with host_on_model(settings, ReviewBrain(), MODEL_STREAM=False) as model:
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
        )
        assert response.status_code == 201, response.content
        task = wait_for_task(model.host, response.json()["task_id"])
    assert task.status == "completed", task.error
    (context,) = ExecutionContext.objects.filter(task=task, role="ai_expert")
    (template_type, layers), *_ = context.input_context["prompt_versions"].items()
    active = PromptVersion.objects.get(
        template__role__role="ai_expert", template__template_type=template_type, template__project=None, is_active=True
    )
    assert layers["global"] == active.version
    older = PromptVersion.objects.create(template=active.template, version="0.0.1", content="older", variables=[])

    runs = version_runs("ai_expert", template_type, None, [active.version, older.version], user=staff_user)
    assert runs[active.version]["count"] == 1
    assert [r["context_id"] for r in runs[active.version]["runs"]] == [context.id]
    assert runs[older.version] == {"count": 0, "runs": []}
    assert (
        version_runs("ai_expert", template_type, None, [active.version], user=viewer_user)[active.version]["count"] == 0
    )  # a task the viewer may not see lists under no version for them

    client = Client()
    client.force_login(staff_user)
    html = client.get(f"/prompts/ai_expert/{template_type}/").content.decode()
    row = re.search(rf'<tr data-version="{re.escape(active.version)}">.*?</tr>', html, re.DOTALL).group(0)
    assert 'data-runs="1"' in row and f'data-run-context="{context.id}"' in row
    assert f"/tasks/{task.id}/trace/?node={context.id}" in row
    older_row = re.search(r'<tr data-version="0\.0\.1">.*?</tr>', html, re.DOTALL).group(0)
    assert 'data-runs="0"' in older_row
    chinese = client.get(f"/prompts/ai_expert/{template_type}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "1 次运行" in chinese

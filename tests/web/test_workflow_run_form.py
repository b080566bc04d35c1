"""A workflow's run form (``web.pages.workflows.WorkflowRunForm``): input that is not JSON, or
not an object, shows the workflow page again with a 400, the reason next to the field in the
page's language and the input as typed; no task is started."""

from __future__ import annotations

import pytest

from capabilities.skill_models import Workflow
from monitoring.models import Task
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

BAD_INPUTS = [
    # (case, typed input, reason in en, reason in zh)
    ("not JSON", "[1", "The input is not JSON", "输入不是 JSON"),
    ("not an object", "[1, 2]", "must be a JSON object", "必须是 JSON 对象"),
]


def one_step_workflow() -> Workflow:
    definition = {"id": "flow", "name": "Flow", "steps": [{"id": "only", "capability": "cap://a/b", "input": {}}]}
    return Workflow.objects.create(workflow_id="flow", name="Flow", source="orchestration: {}", definition=definition)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "typed", "en", "zh"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_bad_input_is_refused_next_to_the_field(page_client, builtin, language, case, typed, en, zh):
    one_step_workflow()
    response = page_client.post("/workflows/flow/", {"input": typed}, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, "input", en if language == "en" else zh)
    assert not Task.objects.exists()

"""How A2A maps onto the product, in process (the protocol itself runs in
``test_a2a_processes``): PRD states -> A2A states, what a message starts or answers, the
status texts of a finished task, which cards are skills, and which paths go to the A2A app."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

import pytest
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import CancelTaskRequest, Message, Part, Role, TaskState
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from django.db.models import F
from django.utils import timezone
from google.protobuf.struct_pb2 import Value

from capabilities.models import CapabilityCard, ConfigState, Project
from interop import a2a_tasks
from interop.a2a import RoleTokenUser, build_handler
from interop.a2a_card import SKILL_SCHEMAS_EXTENSION, agent_card, card_document
from interop.a2a_tasks import A2A_STATES, Caller
from interop.models import A2ATask
from interop.mounts import PathMounts
from monitoring.models import Artifact, ExecutionContext, Task, ToolConfirmation
from teamclaw.runtime.messages import new_id

pytestmark = pytest.mark.django_db

DOCUMENT = "# Order export\n\nShop admins export the order list as CSV.\n"


def message(text: str = "", data: Any = None, **extra: Any) -> Message:
    parts = [Part(text=text)] if text else []
    if data is not None:
        value = Value()
        value.struct_value.update(data)
        parts.append(Part(data=value))
    return Message(message_id=new_id(), role=Role.ROLE_USER, parts=parts, **extra)


def test_every_prd_state_has_its_a2a_state():
    assert set(A2A_STATES) == {status for status, _ in Task.STATUSES} | {"waiting_user"}
    assert A2A_STATES["waiting_user"] == TaskState.TASK_STATE_INPUT_REQUIRED
    assert A2A_STATES["running"] == TaskState.TASK_STATE_WORKING
    assert A2A_STATES["terminated"] == TaskState.TASK_STATE_CANCELED
    assert A2A_STATES["completed"] == TaskState.TASK_STATE_COMPLETED
    assert A2A_STATES["failed"] == TaskState.TASK_STATE_FAILED


@pytest.mark.parametrize(
    ("sent", "expected"),
    [
        (message("Add a CSV export of the order list"), {"description": "Add a CSV export of the order list"}),
        (message(DOCUMENT), {"input_markdown": DOCUMENT}),
        (message("two lines\nbut no heading"), {"description": "two lines\nbut no heading"}),
        (
            message(data={"description": "给订单列表增加导出功能", "decision_mode": "confirm"}),
            {"description": "给订单列表增加导出功能", "decision_mode": "confirm"},
        ),
        (
            message(DOCUMENT, data={"decision_mode": "confirm"}),
            {"input_markdown": DOCUMENT, "decision_mode": "confirm"},
        ),
    ],
)
def test_a_message_starts_an_interview_from_an_idea_or_a_review_of_a_document(builtin, sent, expected):
    assert a2a_tasks.start_arguments(sent) == {**expected, "project": None}


def test_a_data_part_may_name_a_project(builtin):
    Project.objects.create(slug="shop", name="Shop")
    arguments = a2a_tasks.start_arguments(message("An idea", data={"project": "shop"}))
    assert arguments["project"].slug == "shop"


@pytest.mark.parametrize(
    ("sent", "field"),
    [
        (message(data={"descripton": "typo"}), "descripton"),
        (message(data={"decision_mode": 2}), "decision_mode"),
        (message(data={"project": "nowhere", "description": "x"}), "project"),
        (message(""), "message.parts"),
        (Message(message_id="m", role=Role.ROLE_USER, parts=[Part(url="https://example.com/a.md")]), "message.parts.0"),
    ],
)
def test_a_message_that_cannot_start_a_task_is_refused_naming_the_field(builtin, sent, field):
    with pytest.raises(InvalidParamsError) as refused:
        a2a_tasks.start_arguments(sent)
    assert [e["field"] for e in refused.value.data["errors"]] == [field]


def test_only_a_role_the_invoke_matrix_lets_invoke_main_starts_tasks(builtin):
    a2a_tasks.may_start(Caller(token_id=1, role="main", name="x"))
    with pytest.raises(InvalidRequestError, match="may not invoke main"):
        a2a_tasks.may_start(Caller(token_id=1, role="coderA", name="x"))


def test_a_task_in_a_project_needs_the_token_issuer_to_be_able_to_use_it(builtin, staff_user, viewer_user):
    """Issue 31: a role token acts with the authority of the user who issued it; a token
    whose issuer may not use the project (not a member, or gone) starts no task in it, which
    would otherwise bring the project's knowledge into the task."""
    from interop.role_tokens import issue

    shop = Project.objects.create(slug="shop", name="Shop")
    by_staff = issue(role="main", name="staff's", created_by=staff_user)
    a2a_tasks.may_use_project(Caller.of(by_staff.row), shop)  # staff may use every project
    by_viewer = issue(role="main", name="viewer's", created_by=viewer_user)
    with pytest.raises(InvalidParamsError, match="may not use project 'shop'"):
        a2a_tasks.may_use_project(Caller.of(by_viewer.row), shop)
    shop.members.add(viewer_user)
    a2a_tasks.may_use_project(Caller.of(by_viewer.row), shop)
    staff_user.delete()  # an issuer that is gone
    with pytest.raises(InvalidParamsError):
        a2a_tasks.may_use_project(Caller.of(by_staff.row), shop)
    a2a_tasks.may_use_project(Caller.of(by_staff.row), None)  # no project: nothing to check


def make_task(status: str, description: str = "an idea", **fields: Any) -> Task:
    return Task.objects.create(
        id=new_id(), workflow="requirement_review", description=description, status=status, **fields
    )


def pending_input(task: Task, what: str, request: dict[str, Any]) -> ToolConfirmation:
    now = timezone.now()
    return ToolConfirmation.objects.create(
        id=new_id(),
        context_id="c",
        instance_id="i",
        role="main",
        task_id=task.id,
        tool=what,
        kind="input",
        args=request,
        created_at=now,
        expires_at=now + timedelta(minutes=10),
    )


def test_a_waiting_task_is_input_required_and_says_what_to_answer(builtin):
    task = make_task("running")
    pending_input(task, "interview", {"questions": [{"id": "q1", "text": "Who uses it?"}]})
    view = a2a_tasks.task_view(task)
    assert view.prd_state == "waiting_user" and view.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "q1: Who uses it?" in view.text and view.data["waiting_for"] == ["interview"]


def test_an_interview_round_tells_an_a2a_client_its_options_recommendation_and_coverage(builtin):
    """The clarify interview (issue 27 item 5) through A2A: the text lists each question's
    options with the recommended one starred and the coverage map; the data carries both."""
    task = make_task("running")
    question = {"id": "r1-data", "text": "What data is kept?", "recommended": "A",
                "options": [{"key": "A", "text": "Name only"}, {"key": "X", "text": "Not decided yet"}]}  # fmt: skip
    coverage = [{"category": "data", "label": "Data and privacy", "status": "missing", "answered": 0, "asked": 0}]
    pending_input(task, "interview", {"questions": [question], "coverage": coverage})
    view = a2a_tasks.task_view(task)
    assert "- r1-data: What data is kept? [A) Name only *; X) Not decided yet]" in view.text
    assert "Coverage: Data and privacy missing" in view.text
    (given,) = view.data["inputs"]
    assert given["request"]["coverage"] == coverage and given["request"]["questions"][0]["recommended"] == "A"


def test_a_context_waiting_without_a_pending_request_is_working_not_input_required(builtin):
    """Just after an answer is taken (the row answered, the context not yet recorded back), or
    while the question is on its way, A2A must not say input-required with nothing to answer:
    a client would stop its stream there and find no question."""
    task = make_task("running")
    now = timezone.now()
    ExecutionContext.objects.create(
        id="c-waiting",
        task=task,
        instance_id="main-1",
        role="main",
        status="waiting_user",
        created_at=now,
        updated_at=now,
    )
    answered = pending_input(task, "interview", {"questions": [{"id": "q1", "text": "Who uses it?"}]})
    ToolConfirmation.objects.filter(pk=answered.pk).update(status="answered")
    view = a2a_tasks.task_view(task)
    assert view.prd_state == "running" and view.state == TaskState.TASK_STATE_WORKING
    assert view.data == {} and not view.answerable


def test_a_tool_confirmation_is_input_required_but_not_answerable_through_a2a(builtin):
    task = make_task("running")
    row = pending_input(task, "file_write", {"path": "reviews/x.md"})
    ToolConfirmation.objects.filter(pk=row.pk).update(kind="tool")
    view = a2a_tasks.task_view(task)
    assert view.state == TaskState.TASK_STATE_INPUT_REQUIRED and not view.answerable
    assert "on the task page" in view.text


def test_a_rewritten_artifact_gets_a_new_mark(builtin):
    task = make_task("running")
    Artifact.objects.create(task=task, name="requirement.md", content="v1", created_at=timezone.now())
    before = a2a_tasks.artifact_marks(task.id)
    Artifact.objects.filter(task=task).update(content="v2 longer", created_at=timezone.now())
    assert a2a_tasks.artifact_marks(task.id)["requirement.md"] != before["requirement.md"]


@pytest.mark.parametrize(
    ("what", "request_", "text", "expected"),
    [
        (
            "interview",
            {"questions": [{"id": "q1", "text": "Who?"}]},
            "Shop admins",
            ("answers", {"answers": {"q1": "Shop admins"}}),
        ),
        ("next_action", {"choices": ["modify", "review", "end"]}, " Review ", ("next", {"action": "review"})),
    ],
)
def test_plain_text_answers_where_one_answer_is_obvious(builtin, what, request_, text, expected):
    row = pending_input(make_task("running"), what, request_)
    assert a2a_tasks._answer_part(row, message(text)) == expected


def test_plain_text_to_several_questions_is_refused_with_the_shape_to_send(builtin):
    row = pending_input(make_task("running"), "interview", {"questions": [{"id": "a"}, {"id": "b"}]})
    with pytest.raises(InvalidParamsError, match='"answers"'):
        a2a_tasks._answer_part(row, message("one text for two questions"))


@pytest.mark.parametrize(
    ("outcome", "said"),
    [
        ({"phase": "review", "clean": True}, "Completed: the quality check passed."),
        ({"phase": "review", "clean": False}, "Completed with findings"),
        ({"phase": "draft"}, "Completed at the draft"),
    ],
)
def test_a_finished_run_with_findings_is_never_shown_as_a_clean_success(builtin, outcome, said):
    task = make_task("completed")
    Artifact.objects.create(task=task, name="outcome.json", content=json.dumps(outcome), created_at=timezone.now())
    view = a2a_tasks.task_view(task)
    assert view.state == TaskState.TASK_STATE_COMPLETED and view.text.startswith(said)
    assert view.data["outcome"]["verdict"] in ("clean", "findings", "draft_only")
    assert list(view.marks) == ["outcome.json"] and not view.artifacts
    assert [a.name for a in a2a_tasks.task_view(task, with_artifacts=True).artifacts] == ["outcome.json"]


def test_cancelled_and_failed_tasks_say_why(builtin):
    cancelled = make_task("terminated", error={"code": "cancelled", "message": "cancelled by ana"})
    failed = make_task("failed", error={"code": "timeout", "message": "main timed out"})
    assert a2a_tasks.task_view(cancelled).text == "Cancelled: cancelled by ana"
    assert a2a_tasks.task_view(failed).text == "Failed: main timed out"
    assert a2a_tasks.task_view(failed).state == TaskState.TASK_STATE_FAILED


def test_a_chinese_task_is_answered_in_chinese(builtin):
    assert a2a_tasks.task_language(make_task("running", "给订单列表增加导出功能")) == "zh-hans"
    assert a2a_tasks.task_language(make_task("running", "Add a CSV export")) == "en"


def test_internal_and_disabled_cards_are_not_skills(builtin):
    CapabilityCard.objects.filter(capability_id="schema_query").update(capability_type="INTERNAL")
    CapabilityCard.objects.filter(capability_id="code_review").update(enabled=False)
    CapabilityCard.objects.filter(capability_id="api_design").update(capability_type="ENTRY")
    card = agent_card("http://testserver")
    skills = [s.id for s in card.skills]
    assert "schema_query" not in skills and "code_review" not in skills
    assert skills[:2] == ["task_orchestration", "api_design"]  # the entry skill, then ENTRY before EXPOSED
    extension = next(e for e in card.capabilities.extensions if e.uri == SKILL_SCHEMAS_EXTENSION)
    assert set(extension.params["skills"].keys()) == set(skills)


def test_the_served_card_is_rebuilt_when_the_config_version_moves_on(builtin):
    first = card_document("http://testserver")
    assert card_document("http://testserver") is first
    assert card_document("http://other:8000") is not first
    ConfigState.objects.update(version=F("version") + 1)
    assert card_document("http://testserver") is not first
    assert first["supportedInterfaces"][0]["url"] == "http://testserver/a2a"


def test_only_the_a2a_paths_go_to_the_a2a_app():
    django_app, a2a_app = object(), object()
    mounts = PathMounts(django_app, {"/.well-known/agent-card.json": a2a_app, "/a2a": a2a_app})
    assert mounts.app_for("/a2a") is a2a_app and mounts.app_for("/a2a/") is a2a_app
    assert mounts.app_for("/.well-known/agent-card.json") is a2a_app
    for path in ("/a2ab", "/api/v1/tasks", "/", "/.well-known/other"):
        assert mounts.app_for(path) is django_app


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_task_no_stream_follows_terminates_the_product_task(builtin):
    """The handler's other cancel path (the task is in no registry: another process follows
    it, or the server restarted): the product task still ends terminated, for its role only."""
    task = Task.objects.create(id=new_id(), workflow="requirement_review", description="an idea", status="queued")
    A2ATask.objects.create(task=task, role="main", context_id="ctx", document={})

    def as_role(role: str) -> ServerCallContext:
        return ServerCallContext(user=RoleTokenUser(Caller(token_id=0, role=role, name="t")))

    async def cancel(role: str) -> Any:
        try:
            return await build_handler().on_cancel_task(CancelTaskRequest(id=task.id), as_role(role))
        except A2AError as exc:
            return exc

    assert isinstance(asyncio.run(cancel("pm")), TaskNotFoundError)
    assert Task.objects.get(pk=task.pk).status == "queued"
    cancelled = asyncio.run(cancel("main"))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED and cancelled.context_id == "ctx"
    assert Task.objects.get(pk=task.pk).status == "terminated"
    assert isinstance(asyncio.run(cancel("main")), TaskNotCancelableError)


def test_a_mounted_app_refuses_a_host_outside_allowed_hosts(settings):
    """DNS rebinding: a page on evil.example whose name now points here sends Host and Origin
    of evil.example; the protocol endpoints refuse it as Django does for its pages."""
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    served: list[str] = []

    async def app(scope, receive, send):
        served.append(scope["path"])

    async def django_app(scope, receive, send):
        served.append("django")

    mounts = PathMounts(django_app, {"/mcp": app})
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    def scope(host: str) -> dict:
        return {"type": "http", "path": "/mcp", "method": "POST", "headers": [(b"host", host.encode())]}

    asyncio.run(mounts(scope("evil.example:8000"), receive, send))
    assert served == [] and sent[0]["status"] == 400
    asyncio.run(mounts(scope("127.0.0.1:8000"), receive, send))
    assert served == ["/mcp"]

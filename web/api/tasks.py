"""Tasks (US-02): start one (``requirement_review`` on a document, or a generic task), list
them, one task with its contexts and artifacts."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import Project
from monitoring.access import visible_tasks
from monitoring.models import Message, Task
from monitoring.outcome import final_revisions, open_points, task_outcome, task_phase
from monitoring.trace import task_trace
from runs.compare import compare_artifacts
from runs.open_points import MAX_ANSWER_CHARS, answer_open_point, revise_final_document
from runs.operator_inputs import give, task_inputs
from runs.tasks import DECISION_MODES, START_POINTS, cancel_task, fork_task, start_task
from runs.workers import worker_for
from teamclaw import api_fields
from teamclaw.api_query import StrictPagination, non_blank_text, query_parameters
from teamclaw.errors import InvalidField, NotFound
from teamclaw.json_types import json_type_name
from teamclaw.workflows import WORKFLOWS
from web.api.lookup import found


class DocumentField(api_fields.StrictCharField):
    """Markdown text whose checks (empty, size, binary) are runs.tasks.validate_document's,
    so the operator gets one clear reason instead of DRF's generic null-character message."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = []

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be a string of Markdown, not {json_type_name(data)}")
        return data


class TaskCreateSerializer(api_fields.StrictSerializer):
    workflow = api_fields.StrictChoiceField(choices=WORKFLOWS)
    input_markdown = DocumentField(required=False, allow_blank=True, trim_whitespace=False)
    task_description = api_fields.StrictCharField(required=False, allow_blank=True, max_length=2000)
    title = api_fields.StrictCharField(required=False, allow_blank=True, max_length=300)
    project = api_fields.StrictSlugField(required=False, allow_blank=True)
    prompt_enhancement = api_fields.StrictCharField(required=False, allow_blank=True, max_length=20_000)
    description = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=2000, help_text="requirement_review: the one-line idea"
    )
    decision_mode = api_fields.StrictChoiceField(choices=DECISION_MODES, required=False)
    start_at = api_fields.StrictChoiceField(choices=START_POINTS, required=False)
    project_type = api_fields.StrictCharField(required=False, allow_blank=True, max_length=40)

    def validate_project(self, value: str) -> Project | None:
        if not value:
            return None
        try:
            return Project.objects.get(slug=value)
        except Project.DoesNotExist:
            raise serializers.ValidationError(f"project '{value}' does not exist") from None


def task_document(task: Task, user: Any, *, full: bool = True) -> dict[str, object]:
    """A task in the API's shape: status, contexts (one per agent instance) and artifacts;
    its ``worker`` (``<hostname>-<pid>-<hex>``) only for staff, None for ``user`` otherwise
    (``runs.workers.worker_for``)."""
    body: dict[str, object] = {
        "task_id": task.id,
        "kind": task.kind,
        "workflow": task.workflow,
        "title": task.title,
        "status": task.status,
        "project": task.project_id,
        "executor": task.executor,
        "tokens_used": task.tokens_used,
        "token_budget": task.token_budget,
        "error": task.error,
        "created_at": task.created_at,
        "finished_at": task.finished_at,
        "attempt": task.attempt,
        "forked_from": {k: fork[k] for k in ("task_id", "from_step")}
        if (fork := (task.run_spec or {}).get("fork"))
        else None,
        "resumed_steps": task.resumed_steps,
        "worker": worker_for(user, task.owner),
        "outcome": task_outcome(task),
    }
    if task.workflow == "requirement_review":
        body["phase"] = task_phase(task)
    if full:
        body.update(task_inputs(task))
        body["steps"] = Message.objects.filter(task_id=task.id, type="invoke_response").count()
        body["contexts"] = [
            {
                "id": c.id,
                "instance_id": c.instance_id,
                "role": c.role,
                "status": c.status,
                "progress": c.progress,
                "current_step": c.current_step,
                "resource_usage": c.resource_usage,
            }
            for c in task.contexts.all()
        ]
        body["artifacts"] = [
            {"name": a.name, "content_type": a.content_type, "role": a.role, "content": a.content}
            for a in task.artifacts.all()
        ]
    return body


class TaskListView(APIView):
    """Start a task and list recent tasks. ``requirement_review`` (seed 002) with a
    ``description`` (a one-line idea: the interview, phase 1) or an ``input_markdown``
    (phase 6, or phase 5 with ``"start_at": "draft"``), ``decision_mode`` ``auto`` or
    ``confirm``; ``generic`` with a ``task_description``."""

    parser_classes = api_fields.JSON_BODY_ONLY

    @extend_schema(request=TaskCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = TaskCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        task = start_task(
            workflow=values["workflow"],
            input_markdown=values.get("input_markdown"),
            task_description=values.get("task_description", ""),
            title=values.get("title", ""),
            project=values.get("project"),
            user=request.user,
            prompt_enhancement=values.get("prompt_enhancement", ""),
            description=values.get("description", ""),
            start_at=values.get("start_at", ""),
            decision_mode=values.get("decision_mode", "auto"),
            project_type=values.get("project_type", ""),
        )
        return Response({"task_id": task.id, "status": task.status}, status=status.HTTP_201_CREATED)

    @extend_schema(operation_id="tasks_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("status", str, enum=[value for value, _ in Task.STATUSES]),
        OpenApiParameter("kind", str),
        paginated=True,
    )
    def get(self, request: Request) -> Response:
        queryset = visible_tasks(request.user).select_related("project")
        if status_filter := request.query_params.get("status"):
            queryset = queryset.filter(status=status_filter)
        if kind := request.query_params.get("kind"):
            queryset = queryset.filter(kind=kind)
        paginator = StrictPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([task_document(t, request.user, full=False) for t in page or []])


class TaskDetailView(APIView):
    """A task's status, its contexts and its artifacts (with content)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, task_id: str) -> Response:
        task = found(visible_tasks(request.user).prefetch_related("contexts", "artifacts"), "task", pk=task_id)
        return Response(task_document(task, request.user))


class TaskTraceView(APIView):
    """``GET /tasks/{task_id}/trace``: every call the task's agents made, as a tree
    (``monitoring.trace``): ``{task_id, status, nodes: [{id, kind, role, capability_id, round,
    started_at, latency_ms, tokens, status, prompt_versions, input, output, children, links}]}``,
    agents at the top, their invokes, hooks, model calls, tool uses and operator waits under
    them; 404 for a task the user may not see."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, task_id: str) -> Response:
        task = found(visible_tasks(request.user), "task", pk=task_id)
        return Response(task_trace(task))


class TaskCancelSerializer(api_fields.StrictSerializer):
    reason = api_fields.StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=300)


class TaskCancelView(APIView):
    """``POST /tasks/{task_id}/cancel {"reason"?}``: end a queued or running task as
    ``terminated`` (PRD §4.6), wherever it runs; 409 when it has already ended."""

    @extend_schema(request=TaskCancelSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, task_id: str) -> Response:
        data = TaskCancelSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        task = cancel_task(request.user, task_id, data.validated_data.get("reason", ""))
        return Response(task_document(task, request.user, full=False))


class TaskForkSerializer(api_fields.StrictSerializer):
    from_step = api_fields.PassThroughField(help_text="completed steps taken from the record (0..steps)")
    overrides = api_fields.PassThroughField(
        required=False,
        help_text='{"prompt_enhancement"?, "prompt_versions"?, "tool_modes"?, "invoke"?, "executors"?, '
        '"reconsider_rejected"?}: an override that widens the matrices needs the right to change them',
    )
    reason = api_fields.StrictCharField(
        required=False,
        allow_blank=True,
        max_length=2000,
        help_text="why the fork widens the saved configuration (required then; audited)",
    )


class TaskForkView(APIView):
    """``POST /tasks/{task_id}/fork {"from_step": N, "overrides"?, "reason"?}``: re-run an ended
    task as a new one that takes its first N completed steps from the record and runs live from
    there; ``from_step`` = its step count replays it without running anything.
    -> ``{task_id, status}``. An override that widens the matrices (a tool mode towards allow,
    an invoke cell to true, an executor or model) is 403 naming it unless the user may change
    that matrix (``runs.fork_policy``), and needs a ``reason`` (400 without); it is audited."""

    parser_classes = api_fields.JSON_BODY_ONLY

    @extend_schema(request=TaskForkSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, task_id: str) -> Response:
        data = TaskForkSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        task = fork_task(request.user, task_id, values.get("from_step"), values.get("overrides"), values.get("reason"))
        return Response({"task_id": task.id, "status": task.status}, status=status.HTTP_201_CREATED)


class TaskCompareView(APIView):
    """``GET /tasks/{task_id}/compare?with=<other>``: the two tasks' artifacts side by side."""

    @extend_schema(
        parameters=[OpenApiParameter("with", non_blank_text(), required=True, description="the other task's id")],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, task_id: str) -> Response:
        other_id = request.query_params.get("with")
        if not other_id:
            raise InvalidField("the task to compare with is required", "with")
        tasks = visible_tasks(request.user).prefetch_related("artifacts")
        left, right = tasks.filter(pk=task_id).first(), tasks.filter(pk=other_id).first()
        if left is None or right is None:
            missing = task_id if left is None else other_id
            raise NotFound(f"there is no task {missing[:80]}")
        return Response({"left": left.id, "right": right.id, "artifacts": compare_artifacts(left, right)})


class TaskInputSerializer(api_fields.ObjectBodySerializer):
    input_id = api_fields.StrictCharField(
        required=False, max_length=64, help_text="the request answered (`input_id` of a question); stale ones get 409"
    )


class TaskAnswersSerializer(TaskInputSerializer):
    answers = api_fields.PassThroughField(help_text='{"<question id>": "answer text"}; "" leaves one open')


class TaskDecisionsSerializer(TaskInputSerializer):
    decisions = api_fields.PassThroughField(help_text='{"<item id>": "accept" | "reject"}, some or all')


class TaskNextSerializer(TaskInputSerializer):
    action = api_fields.DocumentedField({"type": "string", "enum": ["modify", "review", "end"]}, required=True)
    markdown = api_fields.DocumentedField(
        {"type": "string"}, help_text="Only with modify: the edited document (400 naming markdown otherwise)."
    )


class TaskInputView(APIView):
    """Answer what a requirement_review task waits for (seed 002; PRD §4.6 ``waiting_user``),
    from any web process: ``POST /tasks/{id}/answers {"answers": {...}}`` (interview and
    project type questions), ``/decisions {"decisions": {...}}`` (confirm mode, §6.5; one by
    one or all at once), ``/next {"action", "markdown"?}`` (phase 5). -> ``{"status":
    "answered" | "pending", "input", "missing"}``; 409 when the task waits for something else,
    400 naming the field for an unknown id or a value outside the choices."""

    parser_classes = api_fields.JSON_BODY_ONLY

    section = "answers"
    serializer_class: type[api_fields.StrictSerializer] = TaskAnswersSerializer

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, task_id: str) -> Response:
        data = self.serializer_class(data=request.data)
        data.is_valid(raise_exception=True)
        part = dict(data.validated_data)
        input_id = part.pop("input_id", None)
        return Response(give(request.user, task_id, self.section, part, input_id=input_id))


@extend_schema_view(post=extend_schema(request=TaskAnswersSerializer, responses={200: OpenApiTypes.OBJECT}))
class TaskAnswersView(TaskInputView):
    section = "answers"
    serializer_class = TaskAnswersSerializer


@extend_schema_view(post=extend_schema(request=TaskDecisionsSerializer, responses={200: OpenApiTypes.OBJECT}))
class TaskDecisionsView(TaskInputView):
    section = "decisions"
    serializer_class = TaskDecisionsSerializer


@extend_schema_view(post=extend_schema(request=TaskNextSerializer, responses={200: OpenApiTypes.OBJECT}))
class TaskNextView(TaskInputView):
    section = "next"
    serializer_class = TaskNextSerializer


class OpenPointAnswerSerializer(api_fields.ObjectBodySerializer):
    point = api_fields.StrictCharField(max_length=64, help_text="an open point's `id` (`c-...` or `q-<n>`)")
    answer = api_fields.StrictCharField(
        max_length=MAX_ANSWER_CHARS, trim_whitespace=False, help_text="the operator's answer, plain text"
    )


class TaskOpenPointsView(APIView):
    """``GET /tasks/{id}/open_points``: what a completed requirement review left its operator
    to answer, ``{"open_points": [{id, question, line, source, answer, answered_by,
    answered_at, earlier, unclear}]}`` (``monitoring.outcome.open_points``; ``unclear``: what
    the engine still finds in a vague answer, the point kept open). ``POST {"point", "answer"}``
    records an answer (``runs.open_points.answer_open_point``; a new answer to the same point
    replaces the shown one and keeps the earlier) -> the point; 400 naming ``point`` or
    ``answer``, 403 for a user who may not act on the task, 409 before the review's outcome."""

    parser_classes = api_fields.JSON_BODY_ONLY

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, task_id: str) -> Response:
        task = found(visible_tasks(request.user), "task", pk=task_id)
        return Response({"open_points": open_points(task)})

    @extend_schema(request=OpenPointAnswerSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, task_id: str) -> Response:
        data = OpenPointAnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        body = data.validated_data
        return Response(answer_open_point(request.user, task_id, body["point"], body["answer"]))


class FinalRevisionSerializer(api_fields.StrictSerializer):
    """No fields: the revision takes the newest answers of the task's open points."""


def revision_document(task_id: str, revision: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    """A revision as the API gives it: ``final_revisions``' entry with where to read it."""
    out = {**revision, "created_at": revision["created_at"].isoformat() if revision["created_at"] else None}
    out["diff_url"] = f"/tasks/{task_id}/diff/?a=requirement_final.md&b={revision['name']}"
    out["download_url"] = f"/tasks/{task_id}/artifacts/{revision['name']}?download=1"
    if content is not None:
        out["content"] = content
    return out


class TaskRevisionsView(APIView):
    """``GET /tasks/{id}/revisions``: the versions of the final document an operator's answers
    produced, oldest first, ``{"revisions": [{version, name, report_name, based_on,
    created_at, resolved, still_unclear, unanswered, answers, diff_url, download_url}]}``.
    ``POST`` (an empty object) writes the newest answers into a new version
    ``requirement_final.r<N>.md`` (``runs.open_points.revise_final_document``; the original
    and earlier versions are kept) -> 201 with the revision and its ``content``, or 200 with
    the newest one when it already reads so; 403 for a user who may not act on the task,
    404 for one who may not see it, 409 before the outcome or while no point is answered."""

    parser_classes = api_fields.JSON_BODY_ONLY

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, task_id: str) -> Response:
        task = found(visible_tasks(request.user), "task", pk=task_id)
        return Response({"revisions": [revision_document(task.id, r) for r in final_revisions(task)]})

    @extend_schema(request=FinalRevisionSerializer, responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT})
    def post(self, request: Request, task_id: str) -> Response:
        FinalRevisionSerializer(data=request.data or {}).is_valid(raise_exception=True)
        revision, created = revise_final_document(request.user, task_id)
        task = found(visible_tasks(request.user), "task", pk=task_id)
        content = task.artifacts.filter(name=revision["name"]).values_list("content", flat=True).first()
        return Response(
            revision_document(task.id, revision, content),
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )

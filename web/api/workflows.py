"""Workflows (seed 003 YAML orchestration): list, save, one, delete, run."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import Project
from capabilities.published_schemas import load_schema
from capabilities.skill_documents import workflow_document
from capabilities.skill_models import Workflow
from capabilities.workflow_actions import delete_workflow, save_workflow
from capabilities.workflow_spec import END
from runs.workflow_runs import start_workflow_run
from teamclaw import api_fields
from teamclaw.api_docs import openapi_dialect
from teamclaw.api_errors import error_response
from web.api.skills import PARSERS, StaffForChanges, yaml_body


def workflow_or_404(workflow_id: str) -> Workflow:
    """The workflow, or a 404 whose detail names the id."""
    workflow = Workflow.objects.filter(workflow_id=workflow_id).first()
    if workflow is None:
        raise NotFound(f"there is no workflow '{workflow_id}'")
    return workflow


_TARGET = {"type": "object", "required": ["next"]}
_STEP_KINDS = {
    "oneOf": [
        {
            "title": "invoke step",
            "required": ["capability"],
            "properties": {"type": {"enum": ["invoke"]}},
            "not": {"anyOf": [{"required": [key]} for key in ("condition", "cases", "default")]},
        },
        {
            "title": "switch step",
            "required": ["type", "condition", "cases"],
            "properties": {
                "type": {"enum": ["switch"]},
                "cases": {"minProperties": 1, "not": {"required": ["default"], "maxProperties": 1}},
            },
            "not": {
                "anyOf": [
                    *({"required": [key]} for key in ("capability", "input", "output", "next")),
                    {"required": ["default"], "properties": {"cases": {"required": ["default"]}}},
                ]
            },
        },
    ]
}
"""What ``capabilities.workflow_spec`` asks of a step's fields beyond the published schema: an
invoke step names a capability and has no switch fields; a switch step has a condition and at
least one case besides ``default``, and nothing an invoke step has."""


def workflow_document_schema() -> dict[str, Any]:
    """The orchestration YAML as ``POST``/``PUT /workflows`` read it: the published schema
    (``GET /api/v1/workflows/schema``) with each step's kind (``_STEP_KINDS``). What no schema
    can say is checked at save and refused with 400 naming the path: the capability a step
    calls must exist (and not be INTERNAL), step ids are unique, every ``next`` names a step or
    ``end``, every step is reachable, the steps never loop, and a ``${step...}`` reference
    names a step that ran before."""
    schema: dict[str, Any] = openapi_dialect(load_schema("orchestration"))
    step = schema["properties"]["orchestration"]["properties"]["steps"]["items"]
    step["allOf"] = [_STEP_KINDS]
    step["properties"]["id"]["not"] = {"enum": ["userInput", "result", END]}
    for target in (step["properties"]["default"], step["properties"]["cases"]["additionalProperties"]):
        target["description"] = "next: a step id of this workflow, or 'end'."
    return schema


WORKFLOW_YAML = {"application/yaml": workflow_document_schema()}
"""The request body of ``POST /workflows`` and ``PUT /workflows/{id}``: a YAML document of
that shape (JSON ``{"yaml": text}`` and a multipart ``file`` are read too, for forms)."""


class WorkflowRunSerializer(api_fields.StrictSerializer):
    """``{input, project?}``: ``input`` becomes ``${userInput}`` (an object)."""

    input = serializers.JSONField(required=False, allow_null=True)
    project = api_fields.StrictSlugField(required=False, allow_blank=True)


class WorkflowListView(APIView):
    """``GET /workflows`` and ``POST /workflows`` (orchestration YAML, validated at save)."""

    permission_classes = [StaffForChanges]
    parser_classes = PARSERS

    @extend_schema(operation_id="workflows_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        rows = [workflow_document(w, full=False) for w in Workflow.objects.all()]
        return Response({"count": len(rows), "workflows": rows})

    @extend_schema(request=WORKFLOW_YAML, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        return _save(request, None)


class WorkflowDetailView(APIView):
    """``GET``, ``PUT`` (replace from YAML; the id cannot change) and ``DELETE`` one workflow."""

    permission_classes = [StaffForChanges]
    parser_classes = PARSERS

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, workflow_id: str) -> Response:
        return Response(workflow_document(workflow_or_404(workflow_id)))

    @extend_schema(request=WORKFLOW_YAML, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, workflow_id: str) -> Response:
        workflow_or_404(workflow_id)
        return _save(request, workflow_id)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, workflow_id: str) -> Response:
        delete_workflow(workflow_or_404(workflow_id), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _save(request: Request, replace: str | None) -> Response:
    raw = yaml_body(request)
    if not raw:
        return error_response("send the workflow YAML as application/yaml (or JSON {yaml})", {"document": ["empty"]})
    workflow = save_workflow(raw, actor=request.user, replace=replace)
    body = workflow_document(workflow)
    return Response(body, status=status.HTTP_201_CREATED if replace is None else status.HTTP_200_OK)


class WorkflowRunView(APIView):
    """``POST /workflows/{id}/run {input, project?}`` -> ``{task_id, status}``: a task on the
    runtime (main's ``workflow_orchestration``), shown with every other task."""

    @extend_schema(request=WorkflowRunSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, workflow_id: str) -> Response:
        workflow = workflow_or_404(workflow_id)
        data = WorkflowRunSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        project = None
        if slug := values.get("project"):
            project = Project.objects.filter(slug=slug).first()
            if project is None:
                return error_response(f"project '{slug}' does not exist", {"project": ["unknown project"]})
        task = start_workflow_run(workflow, values.get("input"), user=request.user, project=project)
        return Response({"task_id": task.id, "status": task.status}, status=status.HTTP_201_CREATED)

"""Projects and how much each overrides (US-06)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.models import Project
from team.projects import create_project, project_document, update_project
from teamclaw import api_fields
from web.api.governance import GovernanceView
from web.api.lookup import found


class ProjectCreateSerializer(api_fields.DocumentSerializer):
    """A new project: checked as a whole by ``capabilities.projects.check_fields``."""

    envelope = ("note",)
    slug = api_fields.PassThroughField(required=False)
    name = api_fields.PassThroughField(required=False)
    description = api_fields.PassThroughField(required=False)
    tech_stack = api_fields.PassThroughField(required=False)
    working_directory = api_fields.PassThroughField(required=False)
    members = api_fields.PassThroughField(required=False, help_text="usernames who may use the project")
    note = api_fields.ChangeNoteField()


class ProjectEditSerializer(api_fields.DocumentSerializer):
    """A project edit: any of its fields (not its slug)."""

    version = api_fields.DocumentVersionField(help_text="The version you loaded.")
    name = api_fields.PassThroughField(required=False)
    description = api_fields.PassThroughField(required=False)
    tech_stack = api_fields.PassThroughField(required=False)
    working_directory = api_fields.PassThroughField(required=False)
    members = api_fields.PassThroughField(
        required=False, help_text="usernames who may start tasks in it and read its knowledge (besides staff)"
    )
    note = api_fields.ChangeNoteField()


class ProjectListView(GovernanceView):
    """Projects (``GET``) and creating one (``POST {slug, name, description, tech_stack,
    working_directory, note}`` -> 201)."""

    config_actions = {"POST": "project_create"}

    @extend_schema(operation_id="projects_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        projects = [project_document(p) for p in Project.objects.all()]
        return Response({"count": len(projects), "projects": projects})

    @extend_schema(request=ProjectCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = api_fields.read_body(ProjectCreateSerializer, request.data)
        result = create_project(data["document"], note=data["note"], actor=request.user)
        return Response(result.document, status=status.HTTP_201_CREATED)


class ProjectDetailView(GovernanceView):
    """One project with its override counts; ``PATCH {version, name?, description?,
    tech_stack?, working_directory?, note?}``."""

    config_actions = {"PATCH": "project"}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return project_document(found(Project, "project", slug=self.kwargs["slug"]))

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(project_document(found(Project, "project", slug=slug)))

    @extend_schema(request=ProjectEditSerializer, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, slug: str) -> Response:
        project = found(Project, "project", slug=slug)
        data = api_fields.read_body(ProjectEditSerializer, request.data)
        result = update_project(
            project, version=data["version"], data=data["document"], note=data["note"], actor=request.user
        )
        return Response({**result.document, "changed": bool(result.change)})

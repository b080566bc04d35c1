"""Projects and how much each overrides (US-06)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.models import Project
from capabilities.projects import FIELDS, MAX_MEMBERS, SLUG
from team.projects import create_project, project_document, update_project
from teamclaw import api_fields, plain_text
from web.api.governance import GovernanceView
from web.api.lookup import found

_HIDDEN = plain_text.HIDDEN_CHARACTERS.pattern[1:-1]
_SEGMENT = f"(?:[^/{_HIDDEN}]*[^/.{_HIDDEN}][^/{_HIDDEN}]*|\\.{{3,}})"
WORKING_DIRECTORY_PATTERN = f"^(?:(?:/+\\.?)*/+{_SEGMENT}(?:/+(?:{_SEGMENT}|\\.)?)*)?$"
"""What ``capabilities.projects.working_directory_problem`` passes: blank, or an absolute
path with a name below the root and no ``..`` part."""


def _text(limit: int, pattern: str = plain_text.PLAIN_TEXT_PATTERN) -> dict[str, Any]:
    return {"type": "string", "maxLength": limit, "pattern": pattern}


PROJECT_TEXT: dict[str, dict[str, Any]] = {
    "name": {**_text(FIELDS["name"], plain_text.NON_BLANK_PLAIN_TEXT_PATTERN), "description": "Plain text, not blank."},
    "description": _text(FIELDS["description"]),
    "tech_stack": _text(FIELDS["tech_stack"]),
    "working_directory": {
        **_text(FIELDS["working_directory"], WORKING_DIRECTORY_PATTERN),
        "description": "Blank, or an absolute path below the root without '..' (e.g. /srv/projects/shop).",
    },
}
"""The schema of each project text field (``capabilities.projects.FIELDS`` limits, plain text)."""
MEMBERS: dict[str, Any] = {
    "type": "array",
    "maxItems": MAX_MEMBERS,
    "items": {"type": "string", "minLength": 1, "maxLength": 150},
}
"""The schema of ``members`` (``capabilities.projects.MAX_MEMBERS`` usernames)."""


def members_field() -> api_fields.DocumentedField:
    """The ``members`` field of a project body, new or edited."""
    return api_fields.DocumentedField(
        MEMBERS,
        help_text="Usernames of active users who may start tasks in the project and read its knowledge, "
        "besides staff (an unknown one is refused: 400 naming members).",
    )


class ProjectCreateSerializer(api_fields.DocumentSerializer):
    """A new project: checked as a whole by ``capabilities.projects.check_fields`` (every
    problem at once, each naming its field); the schema of each field says what it takes."""

    envelope = ("note",)
    slug = api_fields.DocumentedField(
        {"type": "string", "pattern": SLUG.pattern},
        documented_required=True,
        help_text="The new project's slug: 1-64 lowercase letters, digits, '-' or '_'. It must not be "
        "taken: a slug of an existing project is refused (400 naming slug).",
    )
    name = api_fields.DocumentedField(PROJECT_TEXT["name"], documented_required=True)
    description = api_fields.DocumentedField(PROJECT_TEXT["description"])
    tech_stack = api_fields.DocumentedField(PROJECT_TEXT["tech_stack"])
    working_directory = api_fields.DocumentedField(PROJECT_TEXT["working_directory"])
    members = members_field()
    note = api_fields.ChangeNoteField()


class ProjectEditSerializer(api_fields.DocumentSerializer):
    """A project edit: any of its fields (not its slug)."""

    version = api_fields.DocumentVersionField(help_text="The version you loaded.")
    name = api_fields.DocumentedField(PROJECT_TEXT["name"])
    description = api_fields.DocumentedField(PROJECT_TEXT["description"])
    tech_stack = api_fields.DocumentedField(PROJECT_TEXT["tech_stack"])
    working_directory = api_fields.DocumentedField(PROJECT_TEXT["working_directory"])
    members = members_field()
    note = api_fields.ChangeNoteField()


class ProjectListView(GovernanceView):
    """Projects (``GET``) and creating one (``POST {slug, name, description, tech_stack,
    working_directory, members, note}`` -> 201)."""

    config_actions = {"POST": "project_create"}
    parser_classes = api_fields.JSON_BODY_ONLY

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
    tech_stack?, working_directory?, members?, note?}``."""

    config_actions = {"PATCH": "project"}
    parser_classes = api_fields.JSON_BODY_ONLY

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

"""Knowledge (seed 003 KnowledgeContext): a role's or a project's documents (upload as
multipart ``file``, list, delete; writes need staff) and searching them."""

from __future__ import annotations

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from knowledge.models import KnowledgeSource, LoadLevel
from knowledge.search import search
from knowledge.sources import MAX_SOURCE_BYTES, Upload, add_source, source_document
from teamclaw import api_fields
from teamclaw.api_parsers import SafeJSONParser
from teamclaw.errors import NotFound

MAX_K = 50


class SourceUploadSerializer(api_fields.StrictSerializer):
    """``file`` (md, txt or html, UTF-8, at most 1 MB) with ``role`` or ``project``, and
    ``load_level`` (basic: 20 chunks indexed, advanced: 100, expert: 500, full: all)."""

    file = serializers.FileField(required=False, help_text="The document (multipart).")
    role = api_fields.StrictCharField(required=False, allow_blank=True, max_length=40)
    project = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)
    load_level = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=20, help_text=f"One of {', '.join(LoadLevel.values)}."
    )
    name = api_fields.StrictCharField(required=False, allow_blank=True, max_length=200)


class SourceFilterSerializer(api_fields.StrictSerializer):
    role = api_fields.StrictCharField(required=False, allow_blank=True, max_length=40)
    project = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)


class SearchSerializer(SourceFilterSerializer):
    q = api_fields.StrictCharField(max_length=2000, error_messages={"required": "the search text is required"})
    k = api_fields.StrictIntegerField(required=False, default=5, min_value=1, max_value=MAX_K)


SCOPE_PARAMS = [
    OpenApiParameter("role", str, description="Only the sources of this role."),
    OpenApiParameter("project", str, description="Only the sources of this project (slug)."),
]


class KnowledgeSourceListView(APIView):
    """A role's or a project's knowledge sources (``GET ?role=&project=``: either scope, or
    every source) and adding one (``POST`` multipart -> 201 with its chunk count)."""

    permission_classes = [CanChangeConfig]
    parser_classes = [MultiPartParser, FormParser, SafeJSONParser]

    @extend_schema(operation_id="knowledge_sources_list", parameters=SCOPE_PARAMS, responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        scope = api_fields.read_body(SourceFilterSerializer, request.query_params)
        sources = KnowledgeSource.objects.select_related("role", "project", "uploaded_by")
        if scope.get("role") or scope.get("project"):
            sources = sources.filter(
                (Q(role__role=scope["role"]) if scope.get("role") else Q(pk__in=[]))
                | (Q(project__slug=scope["project"]) if scope.get("project") else Q(pk__in=[]))
            )
        documents = [source_document(s) for s in sources]
        return Response({"count": len(documents), "sources": documents})

    @extend_schema(request={"multipart/form-data": SourceUploadSerializer}, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = api_fields.read_body(SourceUploadSerializer, request.data)
        upload = data.get("file")
        source = add_source(
            None
            if upload is None
            else Upload(upload.name or "", upload.content_type or "", upload.read(MAX_SOURCE_BYTES + 1)),
            role=data.get("role") or None,
            project=data.get("project") or None,
            load_level=data.get("load_level") or None,
            name=data.get("name") or None,
            user=request.user,
        )
        return Response(source_document(source), status=status.HTTP_201_CREATED)


class KnowledgeSourceDetailView(APIView):
    """One source (``GET``) and removing it with its chunks (``DELETE`` -> 204)."""

    permission_classes = [CanChangeConfig]

    def _source(self, source_id: int) -> KnowledgeSource:
        source = KnowledgeSource.objects.select_related("role", "project", "uploaded_by").filter(pk=source_id).first()
        if source is None:
            raise NotFound(f"there is no knowledge source {source_id}")
        return source

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, source_id: int) -> Response:
        return Response(source_document(self._source(source_id)))

    @extend_schema(responses={204: None})
    def delete(self, request: Request, source_id: int) -> Response:
        self._source(source_id).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class KnowledgeSearchView(APIView):
    """``GET ?q=&role=&project=&k=``: the best ``k`` (5, at most 50) chunks, best first,
    among the sources of the role or the project (every source when neither is given)."""

    permission_classes = [CanChangeConfig]

    @extend_schema(
        operation_id="knowledge_search",
        parameters=[
            OpenApiParameter("q", str, required=True, description="The search text."),
            *SCOPE_PARAMS,
            OpenApiParameter("k", int, description=f"How many results (1-{MAX_K}, default 5)."),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        data = api_fields.read_body(SearchSerializer, request.query_params)
        role, project = data.get("role") or None, data.get("project") or None
        scoped = role is not None or project is not None
        hits = search(
            data["q"],
            roles=[role] if role else ([] if scoped else None),
            projects=[project] if project else ([] if scoped else None),
            k=data["k"],
        )
        results = [
            {
                "source": {"id": h.chunk.source_id, "name": h.chunk.source.name},
                "chunk": {
                    "id": h.chunk.pk,
                    "ordinal": h.chunk.ordinal,
                    "heading": h.chunk.heading,
                    "text": h.chunk.text,
                },
                "score": h.score,
            }
            for h in hits
        ]
        return Response({"results": results})

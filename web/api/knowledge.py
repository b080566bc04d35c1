"""Knowledge (seed 003 KnowledgeContext): a role's, a skill's or a project's documents (upload
as multipart ``file``, index a project's folder, re-index, list, delete; writes need staff),
what changed in a project's folder since indexing and re-indexing only that (issue 15), and
searching them with the search the agents use."""

from __future__ import annotations

import operator
from functools import reduce
from typing import Any

from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.models import Project
from knowledge.folder_changes import FolderChanges, folder_changes, refresh_project_folder
from knowledge.models import KnowledgeSource, LoadLevel, Origin
from knowledge.search import search_in
from knowledge.sources import (
    MAX_SOURCE_BYTES,
    Upload,
    add_source,
    index_project_folder,
    reindex_source,
    source_document,
)
from monitoring.access import readable_knowledge, visible_projects
from teamclaw import api_fields
from teamclaw.api_parsers import SafeJSONParser
from teamclaw.api_query import integer, non_blank_text, query_parameters
from teamclaw.errors import NotFound

MAX_K = 50


class SourceUploadSerializer(api_fields.StrictSerializer):
    """``file`` (md, txt, html, rst or code, UTF-8, at most 1 MB) with one of ``role``,
    ``skill`` or ``project``, and ``load_level`` (basic: 20 chunks indexed, advanced: 100,
    expert: 500, full: all)."""

    file = serializers.FileField(required=False, help_text="The document (multipart).")
    role = api_fields.StrictCharField(required=False, allow_blank=True, max_length=40)
    skill = api_fields.StrictCharField(required=False, allow_blank=True, max_length=128)
    project = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)
    load_level = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=20, help_text=f"One of {', '.join(LoadLevel.values)}."
    )
    name = api_fields.StrictCharField(required=False, allow_blank=True, max_length=200)


class SourceFilterSerializer(api_fields.StrictSerializer):
    role = api_fields.StrictCharField(required=False, allow_blank=True, max_length=40)
    skill = api_fields.StrictCharField(required=False, allow_blank=True, max_length=128)
    project = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)


class ReindexSerializer(api_fields.StrictSerializer):
    """``load_level`` to index at (the source's own when left out)."""

    load_level = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=20, help_text=f"One of {', '.join(LoadLevel.values)}."
    )


class FolderIndexSerializer(ReindexSerializer):
    """``project`` (slug) whose folder is read, and ``load_level`` (basic when left out)."""

    project = api_fields.StrictCharField(
        max_length=64,
        error_messages={"required": "a project is required"},
        help_text="An existing project's slug whose folder exists on this server (400 naming project otherwise).",
    )


class FolderRefreshSerializer(api_fields.StrictSerializer):
    """``load_level`` of the files new in the folder (the level most of its sources have when
    left out; changed files keep their own)."""

    load_level = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=20, help_text=f"One of {', '.join(LoadLevel.values)}."
    )


class SearchSerializer(SourceFilterSerializer):
    q = api_fields.StrictCharField(max_length=2000, error_messages={"required": "the search text is required"})
    k = api_fields.StrictIntegerField(required=False, default=5, min_value=1, max_value=MAX_K)


SCOPE_PARAMS = [
    OpenApiParameter("role", str, description="Only the sources of this role."),
    OpenApiParameter("skill", str, description="Only the sources of this skill (skill id)."),
    OpenApiParameter("project", str, description="Only the sources of this project (slug)."),
]


def scoped_sources(scope: dict[str, str], user: Any) -> QuerySet[KnowledgeSource]:
    """The sources ``user`` may read (``monitoring.access.readable_knowledge``) of any of the
    role, skill and project in ``scope``; all they may read when none is given."""
    sources = KnowledgeSource.objects.select_related("role", "skill", "project", "uploaded_by").filter(
        readable_knowledge(user)
    )
    wanted = [
        Q(**{lookup: scope[key]})
        for key, lookup in (("role", "role__role"), ("skill", "skill__skill_id"), ("project", "project__slug"))
        if scope.get(key)
    ]
    if not wanted:
        return sources
    return sources.filter(reduce(operator.or_, wanted))


class KnowledgeSourceListView(APIView):
    """Knowledge sources (``GET ?role=&skill=&project=``: those of any scope given, or every
    source, of the sources the user may read: a project's only when they may see one of its
    tasks, ``monitoring.access``; each folder source with its ``file_state``, and ``folders``: the changes of each
    listed project's folder since indexing, ``KnowledgeFolderChangesView``'s shape, ``folder``
    None for non-staff) and adding
    one (``POST`` multipart -> 201 with its chunk count)."""

    permission_classes = [CanChangeConfig]
    parser_classes = [MultiPartParser, FormParser, SafeJSONParser]

    @extend_schema(operation_id="knowledge_sources_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(*SCOPE_PARAMS)
    def get(self, request: Request) -> Response:
        scope = api_fields.read_body(SourceFilterSerializer, request.query_params)
        sources = list(scoped_sources(scope, request.user))
        changes = {
            project.pk: folder_changes(project)
            for project in {s.project for s in sources if s.origin == Origin.FOLDER and s.project is not None}
        }
        documents = [
            source_document(s, changes[s.project_id].file_state(s.path) if s.project_id in changes else None)
            for s in sources
        ]
        folders = sorted((_changes_document(c, request) for c in changes.values()), key=lambda c: c["project"])
        return Response({"count": len(documents), "sources": documents, "folders": folders})

    @extend_schema(request={"multipart/form-data": SourceUploadSerializer}, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = api_fields.read_body(SourceUploadSerializer, request.data)
        upload = data.get("file")
        source = add_source(
            None
            if upload is None
            else Upload(upload.name or "", upload.content_type or "", upload.read(MAX_SOURCE_BYTES + 1)),
            role=data.get("role") or None,
            skill=data.get("skill") or None,
            project=data.get("project") or None,
            load_level=data.get("load_level") or None,
            name=data.get("name") or None,
            user=request.user,
        )
        return Response(source_document(source), status=status.HTTP_201_CREATED)


class KnowledgeSourceReindexView(APIView):
    """``POST {load_level?}``: cut a source again (an upload from its kept text, a folder
    source from its file as it is now) -> 200 with its new chunk counts."""

    permission_classes = [CanChangeConfig]

    @extend_schema(request=ReindexSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, source_id: int) -> Response:
        data = api_fields.read_body(ReindexSerializer, request.data)
        source = KnowledgeSource.objects.select_related("role", "skill", "project").filter(pk=source_id).first()
        if source is None:
            raise NotFound(f"there is no knowledge source {source_id}")
        return Response(source_document(reindex_source(source, data.get("load_level") or None)))


class KnowledgeFolderView(APIView):
    """``POST {project, load_level?}``: index the files of the project's folder (replacing its
    earlier folder sources) -> ``{folder, count, sources, skipped: [{path, reason}], truncated,
    not_looked_at}`` (``truncated``: the walk stopped at ``MAX_FOLDER_ENTRIES`` entries)."""

    permission_classes = [CanChangeConfig]

    @extend_schema(request=FolderIndexSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request) -> Response:
        data = api_fields.read_body(FolderIndexSerializer, request.data)
        done = index_project_folder(data["project"], data.get("load_level") or None, user=request.user)
        return Response(
            {
                "folder": done.folder,
                "count": len(done.sources),
                "sources": [source_document(s) for s in done.sources],
                "skipped": done.skipped,
                "truncated": done.truncated,
                "not_looked_at": done.not_looked_at,
            }
        )


def _changes_document(changes: FolderChanges, request: Request) -> dict[str, Any]:
    """``changes.as_dict()``; its absolute ``folder`` only for staff (a path on the server's
    disk is theirs to know), ``None`` for others."""
    document = changes.as_dict()
    if not request.user.is_staff:
        document["folder"] = None
    return document


def _project(slug: str, user: Any) -> Project:
    """The project ``slug`` names if ``user`` may see it (``monitoring.access.visible_projects``).
    Raises NotFound (404) for an unknown one and for one they may not see alike."""
    project = visible_projects(user).filter(slug=slug).first()
    if project is None:
        raise NotFound(f"there is no project {slug!r}")
    return project


class KnowledgeFolderChangesView(APIView):
    """``GET``: what changed in a project's folder since its files were indexed ->
    ``{project, folder, folder_exists, stale, counts: {new, changed, removed, unchanged},
    new, changed, removed (paths relative to the folder), skipped: [{path, reason}], truncated,
    not_looked_at}`` (``knowledge.folder_changes``; ``folder`` is None for non-staff)."""

    permission_classes = [CanChangeConfig]

    @extend_schema(operation_id="knowledge_folder_changes", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, project: str) -> Response:
        return Response(_changes_document(folder_changes(_project(project, request.user)), request))


class KnowledgeFolderRefreshView(APIView):
    """``POST {load_level?}``: re-index only the new and changed files of a project's folder
    and drop the sources of removed ones, in one transaction (new files at ``load_level``,
    else the folder's usual level) -> ``{folder, counts: {added, updated, removed, skipped,
    unchanged}, added, updated (source documents), removed (paths), skipped: [{path, reason}],
    truncated}``."""

    permission_classes = [CanChangeConfig]

    @extend_schema(
        operation_id="knowledge_folder_refresh", request=FolderRefreshSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request, project: str) -> Response:
        data = api_fields.read_body(FolderRefreshSerializer, request.data)
        done = refresh_project_folder(
            _project(project, request.user).slug, data.get("load_level") or None, user=request.user
        )
        return Response(
            {
                "folder": done.folder,
                "counts": {
                    "added": len(done.added),
                    "updated": len(done.updated),
                    "removed": len(done.removed),
                    "skipped": len(done.skipped),
                    "unchanged": done.unchanged,
                },
                "added": [source_document(s, "unchanged") for s in done.added],
                "updated": [source_document(s, "unchanged") for s in done.updated],
                "removed": done.removed,
                "skipped": done.skipped,
                "truncated": done.truncated,
            }
        )


class KnowledgeSourceDetailView(APIView):
    """One source (``GET``) and removing it with its chunks (``DELETE`` -> 204)."""

    permission_classes = [CanChangeConfig]

    def _source(self, source_id: int) -> KnowledgeSource:
        """The source if the user may read it; NotFound (404) for one they may not, as for
        one that does not exist, so its existence does not leak (``monitoring.access``)."""
        source = (
            KnowledgeSource.objects.select_related("role", "skill", "project", "uploaded_by")
            .filter(readable_knowledge(self.request.user), pk=source_id)
            .first()
        )
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
    """``GET ?q=&role=&skill=&project=&k=``: the best ``k`` (5, at most 50) chunks, best
    first, among the sources of the role, the skill or the project (every source when none
    is given) that the user may read (``monitoring.access.readable_knowledge``); the same
    search the agents' retrieval uses (``knowledge.search.search``).
    Answers ``{results: [{source, chunk, score}], ranking, chunks_without_vector}``:
    ``ranking`` is ``full_text`` or ``hybrid`` (full text fused with the chunks' vectors, the
    ``embeddings`` extra; issue 15), ``chunks_without_vector`` the chunks in scope that the
    vectors could not rank (none yet: re-index their source)."""

    permission_classes = [CanChangeConfig]

    @extend_schema(operation_id="knowledge_search", responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("q", non_blank_text(2000), required=True, description="The search text (not blank)."),
        *SCOPE_PARAMS,
        OpenApiParameter("k", integer(1, MAX_K), description=f"How many results (1-{MAX_K}, default 5)."),
    )
    def get(self, request: Request) -> Response:
        data = api_fields.read_body(SearchSerializer, request.query_params)
        ranked = search_in(
            data["q"],
            role=data.get("role") or None,
            skill=data.get("skill") or None,
            project=data.get("project") or None,
            k=data["k"],
            within=readable_knowledge(request.user),
        )
        results = [
            {
                "source": {"id": h.chunk.source_id, "name": h.chunk.source.name, "path": h.chunk.source.path},
                "chunk": {
                    "id": h.chunk.pk,
                    "ordinal": h.chunk.ordinal,
                    "heading": h.chunk.heading,
                    "text": h.chunk.text,
                },
                "score": h.score,
            }
            for h in ranked.hits
        ]
        return Response({"results": results, "ranking": ranked.ranking, "chunks_without_vector": ranked.unembedded})

"""The knowledge page (seed 003 KnowledgeContext): every source per role, skill and project
with its size, chunks, load level and indexed time; each indexed project folder with what
changed in it since (new, changed, removed files) and "Re-index changed files"; uploading a
document, indexing a project's folder, re-indexing and removing a source (staff); and a search box that runs the
search the agents' retrieval runs (``knowledge.search``), showing the top-k chunks with their
source."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from capabilities.models import AgentRole, Skill
from knowledge import embeddings
from knowledge.folder_changes import folder_changes, refresh_project_folder
from knowledge.models import LOAD_LIMITS, KnowledgeSource, LoadLevel, Origin
from knowledge.search import relevance, search_in
from knowledge.sources import (
    FOLDER_EXTENSIONS,
    MAX_FOLDER_BYTES,
    MAX_FOLDER_ENTRIES,
    MAX_FOLDER_FILES,
    MAX_SOURCE_BYTES,
    Upload,
    add_source,
    index_project_folder,
    reindex_source,
)
from monitoring.access import readable_knowledge, visible_projects
from teamclaw.errors import DomainError, InvalidField
from teamclaw.whole_numbers import whole_number_or_none
from web.forms import note_refusal, refuse_into, show_refusal

MAX_K = 20
"""Most results the page's search shows."""
KINDS = ("role", "skill", "project")


def owner_of(value: str) -> dict[str, str | None]:
    """``role:pm`` / ``skill:weather`` / ``project:shop`` (the page's owner choices) as
    ``{role, skill, project}``; blank: no owner. InvalidField on ``owner`` otherwise."""
    owner: dict[str, str | None] = dict.fromkeys(KINDS)
    if not value:
        return owner
    kind, _sep, name = value.partition(":")
    if kind not in KINDS or not name:
        raise InvalidField(_("choose a role, a skill or a project"), "owner")
    owner[kind] = name
    return owner


def _owners(request: HttpRequest) -> list[dict[str, Any]]:
    """The owner choices, grouped: ``[{kind, label, options: [(value, name)]}]``; the
    projects only those the user may see (``monitoring.access.visible_projects``)."""
    return [
        {
            "kind": "role",
            "label": _("Roles"),
            "options": [(f"role:{r.role}", r.shown_name) for r in AgentRole.objects.all()],
        },
        {
            "kind": "skill",
            "label": _("Skills"),
            "options": [(f"skill:{s.skill_id}", s.name) for s in Skill.objects.all()],
        },
        {
            "kind": "project",
            "label": _("Projects"),
            "options": [(f"project:{p.slug}", p.name) for p in visible_projects(request.user)],
        },
    ]


def _groups(sources: list[KnowledgeSource]) -> list[dict[str, Any]]:
    """Sources grouped by owner, roles first: ``[{kind, name, sources}]``."""
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    for source in sources:
        if source.role is not None:
            key, kind, name = (0, source.role.role), "role", source.role.role
        elif source.skill is not None:
            key, kind, name = (1, source.skill.skill_id), "skill", source.skill.skill_id
        else:
            assert source.project is not None
            key, kind, name = (2, source.project.slug), "project", source.project.slug
        groups.setdefault(key, {"kind": kind, "name": name, "sources": []})["sources"].append(source)
    return [groups[key] for key in sorted(groups)]


def _folders(sources: list[KnowledgeSource]) -> list[dict[str, Any]]:
    """For each project with folder sources, what changed in its folder since indexing:
    ``[{project, changes: FolderChanges}]`` by slug; sets ``file_state`` on each of
    ``sources`` that is a folder source (``unchanged``, ``changed`` or ``removed``)."""
    projects = {s.project.slug: s.project for s in sources if s.origin == Origin.FOLDER and s.project is not None}
    changes = {slug: folder_changes(project) for slug, project in projects.items()}
    for source in sources:
        if source.origin == Origin.FOLDER and source.project is not None:
            source.file_state = changes[source.project.slug].file_state(source.path)  # type: ignore[attr-defined]
    return [{"project": projects[slug], "changes": changes[slug]} for slug in sorted(changes)]


class KnowledgeUploadForm(forms.Form):
    """Uploading a document (``knowledge.sources.add_source`` checks its content: text, not
    binary): the file (at most ``MAX_SOURCE_BYTES``), its owner (one of the page's role, skill
    or project choices), the load level (blank: the owner's default) and a name (..200
    characters; blank: the file's name)."""

    file = forms.FileField(
        label=gettext_lazy("File"), error_messages={"required": gettext_lazy("Choose a file to upload.")}
    )
    owner = forms.ChoiceField(
        label=gettext_lazy("Attach to"),
        error_messages={
            "required": gettext_lazy("Choose a role, a skill or a project."),
            "invalid_choice": gettext_lazy("Choose a role, a skill or a project."),
        },
    )
    load_level = forms.ChoiceField(
        required=False, choices=[("", ""), *LoadLevel.choices], label=gettext_lazy("Load level")
    )
    name = forms.CharField(
        required=False,
        max_length=KnowledgeSource._meta.get_field("name").max_length,
        label=gettext_lazy("Name (blank: the file's name)"),
    )

    def __init__(self, *args: Any, owners: list[dict[str, Any]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [value for group in owners for value, _name in group["options"]]
        self.fields["owner"].choices = [(value, value) for value in choices]  # type: ignore[attr-defined]

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if (upload.size or 0) > MAX_SOURCE_BYTES:
            reason = _("The file is %(size)s bytes; the limit is %(limit)s bytes.")
            raise forms.ValidationError(reason % {"size": f"{upload.size:,}", "limit": f"{MAX_SOURCE_BYTES:,}"})
        return upload


class LoadLevelForm(forms.Form):
    """A re-index's load level (blank: the source's own, or ``basic`` for a folder)."""

    load_level = forms.ChoiceField(
        required=False,
        choices=[("", ""), *LoadLevel.choices],
        label=gettext_lazy("Load level"),
        error_messages={"invalid_choice": gettext_lazy("Choose one of the load levels.")},
    )


class FolderForm(LoadLevelForm):
    """Indexing a project's folder (``knowledge.sources.index_project_folder``): one of the
    projects the user may see, and the load level."""

    project = forms.ChoiceField(
        label=gettext_lazy("Project"),
        error_messages={
            "required": gettext_lazy("Choose a project."),
            "invalid_choice": gettext_lazy("Choose one of the projects listed."),
        },
    )

    field_order = ("project", "load_level")

    def __init__(self, *args: Any, projects: Any = (), **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_folder_%s")  # the upload form beside it has id_load_level
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [(p.slug, p.name) for p in projects]  # type: ignore[attr-defined]


@require_GET
def knowledge_page(request: HttpRequest) -> HttpResponse:
    """``/knowledge/``: the sources, the forms, and ``?q=&owner=&k=`` the search; of a
    project's sources only those of projects the user may see (``monitoring.access``)."""
    return _page(request)


def _page(
    request: HttpRequest, upload_form: KnowledgeUploadForm | None = None, folder_form: FolderForm | None = None
) -> HttpResponse:
    """The knowledge page; with ``upload_form`` or ``folder_form``, a refused upload or
    folder index shown again (400) with its reasons next to its fields, what was chosen kept."""
    readable = readable_knowledge(request.user)
    sources = list(
        KnowledgeSource.objects.filter(readable)
        .select_related("role", "skill", "project", "uploaded_by")
        .defer("document")
    )
    folders = _folders(sources)
    query = request.GET.get("q", "").strip()[:2000]
    scope = request.GET.get("owner", "")
    results = None
    ranked = None
    errors: dict[str, list[str]] = {}
    status = 200
    asked_k = whole_number_or_none(request.GET.get("k") or "5")
    if asked_k is None:
        k, errors, status = 5, {"k": [_("must be a whole number")]}, 400
    else:
        k = min(MAX_K, max(1, asked_k))
    if query and not errors:
        try:
            owner = owner_of(scope)
        except InvalidField as refused:
            errors, status = refused.errors, 400
        else:
            ranked = search_in(
                query, role=owner["role"], skill=owner["skill"], project=owner["project"], k=k, within=readable
            )
            best = ranked.hits[0].score if ranked.hits else 0
            results = [
                {"hit": hit, "source": hit.chunk.source, "relevance": relevance(hit.score, best)} for hit in ranked.hits
            ]
    context = {
        "nav": "knowledge",
        "groups": _groups(sources),
        "folders": folders,
        "source_count": len(sources),
        "chunk_count": sum(s.chunk_count for s in sources),
        "owners": _owners(request),
        "projects": visible_projects(request.user),
        "levels": [(level.value, level.label, LOAD_LIMITS[level]) for level in LoadLevel],
        "query": query,
        "scope": scope,
        "k": k,
        "results": results,
        "ranking": ranked.ranking if ranked else None,
        "unembedded": ranked.unembedded if ranked else 0,
        "embeddings_active": embeddings.active(),
        "errors": errors,
        "can_change": bool(request.user.is_staff),
        "max_bytes": MAX_SOURCE_BYTES,
        "upload_form": upload_form or KnowledgeUploadForm(owners=[]),
        "folder_form": folder_form or FolderForm(projects=visible_projects(request.user)),
        "max_folder_files": MAX_FOLDER_FILES,
        "max_folder_entries": MAX_FOLDER_ENTRIES,
        "max_folder_bytes": MAX_FOLDER_BYTES,
        "accept": ",".join(sorted(FOLDER_EXTENSIONS)),
    }
    shown_again = upload_form is not None or folder_form is not None
    return render(request, "knowledge/knowledge.html", context, status=400 if shown_again else status)


def _require_staff(request: HttpRequest) -> None:
    """Writes need staff, as the knowledge API's do (PermissionDenied: 403)."""
    if not request.user.is_staff:
        raise PermissionDenied(_("changing knowledge sources needs a staff account"))


@require_POST
def knowledge_upload(request: HttpRequest) -> HttpResponse:
    """Add the uploaded ``file`` as a source of ``owner`` at ``load_level``
    (``KnowledgeUploadForm``); a refused upload shows the page again (400) with the reasons
    next to the fields and what was typed (a browser cannot be given the file back)."""
    _require_staff(request)
    form = KnowledgeUploadForm(request.POST, request.FILES, owners=_owners(request))
    if not form.is_valid():
        return _page(request, form)
    upload = form.cleaned_data["file"]
    owner = owner_of(form.cleaned_data["owner"])
    try:
        source = add_source(
            Upload(upload.name or "", upload.content_type or "", upload.read(MAX_SOURCE_BYTES + 1)),
            role=owner["role"],
            skill=owner["skill"],
            project=owner["project"],
            load_level=form.cleaned_data["load_level"] or None,
            name=form.cleaned_data["name"] or None,
            user=request.user,
        )
    except DomainError as refused:
        refuse_into(form, refused)
        return _page(request, form)
    messages.success(
        request,
        _("%(name)s indexed: %(chunks)d of %(total)d chunks.")
        % {"name": source.name, "chunks": source.chunk_count, "total": source.total_chunks},
    )
    return redirect("knowledge")


@require_POST
def knowledge_folder(request: HttpRequest) -> HttpResponse:
    """Index the files of the chosen ``project``'s folder at ``load_level`` (``FolderForm``);
    a choice the form or the indexer refuses shows the page again (400), the reason next to
    its field."""
    _require_staff(request)
    form = FolderForm(request.POST, projects=visible_projects(request.user))
    if not form.is_valid():
        return _page(request, folder_form=form)
    try:
        done = index_project_folder(form.cleaned_data["project"], form.cleaned_data["load_level"] or None, request.user)
    except DomainError as refused:
        note_refusal(request, refused)
        refuse_into(form, refused)
        return _page(request, folder_form=form)
    messages.success(
        request, _("%(count)d files indexed from %(folder)s.") % {"count": len(done.sources), "folder": done.folder}
    )
    _warn_skipped(request, done.skipped)
    return redirect("knowledge")


SKIPPED_SHOWN = 20
"""Files a folder look skipped that the warning names; the rest are counted."""


def _warn_skipped(request: HttpRequest, skipped: list[dict[str, str]]) -> None:
    """Warn about the files a folder look skipped (``[{path, reason}]``), the first
    ``SKIPPED_SHOWN`` by name and the rest as a count; nothing when none was."""
    if not skipped:
        return
    listed = "; ".join(f"{s['path']}: {s['reason']}" for s in skipped[:SKIPPED_SHOWN])
    more = len(skipped) - SKIPPED_SHOWN
    messages.warning(
        request,
        _("Skipped: %(listed)s") % {"listed": listed}
        + (_(" …and %(more)d more.") % {"more": more} if more > 0 else ""),
    )


def _load_level(request: HttpRequest) -> str | None:
    """The posted ``LoadLevelForm``'s level ('' for the default), or None after telling the
    operator why it was refused (a message on the next page, as the row's other refusals)."""
    form = LoadLevelForm(request.POST)
    if form.is_valid():
        return str(form.cleaned_data["load_level"])
    show_refusal(request, InvalidField(" ".join(str(e) for e in form.errors["load_level"]), "load_level"))
    return None


@require_POST
def knowledge_folder_refresh(request: HttpRequest, slug: str) -> HttpResponse:
    """Re-index only the new and changed files of project ``slug``'s folder and drop the
    sources of removed ones (``knowledge.folder_changes.refresh_project_folder``)."""
    _require_staff(request)
    level = _load_level(request)
    if level is None:
        return redirect("knowledge")
    try:
        done = refresh_project_folder(slug, level or None, request.user)
    except DomainError as refused:
        show_refusal(request, refused)
    else:
        messages.success(
            request,
            _("%(folder)s: %(added)d new, %(updated)d changed and %(removed)d removed files re-indexed.")
            % {
                "folder": done.folder,
                "added": len(done.added),
                "updated": len(done.updated),
                "removed": len(done.removed),
            },
        )
        _warn_skipped(request, done.skipped)
    return redirect("knowledge")


@require_POST
def knowledge_reindex(request: HttpRequest, source_id: int) -> HttpResponse:
    """Cut source ``source_id`` again at the ``load_level`` chosen (its own when blank)."""
    _require_staff(request)
    source = get_object_or_404(KnowledgeSource.objects.select_related("project"), pk=source_id)
    level = _load_level(request)
    if level is None:
        return redirect("knowledge")
    try:
        reindex_source(source, level or None)
    except DomainError as refused:
        show_refusal(request, refused)
    else:
        messages.success(
            request,
            _("%(name)s re-indexed: %(chunks)d of %(total)d chunks.")
            % {"name": source.name, "chunks": source.chunk_count, "total": source.total_chunks},
        )
    return redirect("knowledge")


@require_POST
def knowledge_delete(request: HttpRequest, source_id: int) -> HttpResponse:
    """Remove source ``source_id`` with its chunks."""
    _require_staff(request)
    source = get_object_or_404(KnowledgeSource, pk=source_id)
    name = source.name
    source.delete()
    messages.success(request, _("%(name)s removed.") % {"name": name})
    return redirect("knowledge")

"""The project a request is about (PRD §4.7 项目级配置覆盖): one helper for pages and the API.

Every view with a scope selector reads ``?project=<slug>`` (a form may carry it as a field
instead); no slug is the global layer. An unknown slug is a 404 naming it: the page's error
page, or the API's ``{"detail": "project 'x' does not exist", "errors": {}}``.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest
from django.urls import reverse

from capabilities.models import Project
from team.snapshot import build_snapshot
from teamclaw.runtime.config import ConfigSnapshot

SLUG_SHOWN = 64
"""How much of an unknown slug an error message repeats."""


def project_named(slug: str | None) -> Project | None:
    """The project ``slug`` names, None for a blank slug (the global layer). Raises Http404."""
    if not slug:
        return None
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404(f"project '{slug[:SLUG_SHOWN]}' does not exist")
    return project


def project_scope(request: HttpRequest, *, form: bool = False) -> Project | None:
    """The project of ``request``: ``?project=``, or with ``form`` the form's ``project`` field
    first (a POST from a scope-aware form). Raises Http404 for an unknown slug."""
    slug = (request.POST.get("project") if form else None) or request.GET.get("project")
    return project_named(slug)


def scoped_url(name: str, project: Project | None, **kwargs: Any) -> str:
    """``reverse(name, kwargs)`` with ``?project=<slug>`` when scoped to a project."""
    url = reverse(name, kwargs=kwargs or None)
    return f"{url}?project={project.slug}" if project else url


def scoped_snapshot(request: HttpRequest) -> ConfigSnapshot:
    """The effective config (prompts included) of the request's ``?project=``. Raises Http404."""
    project = project_scope(request)
    return build_snapshot(project.slug if project else None)

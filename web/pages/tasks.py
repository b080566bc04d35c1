"""Pages: tasks (US-02): the list, a task's live page with its artifacts, a new review, the demo."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from capabilities.models import Project
from monitoring.access import visible_tasks
from monitoring.live_state import task_page_context
from monitoring.models import Artifact
from runs.compare import compare_artifacts
from runs.tasks import (
    DocumentError,
    cancel_task,
    fork_task,
    max_document_bytes,
    sample_requirement,
    start_task,
)
from teamclaw.errors import DomainError
from web.forms import show_refusal

T = TypeVar("T")


def task_list(request: HttpRequest) -> HttpResponse:
    """Every task the user may see (``monitoring.access``), newest first, 25 a page;
    ``?kind=all`` includes standalone invokes/hooks."""
    queryset = visible_tasks(request.user).select_related("project")
    if request.GET.get("kind") != "all":
        queryset = queryset.filter(kind="task")
    page = Paginator(queryset, 25).get_page(request.GET.get("page"))
    return render(
        request,
        "monitoring/task_list.html",
        {"nav": "tasks", "page": page, "show_all": request.GET.get("kind") == "all"},
    )


def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    """A task: status, its agents' context cards, pending confirmations, artifacts and
    messages, kept current over ``/ws/tasks/<task_id>/`` (PRD §4.6). A task the user may
    not see is a 404."""
    task = get_object_or_404(visible_tasks(request.user).select_related("project"), pk=task_id)
    return render(request, "monitoring/task_detail.html", {"nav": "tasks", **task_page_context(request.user, task)})


def attempt(request: HttpRequest, action: Callable[[], T]) -> T | None:
    """Run a task action for a page: its result, or None after showing the refusal as a
    message on the next page (a task the user may not see is a 404)."""
    try:
        return action()
    except DomainError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        show_refusal(request, exc)
        return None


@require_POST
def task_cancel(request: HttpRequest, task_id: str) -> HttpResponse:
    """Cancel a queued or running task (PRD §4.6 ``terminated``), then back to its page
    with what happened (a refusal says why: ended already, not allowed, no worker answered)."""
    task = attempt(request, lambda: cancel_task(request.user, task_id, request.POST.get("reason", "")))
    if task is not None:
        messages.success(request, f"Task cancelled: it is {task.status}.")
    return redirect("task-detail", task_id=task_id)


@require_POST
def task_fork(request: HttpRequest, task_id: str) -> HttpResponse:
    """Re-run an ended task from step N as a new task (``runs.tasks.fork_task``), optionally
    with another task prompt layer; opens the new task, or says why not on this one."""
    raw = (request.POST.get("from_step") or "").strip()
    from_step: object = int(raw) if raw.isdigit() else raw
    overrides = (
        {"prompt_enhancement": request.POST.get("prompt_enhancement", "")} if request.POST.get("change_prompt") else {}
    )
    forked = attempt(request, lambda: fork_task(request.user, task_id, from_step, overrides))
    if forked is None:
        return redirect("task-detail", task_id=task_id)
    messages.success(request, f"Forked at step {from_step}: the steps before it come from the record.")
    return redirect("task-detail", task_id=forked.id)


@require_GET
def task_compare(request: HttpRequest, task_id: str) -> HttpResponse:
    """Two tasks' artifacts side by side (``?with=<task id>``): same, changed (a diff), missing."""
    tasks = visible_tasks(request.user).prefetch_related("artifacts")
    left = get_object_or_404(tasks, pk=task_id)
    right = get_object_or_404(tasks, pk=request.GET.get("with", ""))
    return render(
        request,
        "monitoring/task_compare.html",
        {"nav": "tasks", "left": left, "right": right, "rows": compare_artifacts(left, right)},
    )


@require_http_methods(["GET", "POST"])
def task_new(request: HttpRequest) -> HttpResponse:
    """Start a requirement review on a pasted or uploaded Markdown document."""
    projects = Project.objects.all()
    form = {"title": "", "input_markdown": "", "project": ""}
    error = ""
    if request.method == "POST":
        form = {key: request.POST.get(key, "") for key in form}
        upload = request.FILES.get("document")
        raw: bytes | str | None = upload.read(max_document_bytes() + 1) if upload else form["input_markdown"]
        project = Project.objects.filter(slug=form["project"]).first() if form["project"] else None
        if upload is not None and (upload.size or 0) > max_document_bytes():
            error = f"the file is {upload.size:,} bytes; the limit is {max_document_bytes():,} bytes"
        elif form["project"] and project is None:
            error = f"project '{form['project']}' does not exist"
        else:
            try:
                task = start_task(
                    workflow="requirement_review",
                    input_markdown=raw,
                    title=form["title"],
                    project=project,
                    user=request.user,
                )
            except DocumentError as exc:
                error = exc.reason
            else:
                messages.success(request, "Review started; the experts are on it.")
                return redirect("task-detail", task_id=task.id)
    return render(
        request,
        "monitoring/task_new.html",
        {"nav": "tasks", "form": form, "error": error, "projects": projects, "limit": max_document_bytes()},
        status=400 if error else 200,
    )


@require_POST
def run_demo(request: HttpRequest) -> HttpResponse:
    """ "Run demo": review the bundled sample requirement (an online bookstore)."""
    task = start_task(
        workflow="requirement_review",
        input_markdown=sample_requirement(),
        title="Demo: online bookstore order tracking",
        user=request.user,
    )
    messages.success(request, "Demo started: four experts are reviewing the sample requirement.")
    return redirect("task-detail", task_id=task.id)


@require_GET
def task_artifact(request: HttpRequest, task_id: str, name: str) -> HttpResponse:
    """One artifact's whole content as text (the pages show the first 20,000 characters)."""
    task = visible_tasks(request.user).filter(pk=task_id).first()
    artifact = Artifact.objects.filter(task=task, name=name).first() if task else None
    if artifact is None:
        raise Http404(f"task {task_id} has no artifact {name}")
    response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{artifact.name}"'
    return response

"""Pages: dashboard (US-01, US-02), tasks, a task's progress and artifacts, starting tasks."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.executors import model_status, role_executor
from capabilities.models import AgentRole, CapabilityCard, Project
from monitoring.access import visible_tasks
from monitoring.live_state import task_page_context
from monitoring.models import AgentInstance
from runs.host import executor_problems
from runs.tasks import DocumentError, max_document_bytes, sample_requirement, start_task
from team.snapshot import build_snapshot


def dashboard(request: HttpRequest) -> HttpResponse:
    """The team with its capabilities and the executor each role uses, active instances and
    recent tasks."""
    roles = list(AgentRole.objects.prefetch_related("capabilities"))
    snapshot = build_snapshot()
    for role in roles:
        role.executor_info = role_executor(snapshot, role.role)
    instances = AgentInstance.objects.exclude(status="terminated")
    tasks = visible_tasks(request.user).filter(kind="task").select_related("project")[:10]
    entry_points = CapabilityCard.objects.filter(
        capability_type="ENTRY", enabled=True, skill__status="ACTIVATED"
    ).select_related("skill")  # seed 003: ENTRY capabilities are the user-facing entry points
    return render(
        request,
        "monitoring/dashboard.html",
        {
            "nav": "dashboard",
            "roles": roles,
            "instances": instances,
            "tasks": tasks,
            "model": model_status(),
            "executor_problems": executor_problems(),
            "entry_points": entry_points,
        },
    )


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
        if upload is not None and upload.size > max_document_bytes():
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

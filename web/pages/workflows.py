"""Pages: workflows (seed 003 YAML orchestration): list, new, detail with recent runs, run."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.skill_documents import workflow_document
from capabilities.skill_models import Workflow
from capabilities.workflow_actions import WorkflowConflict, delete_workflow, save_workflow
from capabilities.workflow_spec import WorkflowError
from monitoring.models import Task
from runs.workflow_runs import RunInputError, start_workflow_run
from teamclaw.strict_json import JsonRefused, loads
from web.forms import refuse_into
from web.pages.skills import require_staff


# ---------------------------------------------------------------------------- workflows
def workflow_list(request: HttpRequest) -> HttpResponse:
    """Saved workflows with their step count and latest runs."""
    workflows = [workflow_document(w, full=False) for w in Workflow.objects.all()]
    return render(request, "capabilities/workflow_list.html", {"nav": "workflows", "workflows": workflows})


class WorkflowYamlForm(forms.Form):
    """The workflow editor: the YAML as typed; ``save_workflow`` checks it, listing every
    problem with its line (a NUL character the form refuses is left for it to name too)."""

    yaml = forms.CharField(required=False, strip=False)


@require_http_methods(["GET", "POST"])
def workflow_edit(request: HttpRequest, workflow_id: str | None = None) -> HttpResponse:
    """Write a new workflow or edit one; refused saves list every problem with its line."""
    require_staff(request)
    workflow = get_object_or_404(Workflow, workflow_id=workflow_id) if workflow_id else None
    text = workflow.source if workflow else ""
    problems: list[Any] = []
    error = ""
    if request.method == "POST":
        form = WorkflowYamlForm(request.POST)
        text = str(form.data.get("yaml", ""))
        try:
            saved = save_workflow(
                form.cleaned_data["yaml"] if form.is_valid() else text, actor=request.user, replace=workflow_id
            )
        except WorkflowError as exc:
            problems = exc.problems
        except WorkflowConflict as exc:
            error = exc.message
        else:
            messages.success(
                request,
                _("Workflow %(id)s saved (version %(version)s).") % {"id": saved.workflow_id, "version": saved.version},
            )
            return redirect("workflow-detail", workflow_id=saved.workflow_id)
    return render(
        request,
        "capabilities/workflow_edit.html",
        {"nav": "workflows", "workflow": workflow, "text": text, "problems": problems, "error": error},
        status=400 if problems or error else 200,
    )


class WorkflowRunForm(forms.Form):
    """A workflow run's input: a JSON object as text (blank: ``{}``), at most the request
    body limit; ``runs.workflow_runs.start_workflow_run`` checks its shape."""

    input = forms.CharField(required=False, strip=False, label=gettext_lazy("Input"))

    def clean_input(self) -> dict[str, Any]:
        """The parsed input, refused when it is not JSON or not an object."""
        raw = str(self.cleaned_data["input"]) or "{}"
        try:
            value = loads(raw, max_bytes=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
        except JsonRefused as exc:
            raise forms.ValidationError(_("The input is not JSON: %(reason)s") % {"reason": exc}) from None
        if not isinstance(value, dict):
            raise forms.ValidationError(_("The input must be a JSON object: { … }."))
        return value


@require_http_methods(["GET", "POST"])
def workflow_detail(request: HttpRequest, workflow_id: str) -> HttpResponse:
    """A workflow: its steps, YAML, recent runs, and a form to run it (POST,
    ``WorkflowRunForm``); a refused run shows the page again (400) with the input as typed
    and the reason next to it."""

    workflow = get_object_or_404(Workflow, workflow_id=workflow_id)
    form = WorkflowRunForm(initial={"input": "{}"})
    if request.method == "POST":
        form = WorkflowRunForm(request.POST)
        if form.is_valid():
            try:
                task = start_workflow_run(workflow, form.cleaned_data["input"], user=request.user)
            except RunInputError as exc:
                refuse_into(form, exc)
            else:
                messages.success(request, _("Workflow %(id)s started.") % {"id": workflow_id})
                return redirect("task-detail", task_id=task.id)
    runs = Task.objects.filter(workflow=workflow_id).order_by("-created_at")[:20]
    return render(
        request,
        "capabilities/workflow_detail.html",
        {
            "nav": "workflows",
            "workflow": workflow,
            "doc": workflow_document(workflow),
            "runs": runs,
            "form": form,
        },
        status=400 if form.is_bound else 200,
    )


@require_POST
def workflow_delete(request: HttpRequest, workflow_id: str) -> HttpResponse:
    """Delete a workflow (its runs stay as tasks); staff only."""
    require_staff(request)
    delete_workflow(get_object_or_404(Workflow, workflow_id=workflow_id), actor=request.user)
    messages.success(request, _("Workflow %(id)s deleted.") % {"id": workflow_id})
    return redirect("workflows")

"""Pages: tasks (US-02): the list, a task's live page with its artifacts, a new review, the demo."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import quote

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.files.uploadedfile import UploadedFile
from django.core.paginator import Paginator
from django.core.validators import MaxValueValidator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import get_language, gettext_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from capabilities.models import Project
from monitoring.access import can_operate_task, can_use_project, visible_projects, visible_tasks
from monitoring.live_state import task_page_context
from monitoring.models import Artifact, Task
from monitoring.outcome import open_points, revision_summary, still_open, verdicts, waiting_for_operator
from monitoring.trace import artifact_findings
from monitoring.trace import task_trace as task_trace_tree
from prompts.diff import diff_texts
from runs.compare import compare_artifacts, too_large_to_diff
from runs.open_points import MAX_ANSWER_CHARS, answer_open_point, revise_final_document
from runs.operator_inputs import MAX_ANSWER_CHARS as MAX_INPUT_ANSWER_CHARS
from runs.operator_inputs import SECTIONS, give, pending_inputs
from runs.resume import recorded_steps
from runs.tasks import (
    MAX_TITLE_CHARS,
    DocumentError,
    cancel_task,
    fork_task,
    max_document_bytes,
    project_type_labels,
    project_types,
    sample_requirement,
    start_task,
)
from teamclaw.errors import DomainError
from web.forms import refuse_into, show_refusal
from web.htmx import fragment_or_page, wants_fragment

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
        {
            "nav": "tasks",
            "page": page,
            "show_all": request.GET.get("kind") == "all",
            "verdicts": verdicts([t.id for t in page.object_list]),
            "waiting": waiting_for_operator([t.id for t in page.object_list]),
        },
    )


def task_detail(request: HttpRequest, task_id: str) -> HttpResponse:
    """A task: status, its agents' context cards, pending confirmations, artifacts and
    messages, kept current over ``/ws/tasks/<task_id>/`` (PRD §4.6). A task the user may
    not see is a 404."""
    task = get_object_or_404(visible_tasks(request.user).select_related("project"), pk=task_id)
    context = {
        "nav": "tasks",
        **task_page_context(request.user, task),
        "kept_draft": request.session.pop(f"{KEPT_DRAFT}{task_id}", ""),
    }
    # its outcome and phase are read again when outcome.json is written / the task waits anew
    return fragment_or_page(request, "monitoring/task_detail.html", context, parts=("outcome", "phase"))


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


MAX_CANCEL_REASON_CHARS = 300
"""Longest reason a cancel keeps (characters; ``runs.tasks.cancel_task`` checks it too)."""
MAX_PROMPT_LAYER_CHARS = 2000
"""Longest task prompt layer a fork takes (characters; ``runs.tasks.fork_task`` checks it too)."""


class CancelForm(forms.Form):
    """The task page's cancel form: an optional reason (0..300 characters)."""

    reason = forms.CharField(
        required=False, max_length=MAX_CANCEL_REASON_CHARS, label=gettext_lazy("Reason (optional)")
    )


class ForkForm(forms.Form):
    """The task page's fork form: the step to run live from (a whole number from 0 to the
    task's completed steps) and the task prompt layer (0..2,000 characters; CRLF made LF)."""

    from_step = forms.IntegerField(min_value=0, label=gettext_lazy("From step"))
    prompt_enhancement = forms.CharField(
        required=False, strip=False, max_length=MAX_PROMPT_LAYER_CHARS, label=gettext_lazy("Task prompt layer")
    )

    def __init__(self, *args: object, steps: int, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        bounds = _("Give a whole number from 0 to %(steps)s (the task's completed steps).") % {"steps": steps}
        field = self.fields["from_step"]
        field.validators.append(MaxValueValidator(steps, message=bounds))
        field.error_messages.update({"invalid": bounds, "min_value": bounds, "required": bounds})

    def clean_prompt_enhancement(self) -> str:
        return str(self.cleaned_data["prompt_enhancement"]).replace("\r\n", "\n")


def _task_page(request: HttpRequest, task: Task, **forms_shown: object) -> HttpResponse:
    """The task page again, answering a refused fork or cancel form (400): the form with what
    was typed and its reasons next to the fields, its section open."""
    context = {"nav": "tasks", **task_page_context(request.user, task), **forms_shown}
    return render(request, "monitoring/task_detail.html", context, status=400)


@require_POST
def task_cancel(request: HttpRequest, task_id: str) -> HttpResponse:
    """Cancel a queued or running task (PRD §4.6 ``terminated``), then back to its page
    with what happened (a refusal says why: ended already, not allowed, no worker answered).
    A reason the ``CancelForm`` refuses shows the page again (400), for a user who may cancel
    (anyone else is refused by ``cancel_task`` as before)."""
    form = CancelForm(request.POST)
    if form.is_valid():
        reason: object = form.cleaned_data["reason"]
    else:
        task = get_object_or_404(visible_tasks(request.user).select_related("project"), pk=task_id)
        if can_operate_task(request.user, task) and task.status in ("queued", "running"):
            return _task_page(request, task, cancel_form=form)
        reason = form["reason"].value()
    cancelled = attempt(request, lambda: cancel_task(request.user, task_id, reason))
    if cancelled is not None:
        messages.success(request, _("Task cancelled: it is %(status)s.") % {"status": cancelled.status})
    return redirect("task-detail", task_id=task_id)


@require_POST
def task_fork(request: HttpRequest, task_id: str) -> HttpResponse:
    """Re-run an ended task from step N as a new task (``runs.tasks.fork_task``), with the
    task prompt layer the form holds when it differs from this task's; opens the new task.
    A ``ForkForm`` the checks refuse shows the page again (400) with the reasons next to the
    fields, for a user who may fork this task; anyone else, and a task that cannot be forked,
    is refused by ``fork_task`` first, as before (a message on this task's page)."""
    source = get_object_or_404(visible_tasks(request.user).select_related("project"), pk=task_id)
    form = ForkForm(request.POST, steps=len(recorded_steps(task_id)))
    if not form.is_valid():
        may_fork = source.status not in ("queued", "running") and bool(source.run_spec)
        if may_fork and can_use_project(request.user, source.project):
            return _task_page(request, source, fork_form=form)
        attempt(request, lambda: fork_task(request.user, task_id, form["from_step"].value(), {}))
        return redirect("task-detail", task_id=task_id)
    from_step = form.cleaned_data["from_step"]
    layer = form.cleaned_data["prompt_enhancement"]
    # the form shows this task's layer: what the operator leaves as it is, the fork keeps
    changed = "prompt_enhancement" in form.data and layer != source.prompt_enhancement
    overrides = {"prompt_enhancement": layer} if changed else {}
    forked = attempt(request, lambda: fork_task(request.user, task_id, from_step, overrides))
    if forked is None:
        return redirect("task-detail", task_id=task_id)
    messages.success(
        request, _("Forked at step %(step)s: the steps before it come from the record.") % {"step": from_step}
    )
    return redirect("task-detail", task_id=forked.id)


DECISION_CHOICES = (("accept", "accept"), ("reject", "reject"))
NEXT_ACTIONS = (("modify", "modify"), ("review", "review"), ("end", "end"))
ANSWER_PREFIXES = ("answers.", "choice.", "decision.")
"""The names of a task page's per-question and per-point fields (``answers.<question id>``,
``choice.<question id>``, ``decision.<item id>``)."""


class TaskInputForm(forms.Form):
    """The task page's answer forms (``runs.operator_inputs.give``), built from the request
    the task waits for (``row``, None when it waits for none or the user may not act on it:
    ``give`` then refuses as before, 404 / 403 / 409, before any field is read). Fields:
    ``input_id`` (the request the page showed); for ``answers`` each question's
    ``answers.<id>`` (text of at most 4,000 characters, or one of its ``choices``) and
    ``choice.<id>`` (one of its option keys); for ``decisions`` each item's ``decision.<id>``
    (accept / reject); for ``next`` ``action`` (modify / review / end) and the edited
    ``markdown`` (CRLF made LF, so an unchanged draft stays unchanged). An answer field naming
    no question or point of the request is refused as the form's own error."""

    input_id = forms.CharField(required=False, max_length=64)

    def __init__(self, *args: Any, row: Any, section: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.section = section
        self.row_id = row.id if row is not None else ""
        request = (row.args or {}) if row is not None else {}
        if row is None:
            return
        if section == "answers":
            for question in request.get("questions", []):
                self._question_fields(question)
        elif section == "decisions":
            for item in request.get("items", []):
                self.fields[f"decision.{item['id']}"] = forms.ChoiceField(choices=DECISION_CHOICES, required=False)
        else:
            self.fields["action"] = forms.ChoiceField(choices=NEXT_ACTIONS, label=gettext_lazy("What to do"))
            self.fields["markdown"] = forms.CharField(
                required=False, strip=False, label=gettext_lazy("The draft (Markdown)")
            )

    def _question_fields(self, question: Mapping[str, Any]) -> None:
        """``answers.<id>`` (and ``choice.<id>`` for a question with options) of one question."""
        qid = question["id"]
        label = str(question.get("text") or qid)
        if question.get("choices"):
            values = [(str(c["value"]), str(c["value"])) for c in question["choices"]]
            self.fields[f"answers.{qid}"] = forms.ChoiceField(choices=values, required=False, label=label)
            return
        self.fields[f"answers.{qid}"] = forms.CharField(
            required=False, strip=False, max_length=MAX_INPUT_ANSWER_CHARS, label=label
        )
        keys = [(str(o["key"]), str(o["key"])) for o in question.get("options") or () if o.get("key")]
        if keys:
            self.fields[f"choice.{qid}"] = forms.ChoiceField(choices=keys, required=False, label=label)

    @property
    def fields_for(self) -> dict[str, dict[str, forms.BoundField]]:
        """The request's id -> each field by its name, for the template to show the refused
        form on that request's card only (``input_form.fields_for|get_item:cf.id``)."""
        return {self.row_id: {name: self[name] for name in self.fields}} if self.row_id else {}

    def clean(self) -> dict[str, Any]:
        """Refuse answer fields that name no question or point of the request."""
        data = super().clean() or {}
        if self.row_id:
            unknown = sorted(k for k in self.data if k.startswith(ANSWER_PREFIXES) and k not in self.fields)
            if unknown:
                raise forms.ValidationError(
                    _("%(fields)s: not waiting for an answer; nothing was saved.") % {"fields": ", ".join(unknown)}
                )
        return data

    def _sent(self, prefix: str) -> dict[str, Any]:
        """The cleaned values of the fields named ``prefix<id>`` that were sent, by id."""
        return {k[len(prefix) :]: v for k, v in self.cleaned_data.items() if k.startswith(prefix) and k in self.data}

    def part(self) -> dict[str, object]:
        """The answer part for ``give``, of the fields sent: a typed answer wins over a chosen
        option (an empty one is sent: the question stays open); decisions come one by one."""
        data = self.cleaned_data
        if self.section == "answers":
            typed = {k: str(v) for k, v in self._sent("answers.").items()}
            chosen = {k: str(v) for k, v in self._sent("choice.").items() if v}
            return {"answers": {**typed, **{k: v for k, v in chosen.items() if not typed.get(k, "").strip()}}}
        if self.section == "decisions":
            return {"decisions": self._sent("decision.")}
        part: dict[str, object] = {"action": data.get("action", "")}
        if part["action"] == "modify":
            part["markdown"] = str(data.get("markdown") or "").replace("\r\n", "\n")
        return part


KEPT_DRAFT = "kept-draft:"
"""Session key prefix of an edited draft whose save was refused (shown again on the page)."""

ANSWERED = {
    "answers": gettext_lazy("Answers sent: the team reads them, then asks its next questions or writes the draft."),
    "decisions": gettext_lazy("All points decided; the consolidator applies your decisions."),
    "next": gettext_lazy("Sent: the team goes on."),
}


def _pending_for(request: HttpRequest, task_id: str, section: str) -> tuple[Task | None, Any]:
    """The task (None when the user may not see it) and the request it waits for in
    ``section`` (None when it waits for none or the user may not act on the task)."""
    task = visible_tasks(request.user).filter(pk=task_id).first()
    if task is None or not can_operate_task(request.user, task):
        return task, None
    return task, next((r for r in pending_inputs(task_id) if r.tool in SECTIONS[section]), None)


@require_POST
def task_input(request: HttpRequest, task_id: str, section: str) -> HttpResponse:
    """Answer what the task waits for from its page (``runs.operator_inputs.give``): the
    interview, the project type, confirm-mode decisions (one by one), the phase 5 choice;
    back to the task page with what happened. Who may not see the task gets a 404, who may
    not act on it the refusal as a message (before any field is read); a field the
    ``TaskInputForm`` or ``give`` refuses shows the task page again (400) with the reason next
    to it and everything typed kept; a stale or answered request (409) says so as a message."""
    if section not in ANSWERED:
        raise Http404(f"nothing is answered at {section}")
    task, row = _pending_for(request, task_id, section)
    try:
        form = TaskInputForm(request.POST, row=row, section=section)
        valid = form.is_valid()
    except RequestDataTooBig:
        messages.error(request, _("Not saved: what you sent is larger than the server takes from a form. Use the API."))
        return redirect("task-detail", task_id=task_id)
    if task is not None and not valid:
        return _task_page(request, task, input_form=form)
    part = form.part() if valid else {}
    try:
        result = give(request.user, task_id, section, part, input_id=form.cleaned_data.get("input_id") or None)
    except DomainError as exc:
        return _input_refused(request, task, form, part, exc)
    if result["status"] == "answered":
        messages.success(request, ANSWERED[section])
    else:
        messages.info(request, _("Saved. Still to decide: %(count)d.") % {"count": len(result["missing"])})
        if section == "decisions" and result["missing"]:
            # Back where the operator is: the next point still to decide.
            return redirect(reverse("task-detail", args=[task_id]) + f"#decision-{result['missing'][0]}")
    return redirect("task-detail", task_id=task_id)


def _input_refused(
    request: HttpRequest, task: Task | None, form: TaskInputForm, part: Mapping[str, object], exc: DomainError
) -> HttpResponse:
    """``give``'s refusal on the task page: a field at fault (400) next to it on the page shown
    again; otherwise (404, 403, 409) as before, a 404 or a message on the task page, an edited
    draft kept for the page to show again, never lost."""
    if exc.status == 404 or task is None:
        raise Http404(exc.message) from None
    markdown = part.get("markdown")
    if exc.status == 400 and exc.errors:
        refuse_into(form, exc)
        return _task_page(request, task, input_form=form, kept_draft=markdown if isinstance(markdown, str) else "")
    show_refusal(request, exc)
    if isinstance(markdown, str):
        request.session[f"{KEPT_DRAFT}{task.id}"] = markdown
    return redirect("task-detail", task_id=task.id)


@require_GET
def task_compare(request: HttpRequest, task_id: str) -> HttpResponse:
    """Two tasks' artifacts side by side (``?with=<task id>``): same, changed (a diff), missing.
    Without ``with``, a page to pick the second task (the 50 newest of the same workflow)."""
    tasks = visible_tasks(request.user).prefetch_related("artifacts")
    left = get_object_or_404(tasks, pk=task_id)
    other = request.GET.get("with", "").strip()
    right = tasks.filter(pk=other).first() if other else None
    if right is None:  # ask which task (saying why when one was named), rather than a bare 404
        choices = visible_tasks(request.user).exclude(pk=left.pk).order_by("-created_at")
        if left.workflow:
            choices = choices.filter(workflow=left.workflow)
        return render(
            request,
            "monitoring/task_compare_pick.html",
            {"nav": "tasks", "left": left, "choices": list(choices[:50]), "missing": other[:80]},
            status=404 if other else 200,
        )
    return render(
        request,
        "monitoring/task_compare.html",
        {"nav": "tasks", "left": left, "right": right, "rows": compare_artifacts(left, right)},
    )


MAX_IDEA_CHARS = 2000
"""Longest one-line idea an interview starts from (characters; ``runs.tasks`` checks it too)."""
MODES = (("idea", "idea"), ("document", "document"))
DECISION_MODE_CHOICES = (("auto", "auto"), ("confirm", "confirm"))


class NewTaskForm(forms.Form):
    """The new-requirement page's two forms (``mode``): an ``idea`` (1..2,000 characters, a
    project type or none) or a ``document`` (pasted, or an uploaded file up to
    ``max_document_bytes``; a title up to 300 characters; ``stop_at_draft``), each with the
    decision mode and an optional project (its slug). ``runs.tasks.start_task`` checks the
    document itself (empty, binary, not UTF-8, over the token budget) and project membership;
    its refusal is put on the form (``refuse_into``). Without ``mode`` (a client posting a
    document without saying which form) a pasted or uploaded document means ``document``."""

    mode = forms.ChoiceField(choices=MODES, required=False, label=gettext_lazy("Which form"))
    description = forms.CharField(
        required=False, max_length=MAX_IDEA_CHARS, label=gettext_lazy("Your idea, in a line or two")
    )
    project_type = forms.CharField(required=False, max_length=64, label=gettext_lazy("Project type"))
    title = forms.CharField(required=False, max_length=MAX_TITLE_CHARS, label=gettext_lazy("Title (optional)"))
    document = forms.FileField(required=False, label=gettext_lazy("Upload a Markdown file"))
    input_markdown = forms.CharField(required=False, strip=False, label=gettext_lazy("…or paste it"))
    stop_at_draft = forms.BooleanField(required=False)
    decision_mode = forms.ChoiceField(
        choices=DECISION_MODE_CHOICES, required=False, label=gettext_lazy("Who decides the contested points")
    )
    project = forms.CharField(required=False, max_length=64, label=gettext_lazy("Project"))

    def clean_project_type(self) -> str:
        """A known project type, or '' (the team matches it)."""
        value = str(self.cleaned_data["project_type"])
        if value and value not in project_types():
            raise forms.ValidationError(_("Choose one of the listed project types."))
        return value

    def clean_document(self) -> object:
        """The uploaded file, refused when larger than ``max_document_bytes``."""
        upload = self.cleaned_data.get("document")
        if upload is not None and (upload.size or 0) > max_document_bytes():
            reason = _("The file is %(size)s bytes; the limit is %(limit)s bytes.")
            raise forms.ValidationError(reason % {"size": f"{upload.size:,}", "limit": f"{max_document_bytes():,}"})
        return upload

    def clean_project(self) -> Project | None:
        """The project the slug names, or None (the global configuration)."""
        slug = str(self.cleaned_data["project"])
        project = Project.objects.filter(slug=slug).first() if slug else None
        if slug and project is None:
            raise forms.ValidationError(_("There is no project “%(slug)s”.") % {"slug": slug})
        return project

    def clean(self) -> dict[str, object]:
        """Which form was sent, and what that form needs: an idea, or a document."""
        data = super().clean() or {}
        data["mode"] = data.get("mode") or sent_mode(self.data, self.files)
        data["decision_mode"] = data.get("decision_mode") or "auto"
        if data["mode"] == "idea" and "description" in data and not str(data["description"]).strip():
            self.add_error("description", _("Write your idea in a line or two."))
        pasted = str(data.get("input_markdown") or "")
        if data["mode"] == "document" and not data.get("document") and "input_markdown" in data and not pasted.strip():
            self.add_error("input_markdown", _("The document is empty: paste it or upload a Markdown file."))
        return data


def _start_from_form(request: HttpRequest, data: dict[str, object]) -> Task:
    """Start the requirement_review a valid ``NewTaskForm`` asks for: from an idea (the
    interview) or a document (review, or the draft first). Raises DocumentError naming the
    field (put on the form by the view)."""
    project = data["project"] if isinstance(data["project"], Project) else None
    if data["mode"] == "idea":
        return start_task(
            workflow="requirement_review",
            description=str(data["description"]),
            project_type=str(data["project_type"]),
            project=project,
            user=request.user,
            decision_mode=str(data["decision_mode"]),
        )
    upload = data.get("document")
    raw: bytes | str = (
        upload.read(max_document_bytes() + 1) if isinstance(upload, UploadedFile) else str(data["input_markdown"])
    )
    return start_task(
        workflow="requirement_review",
        input_markdown=raw,
        title=str(data["title"]),
        start_at="draft" if data["stop_at_draft"] else "review",
        project=project,
        user=request.user,
        decision_mode=str(data["decision_mode"]),
    )


def sent_mode(data: Mapping[str, Any], files: Mapping[str, Any]) -> str:
    """Which of the new-requirement page's forms was sent: its ``mode``, else ``document``
    when a document was pasted or uploaded, else ``idea``."""
    mode = data.get("mode")
    if mode in ("idea", "document"):
        return str(mode)
    return "document" if "input_markdown" in data or "document" in files else "idea"


def _task_forms(form: NewTaskForm | None) -> dict[str, NewTaskForm]:
    """The page's idea and document forms: the one that was sent (bound, with its reasons and
    what was typed) and a fresh one for the other."""
    sent = sent_mode(form.data, form.files) if form is not None else ""
    fresh = {mode: NewTaskForm(initial={"mode": mode, "decision_mode": "auto"}) for mode in ("idea", "document")}
    return {f"{mode}_form": form if form is not None and sent == mode else fresh[mode] for mode in fresh}


@require_http_methods(["GET", "POST"])
def task_new(request: HttpRequest) -> HttpResponse:
    """Start the requirement work: from a one-line idea (project type, interview, draft) or
    from a pasted or uploaded Markdown document (the review, or the draft first); decisions
    by the rules or by the operator (confirm mode). A refused form is shown again (400) with
    what was typed and each reason next to its field (``NewTaskForm``)."""
    form: NewTaskForm | None = None
    if request.method == "POST":
        form = NewTaskForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                task = _start_from_form(request, form.cleaned_data)
            except DocumentError as exc:
                fields = {"task_description": "description", "start_at": "mode"}
                if form.cleaned_data.get("document") is not None:
                    fields["input_markdown"] = "document"
                refuse_into(form, exc, fields=fields)
            else:
                started = (
                    _("The interview started: answer its questions below.")
                    if form.cleaned_data["mode"] == "idea"
                    else _("Review started; the experts are on it.")
                )
                messages.success(request, started)
                return redirect("task-detail", task_id=task.id)
    return render(
        request,
        "monitoring/task_new.html",
        {
            "nav": "tasks",
            **_task_forms(form),
            "refused": form,
            "projects": visible_projects(request.user),
            "project_types": project_type_labels(get_language()),
            "limit": max_document_bytes(),
        },
        status=400 if form is not None else 200,
    )


@require_POST
def run_demo(request: HttpRequest) -> HttpResponse:
    """ "Run demo": review the bundled sample requirement (an online bookstore), paced by
    ``TEAMCLAW_DEMO_THINK_MS`` per agent call so the page shows the team at work. Each demo
    is numbered in its title ("Demo 2: ..."), in the operator's language, so runs tell apart;
    the sample is in the operator's language too, so a Chinese operator's demo reads in Chinese."""
    sample = sample_requirement(get_language() or "en")
    samples = {sample_requirement(code) for code, _name in settings.LANGUAGES}
    number = Task.objects.filter(workflow="requirement_review", input_markdown__in=samples).count() + 1
    task = start_task(
        workflow="requirement_review",
        input_markdown=sample,
        title=_("Demo %(number)s: online bookstore order tracking") % {"number": number},
        user=request.user,
        think_time_ms=int(settings.TEAMCLAW["DEMO_THINK_MS"]),
    )
    messages.success(request, _("Demo started: four experts are reviewing the sample requirement."))
    return redirect("task-detail", task_id=task.id)


@require_GET
def task_artifact(request: HttpRequest, task_id: str, name: str) -> HttpResponse:
    """One artifact's whole content as text (the pages show the first 20,000 characters)."""
    task = visible_tasks(request.user).filter(pk=task_id).first()
    artifact = Artifact.objects.filter(task=task, name=name).first() if task else None
    if artifact is None:
        raise Http404(f"task {task_id} has no artifact {name}")
    download = bool(request.GET.get("download"))
    # Inline it is plain text (every browser shows it); a download carries its own type.
    content_type = (
        "text/plain"
        if not download
        else "application/json"
        if artifact.name.endswith(".json")
        else "text/markdown"
        if artifact.name.endswith(".md")
        else "text/plain"
    )
    response = HttpResponse(artifact.content, content_type=f"{content_type}; charset=utf-8")
    disposition = "attachment" if download else "inline"
    response["Content-Disposition"] = f"{disposition}; filename*=UTF-8''{quote(artifact.name)}"
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def task_document(request: HttpRequest, task_id: str, name: str) -> HttpResponse:
    """One Markdown artifact of a task as a page: its title in words
    (``outcome_labels.document_title``), the text rendered and sanitised, a way back to the
    task, the diff against the final document for a revision, and the download. 404 for a
    task the user cannot see or an artifact that is not Markdown (those open as text at
    ``task-artifact``)."""
    task = get_object_or_404(visible_tasks(request.user), pk=task_id)
    artifact = get_object_or_404(Artifact, task=task, name=name, name__endswith=".md")
    return render(request, "monitoring/task_document.html", {"nav": "tasks", "task": task, "artifact": artifact})


@require_GET
def task_diff(request: HttpRequest, task_id: str) -> HttpResponse:
    """Two artifacts of one task side by side (``?a=requirement.md&b=requirement_final.md``,
    or two draft revisions; ``prompts.diff.diff_texts``: difflib, changed words marked): what
    the review or the operator's edit changed, counted as changed, added and removed lines (a
    line changed in place counts once); for a revision of the final document also the answers
    written in and the open points resolved (``monitoring.outcome.revision_summary``). 404
    when one is missing; a side of more than ``runs.compare.MAX_DIFF_INPUT_LINES`` lines is
    not compared (both download instead)."""
    task = get_object_or_404(visible_tasks(request.user), pk=task_id)
    names = request.GET.get("a", "requirement.md"), request.GET.get("b", "requirement_final.md")
    found = {a.name: a.content for a in Artifact.objects.filter(task=task, name__in=names)}
    missing = [name for name in names if name not in found]
    too_large = not missing and too_large_to_diff(found[names[0]], found[names[1]])
    diff = None if missing or too_large else diff_texts(found[names[0]], found[names[1]])
    context = {"nav": "tasks", "task": task, "names": names, "missing": missing, "diff": diff, "too_large": too_large}
    if names[0] == "requirement_final.md" and not missing:  # a revision: say it as the operator reads it
        context["revision"] = revision_summary(task, names[1])
    return render(request, "monitoring/task_diff.html", context, status=404 if missing else 200)


@require_GET
def task_trace(request: HttpRequest, task_id: str) -> HttpResponse:
    """The task's trace (``monitoring.trace``): its agents and every call they made, each
    with latency, tokens, status, round, input and output; an expert's call shows the
    findings of the artifact it wrote with the document line each one quotes. While the task
    runs the tree is refreshed every few seconds (htmx)."""
    task = visible_tasks(request.user).filter(pk=task_id).first()
    if task is None:
        raise Http404(f"there is no task {task_id}")
    trace = task_trace_tree(task)
    artifacts = {a.name: a.content for a in Artifact.objects.filter(task=task)}
    document = artifacts.get("requirement.md") or task.input_markdown or ""
    findings = {name: artifact_findings(content, document) for name, content in artifacts.items()}
    for agent in trace["nodes"]:
        for call in agent["children"]:
            call["findings"] = [
                {"artifact": name, "items": findings[name]}
                for name in call["links"].get("artifacts", [])
                if findings.get(name)
            ]
    context = {
        "task": task,
        "trace": trace,
        "running": task.status in ("queued", "running"),
        "open_node": request.GET.get("node", ""),  # a replay step's "Open in the trace"
    }
    return fragment_or_page(request, "monitoring/task_trace.html", context, part="tree")


def unclear_answer(findings: list[dict[str, str]]) -> str:
    """The page's words for an answer saved that the engine still finds unclear."""
    reasons = " ".join(f["message"] for f in findings)
    return _("Your answer is saved, but the point stays open: %(reason)s Give a figure, a unit or a named rule.") % {
        "reason": reasons
    }


class OpenPointAnswerForm(forms.Form):
    """An answer to one open point (``runs.open_points.answer_open_point`` checks the rest)."""

    answer = forms.CharField(max_length=MAX_ANSWER_CHARS, strip=True)


@require_POST
def task_open_point(request: HttpRequest, task_id: str, point_id: str) -> HttpResponse:
    """Answer an open point of a finished review from its Outcome panel (``runs.open_points``).
    An htmx request gets the point again (answered, or with the refusal under its box, 400)
    and the panel's "N of M left" heading out of band (``hx-swap-oob``), so the count follows;
    a plain form post goes back to the task page with what happened as a message."""
    form = OpenPointAnswerForm(request.POST)
    errors: list[str] = []
    saved: dict[str, Any] = {}
    if form.is_valid():
        try:
            saved = answer_open_point(request.user, task_id, point_id, form.cleaned_data["answer"])
        except DomainError as exc:
            if exc.status == 404:
                raise Http404(exc.message) from None
            errors = [reason for reasons in exc.errors.values() for reason in reasons] or [exc.message]
    else:
        errors = [str(e) for e in form.errors.get("answer", [])]
    if not wants_fragment(request):
        if errors:
            messages.error(request, _("The answer was not saved: %(reason)s") % {"reason": " ".join(errors)})
        elif saved.get("unclear"):
            messages.warning(request, unclear_answer(saved["unclear"]))
        else:
            messages.success(request, _("Your answer is saved."))
        return redirect(f"{reverse('task-detail', args=[task_id])}#open-point-{quote(point_id)}")
    task = get_object_or_404(visible_tasks(request.user), pk=task_id)
    points = open_points(task)
    point = next((p for p in points if p["id"] == point_id), None)
    if point is None:
        raise Http404(f"task {task_id} has no open point {point_id}")
    context = {
        "task": task,
        "point": point,
        "can_answer": can_operate_task(request.user, task),
        "form_errors": errors,
        "form_value": form["answer"].value() or "",
    }
    title = render_to_string(
        "monitoring/_open_points_title.html",
        {"oob": True, "open_points": points, "open_points_left": sum(1 for p in points if still_open(p))},
        request=request,
    )
    answered = render_to_string("monitoring/_open_point.html", context, request=request)
    return HttpResponse(answered + title, status=400 if errors else 200)


def _revise_refusal(code: str) -> str:
    """The page's words for a 409 of ``runs.open_points.revise_final_document``, by its code."""
    reasons = {
        "no_final_document": _("The document was not revised: this task wrote no final document."),
        "revision_race": _("The document was not revised: another revision was written at the same moment. Try again."),
        "no_answer": _("The document was not revised: answer at least one open point first."),
    }
    return reasons.get(
        code, _("The document was not revised: answer at least one open point of a finished review first.")
    )


@require_POST
def task_revise(request: HttpRequest, task_id: str) -> HttpResponse:
    """Write the operator's answers into a new version of the final document from the Outcome
    panel (``runs.open_points.revise_final_document``; the original is kept) and go back to
    the panel's list of revisions. 404 for a task the user may not see, 403 for one they may
    not act on; before the outcome or without an answer the page says so."""
    back = f"{reverse('task-detail', args=[task_id])}#revisions"
    try:
        revision, created = revise_final_document(request.user, task_id)
    except DomainError as exc:
        if exc.status == 404:
            raise Http404(exc.message) from None
        if exc.status == 403:
            refusal = _("only the user who started this task or a staff user may revise its document")
            raise PermissionDenied(refusal) from None
        messages.error(request, _revise_refusal(exc.code))
        return redirect(back)
    if created:
        messages.success(
            request,
            _("Revision %(version)s of the final document is written with your answers; the original is kept.")
            % {"version": revision["version"]},
        )
    else:
        messages.info(
            request,
            _("Revision %(version)s already holds these answers: nothing new was written.")
            % {"version": revision["version"]},
        )
    return redirect(back)

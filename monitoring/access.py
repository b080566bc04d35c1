"""Who may see and operate which task's execution (PRD §4.6, US-04/05/08/11).

Every page, API call and socket needs a login (docs/architecture.md §9). Beyond that, runs are
private to the people responsible for them:

- **see every task**: staff, superusers and users holding ``monitoring.view_task``;
- **see a task**: the above, and the user who started it (``Task.created_by``);
- **operate a task** (send a user instruction, take a manual snapshot): staff, superusers
  and the user who started it;
- **decide tool confirmations** (PRD §4.7 ⚠️: code execution, deployment, network...): staff
  and superusers only, as ``POST /api/v1/confirmations/{id}`` requires.

A task nobody started (a standalone invoke or hook from the API, a command-line run) is
visible to the see-every-task group only. A task, context or snapshot the user may not see
is answered as *not found*, so its existence does not leak.

**Projects** (issue 31) are for their members (``Project.members``) and the see-every-task
group: only they may start a task in one (``can_use_project``, checked by
``runs.tasks.start_task`` and every path that runs in a project's scope: the API, the pages,
A2A, an outside invoke, a workflow run) and read its knowledge sources, chunks and search
results (``visible_projects``, ``readable_knowledge``). Knowledge of no project (a role's, a
skill's) is for every signed-in user. So the sources an agent retrieves for a task (its
project's) are sources the user who started it may read. A project the user may not use is
answered as not existing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from capabilities.models import Project
from monitoring.models import ExecutionContext, Task


def sees_every_task(user: Any) -> bool:
    """True for active staff, superusers and holders of ``monitoring.view_task``."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_staff or user.is_superuser or user.has_perm("monitoring.view_task"))


def visible_tasks(user: Any) -> QuerySet[Task]:
    """The tasks ``user`` may see (none for an anonymous user)."""
    if sees_every_task(user):
        return Task.objects.all()
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return Task.objects.none()
    return Task.objects.filter(created_by=user)


def visible_contexts(user: Any) -> QuerySet[ExecutionContext]:
    """The execution contexts of the tasks ``user`` may see."""
    if sees_every_task(user):
        return ExecutionContext.objects.all()
    return ExecutionContext.objects.filter(task__in=visible_tasks(user).values("id"))


def visible_projects(user: Any) -> QuerySet[Project]:
    """The projects ``user`` may use (start tasks in, read the knowledge of): every one for
    the see-every-task group, else those it is a member of (``Project.members``); none
    anonymously."""
    if sees_every_task(user):
        return Project.objects.all()
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return Project.objects.none()
    return Project.objects.filter(members=user)


def can_use_project(user: Any, project: Project | None) -> bool:
    """Whether ``user`` may start a task in ``project`` or read its knowledge: always for
    the global scope (None) and for a run with no user (a terminal's ``run_workflow``),
    else ``visible_projects``."""
    if project is None or user is None:
        return True
    return visible_projects(user).filter(pk=project.pk).exists()


def readable_knowledge(user: Any) -> Q:
    """A filter of ``knowledge.KnowledgeSource`` to what ``user`` may read: ``Q()`` (all)
    for the see-every-task group, else the sources of no project and those of
    ``visible_projects``; nothing for an anonymous user."""
    if sees_every_task(user):
        return Q()
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return Q(pk__in=[])
    return Q(project__isnull=True) | Q(project__in=visible_projects(user))


def can_view_task(user: Any, task: Task) -> bool:
    """Whether ``user`` may see ``task`` (see module docstring)."""
    if sees_every_task(user):
        return True
    return bool(getattr(user, "is_authenticated", False) and user.is_active and task.created_by_id == user.pk)


def can_operate_task(user: Any, task: Task) -> bool:
    """Whether ``user`` may act on ``task``'s agents: confirmations, instructions, snapshots."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_staff or user.is_superuser or task.created_by_id == user.pk)


def can_decide_confirmations(user: Any) -> bool:
    """Whether ``user`` may approve or reject tool confirmations (staff and superusers)."""
    return bool(getattr(user, "is_authenticated", False) and user.is_active and (user.is_staff or user.is_superuser))


@dataclass(frozen=True, slots=True)
class Viewer:
    """What a websocket consumer needs to filter live events without touching the database:
    ``user_id`` and whether the user sees every task (see module docstring)."""

    user_id: int
    sees_all: bool

    @classmethod
    def for_user(cls, user: Any) -> Viewer:
        """The viewer for an authenticated ``user`` (runs permission queries: call it off the event loop)."""
        return cls(user_id=user.pk, sees_all=sees_every_task(user))

    def may_see(self, owner_id: int | None, public: bool = False) -> bool:
        """Whether an event about a task started by ``owner_id`` (None: nobody) is for this viewer."""
        return public or self.sees_all or (owner_id is not None and owner_id == self.user_id)

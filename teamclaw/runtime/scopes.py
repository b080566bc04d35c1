"""Where a role's ``max_concurrent_instances`` counts (PRD §4.7 约束: 4 instances per role;
issue 28 "concurrency that scales"; docs/architecture.md §3 "Instance scopes").

Each task has a counting scope, and so has each instance (``AgentInstance.scope``): a call
is routed only to the instances of its task's scope, and the limit counts them alone.

- ``task:<task id>`` (the default): a task's own instances. The task runs on one runtime
  worker, so the runtime counts them itself (no shared slot is taken), and no task ever
  waits for an instance another task holds: a main instance waiting for its operator blocks
  nothing but its own task. They are retired when the task ends.
- ``project:<slug>`` (the option ``TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT``, a list of project
  slugs or ``*`` for every project): the tasks of that project, and the calls from outside
  any task made in it, share the role's instances,
  held across runtime workers by the shared slots (``teamclaw.runtime.slots``) under the
  key ``<role>@<slug>`` (``slot_key``).
- ``""``: the calls from outside any task (a standalone invoke or hook, each in a short task
  of its own) of the other projects share the role's instances across workers, as every
  call did before.
"""

from __future__ import annotations

from collections.abc import Collection

TASK = "task:"
PROJECT = "project:"
EVERY_PROJECT = "*"
"""In the per-project list: every project counts per project."""


def scope_of(task_id: str, project_id: str | None, kind: str, per_project: Collection[str] = ()) -> str:
    """The counting scope of a task (module docstring). ``kind`` is ``task`` for a task, or
    ``invoke`` / ``hook`` for the short task around an outside call; ``per_project`` the
    project slugs whose tasks share their instances (``*``: every project's)."""
    if project_id and (project_id in per_project or EVERY_PROJECT in per_project):
        return f"{PROJECT}{project_id}"
    return f"{TASK}{task_id}" if kind == "task" else ""


def own_task(scope: str) -> bool:
    """True for a task's own scope: counted by the runtime running the task, no shared slot."""
    return scope.startswith(TASK)


def slot_key(role: str, scope: str) -> str:
    """The key of ``role``'s shared slots in ``scope`` (``""`` or ``project:<slug>``):
    ``role``, or ``<role>@<slug>`` (at most 40 + 1 + 64 characters)."""
    return f"{role}@{scope.removeprefix(PROJECT)}" if scope else role

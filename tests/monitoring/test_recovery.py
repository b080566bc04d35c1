"""``manage.py mark_interrupted`` (run by ``make run`` before serving): what a stopped server
left open is closed, and the operator is told what work was cut short."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from monitoring.models import AgentInstance, ExecutionContext, Task

pytestmark = pytest.mark.django_db


def instance(instance_id: str, status: str = "idle") -> AgentInstance:
    now = timezone.now()
    return AgentInstance.objects.create(
        instance_id=instance_id, role="dba", status=status, created_at=now, last_heartbeat=now
    )


def run_command() -> str:
    out = StringIO()
    call_command("mark_interrupted", stdout=out)
    return out.getvalue()


def test_idle_instances_of_the_last_run_are_closed_without_calling_them_interrupted():
    instance("dba-1")
    instance("dba-2")
    instance("dba-0", status="terminated")
    assert run_command() == "Closed 2 agent instances of the previous run.\n"
    assert set(AgentInstance.objects.values_list("status", flat=True)) == {"terminated"}


def test_a_task_cut_short_fails_with_the_reason_and_is_reported():
    task = Task.objects.create(id="t-running", kind="task", title="Review", status="running")
    done = Task.objects.create(id="t-done", kind="task", title="Old", status="completed")
    ExecutionContext.objects.create(
        id="c1",
        task=task,
        instance_id="dba-1",
        role="dba",
        status="executing",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )
    instance("dba-1", status="busy")
    out = run_command()
    assert out == "1 tasks, 1 contexts marked as interrupted.\nClosed 1 agent instances of the previous run.\n"
    task.refresh_from_db()
    assert task.status == "failed"
    assert task.error["code"] == "interrupted"
    assert task.finished_at is not None
    assert Task.objects.get(pk=done.pk).status == "completed"
    assert ExecutionContext.objects.get(pk="c1").status == "terminated"
    assert run_command() == ""  # a second run finds nothing left open

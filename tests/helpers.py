"""Test helpers: wait for the runtime (poll the database after flushing the recorder), and
take the database's state to show a refused request changed nothing."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.test import Client
from rest_framework.test import APIClient

from monitoring.models import Task

STATE_APPS = ("capabilities", "monitoring", "prompts", "interop", "authtoken")


def database_state() -> dict[str, list[dict[str, Any]]]:
    """Every row of the TeamClaw apps' tables and the API tokens: what a refusal must not change."""
    models = [m for label in STATE_APPS for m in apps.get_app_config(label).get_models()]
    return {m._meta.label: list(m.objects.order_by("pk").values()) for m in models}


def wait_for_task(host, task_id: str, timeout: float = 60) -> Task:
    """Return the task once it has ended (recorder flushed), or fail the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host.recorder.flush()
        task = Task.objects.get(pk=task_id)
        if task.status not in ("queued", "running"):
            return task
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} still running after {timeout} s")


def missing_service(what: str) -> None:
    """Skip this test for want of ``what`` (a server the test needs, named with its address),
    except when ``CI`` is set: CI runs PostgreSQL and Redis on the machine, so a missing one
    there is a failure, not a skip (issue 28, point 6)."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} does not answer, and CI must run this test (CI is set)")
    pytest.skip(f"{what} does not answer")


def postgres_and_redis(redis_url: str) -> None:
    """For the tests of real worker processes: skip (or, under ``CI``, fail) unless the test
    database is PostgreSQL and Redis answers at ``redis_url``, which is then emptied."""
    import redis
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (the PostgreSQL pass of make test)")
    try:
        redis.Redis.from_url(redis_url, socket_connect_timeout=2).ping()
    except redis.RedisError:
        missing_service(f"Redis at {redis_url}")
    redis.Redis.from_url(redis_url).flushdb()


def held_project(slug: str = "held") -> None:
    """A project where main's ``file_write`` needs the operator's confirmation."""
    from capabilities.models import AgentRole, Project, ToolPermission

    held = Project.objects.create(slug=slug, name="Held for the operator")
    ToolPermission.objects.create(
        project=held, role=AgentRole.objects.get(role="main"), tool="file_write", mode="confirm"
    )


@dataclass
class Reader:
    """One user on the API and on the pages at once."""

    api: APIClient
    page: Client


def reader(user: Any) -> Reader:
    """``user`` signed in on an API client and a page client."""
    api = APIClient()
    api.force_authenticate(user)
    page = Client()
    page.force_login(user)
    return Reader(api, page)

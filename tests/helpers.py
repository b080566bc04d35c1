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

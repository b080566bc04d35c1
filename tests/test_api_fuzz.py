"""Schemathesis over the generated OpenAPI document (issue 17): for every operation, a few
generated requests with a staff token through the app (WSGI, this test's database, rolled
back after), checked for no server error, a documented status code, a documented content
type and a body that matches the response schema where one is declared. Seeded
(``derandomize``) and bounded (``MAX_EXAMPLES`` per operation), so it is the same run each
time. Operations that start or command the runtime (which runs on its own threads and
database connections) or are rate limited are left to their own tests: ``LEFT_OUT``."""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given, settings
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi import _hypothesis as openapi_hypothesis
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

MAX_EXAMPLES = 4
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
LEFT_OUT = {
    ("POST", "/api/v1/auth/token"): "rate limited (20 a minute), tests/test_access.py",
    ("POST", "/api/v1/capabilities/invoke"): "runs on the runtime, tests/test_runtime_api.py",
    ("POST", "/api/v1/hooks"): "runs on the runtime, tests/test_runtime_api.py",
    ("POST", "/api/v1/tasks"): "starts the runtime, tests/test_tasks_api.py",
    ("POST", "/api/v1/workflows/{workflow_id}/run"): "starts the runtime, tests/skills/test_workflows.py",
    ("POST", "/api/v1/tasks/{task_id}/fork"): "starts the runtime, tests/test_fork.py",
    ("POST", "/api/v1/tasks/{task_id}/cancel"): "commands the runtime, tests/test_tasks_api.py",
    ("POST", "/api/v1/contexts/{context_id}/snapshots"): "commands the runtime, tests/test_contexts_api.py",
    ("POST", "/api/v1/contexts/{context_id}/instructions"): "commands the runtime, tests/test_contexts_api.py",
    ("GET", "/api/v1/capabilities/{capability_id}/health"): "asks the runtime, tests/test_runtime_api.py",
    ("GET", "/api/v1/health/{capability_id}"): "asks the runtime, tests/skills/test_health_metrics_alerts.py",
}


@pytest.fixture(autouse=True)
def generation_without_the_canonical_path(monkeypatch):
    """schemathesis 4.24 first tries jsonschema-rs's canonical form of a schema and falls back
    to hypothesis-jsonschema when there is none; the pinned jsonschema-rs (0.61) has
    ``canonicalize`` but not ``CanonicalSchema.is_satisfiable``, so every case failed to
    generate. Until the pins agree, take the fallback the library itself uses (cases still come
    from each operation's schema)."""
    if not hasattr(jsonschema_rs.canonicalize({"type": "string"}), "is_satisfiable"):
        monkeypatch.setattr(openapi_hypothesis, "_canonical_strategy_or_none", lambda *args, **kwargs: None)


@pytest.fixture
def wsgi_app():
    """Django's WSGI application inside this test's transaction: as Django's test client
    does, requests do not close the connection (which would end the transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def exercise(operation: Any, headers: dict[str, str], failures: dict[str, str]) -> None:
    """Run ``MAX_EXAMPLES`` seeded cases of ``operation``; its first failure (if any) goes to
    ``failures`` under ``METHOD /path`` (collected rather than raised: no shrinking, and every
    failing operation is reported, not only the first)."""
    label = f"{operation.method.upper()} {operation.path}"

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def run(case: Any) -> None:
        if label in failures:
            return
        try:
            case.call_and_validate(headers=headers, checks=CHECKS)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # schemathesis's FailureGroup is a BaseExceptionGroup
            failures[label] = f"{type(exc).__name__}: {str(exc)[:300]} ... {str(exc)[-1200:]}"

    run()


def test_every_operation_answers_as_its_schema_says(builtin, staff_user, wsgi_app):
    schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    schema.app = wsgi_app
    headers = {"Authorization": f"Token {Token.objects.create(user=staff_user).key}"}
    failures: dict[str, str] = {}
    ran = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in LEFT_OUT:
            continue
        ran += 1
        exercise(operation, headers, failures)
    assert ran > 50
    assert not failures, "\n\n".join(f"{label}\n{reason}" for label, reason in failures.items())

"""Schemathesis over the generated OpenAPI document (issue 17, issue 31): for every operation,
a few generated requests with a staff token through the app (WSGI, this test's database,
rolled back after), each checked by every check schemathesis has (its own registry, not a
hand list): no server error; a documented status code, content type, headers and body; a
request the schema allows is accepted (``positive_data_acceptance``) and one it forbids is
refused (``negative_data_rejection``), so the document says exactly what the server takes;
auth is not ignored; an undocumented method is refused. Cases are drawn as schemathesis's
own runner draws them, from the schema's valid and invalid data at once. Seeded
(``derandomize``) and bounded (``MAX_EXAMPLES`` per operation), so it is the same run each
time.

Operations that start or command the runtime (which runs on its own threads and database
connections) or are rate limited are left to their own tests: ``LEFT_OUT``. A body field
that must name something that exists (a role, a project) cannot be told by a schema; a 400
naming only that field is the server's honest answer to a well-formed name of nothing:
``NAMES_THAT_MUST_EXIST``."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.core.failures import Failure
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi import _hypothesis as openapi_hypothesis
from schemathesis.specs.openapi.checks import positive_data_acceptance
from schemathesis.transport.wsgi import WSGI_TRANSPORT

MAX_EXAMPLES = 6
LEFT_OUT = {
    ("POST", "/api/v1/auth/token"): "rate limited (20 a minute), tests/web/test_access.py",
    ("POST", "/api/v1/capabilities/invoke"): "runs on the runtime, tests/runs/test_runtime_api.py",
    ("POST", "/api/v1/hooks"): "runs on the runtime, tests/runs/test_runtime_api.py",
    ("POST", "/api/v1/tasks"): "starts the runtime, tests/runs/test_tasks_api.py",
    ("POST", "/api/v1/workflows/{workflow_id}/run"): "starts the runtime, tests/skills/test_workflows.py",
    ("POST", "/api/v1/tasks/{task_id}/fork"): "starts the runtime, tests/runs/test_fork.py",
    ("POST", "/api/v1/tasks/{task_id}/cancel"): "commands the runtime, tests/runs/test_tasks_api.py",
    ("POST", "/api/v1/contexts/{context_id}/snapshots"): "commands the runtime, tests/monitoring/test_contexts_api.py",
    (
        "POST",
        "/api/v1/contexts/{context_id}/instructions",
    ): "commands the runtime, tests/monitoring/test_contexts_api.py",
    ("GET", "/api/v1/capabilities/{capability_id}/health"): "asks the runtime, tests/runs/test_runtime_api.py",
    ("GET", "/api/v1/health/{capability_id}"): "asks the runtime, tests/skills/test_health_metrics_alerts.py",
}
WORKFLOW_REFERENCES = frozenset(
    {
        *(f"orchestration.steps[*].{key}" for key in ("capability", "input", "output", "condition")),
        *(f"orchestration.steps[*].{key}" for key in ("next", "cases", "default", "id")),
        "orchestration.steps[*]$",  # unreachable
        "orchestration.steps$",  # the steps loop
    }
)
"""A workflow's references (``web.api.workflows.workflow_document_schema``): the capability a
step calls, step ids and the steps a ``next`` or a ``${...}`` names, reachability and loops."""
NAMES_THAT_MUST_EXIST: dict[tuple[str, str], frozenset[str]] = {
    ("POST", "/api/v1/auth/role-tokens"): frozenset({"role"}),
    ("POST", "/api/v1/knowledge/folders"): frozenset({"project"}),
    ("PUT", "/api/v1/permissions/invoke-matrix"): frozenset({"matrix"}),  # rows and columns are roles
    ("PUT", "/api/v1/permissions/tool-matrix"): frozenset({"matrix"}),
    ("POST", "/api/v1/permissions/invoke-matrix/what-if"): frozenset({"matrix"}),
    ("POST", "/api/v1/permissions/tool-matrix/what-if"): frozenset({"matrix"}),
    ("POST", "/api/v1/projects"): frozenset({"slug", "members"}),  # a new slug; members: existing users
    ("PATCH", "/api/v1/projects/{slug}"): frozenset({"members"}),
    ("POST", "/api/v1/mcp-sources"): frozenset({"name", "project", "command", "url"}),  # allowlists
    ("POST", "/api/v1/workflows"): WORKFLOW_REFERENCES,
    # roles that must exist, a host on the allowlist, JSON Schemas checked against the meta-schema
    ("POST", "/api/v1/capabilities"): frozenset(
        {"owner_roles", "executor_config.url", "input_schema", "output_schema"}
    ),
    ("PUT", "/api/v1/workflows/{workflow_id}"): WORKFLOW_REFERENCES,
    ("POST", "/api/v1/roles"): frozenset(  # roles and cards that must exist, a new slug, one list per tool
        {"role", "capabilities", "copy_prompts_from", "constraints.max_concurrent_instances"}
        | {f"permissions.{name}" for name in ("can_invoke", "can_be_invoked_by", "max_concurrent_instances")}
        | {f"permissions.{name}" for name in ("allowed_tools", "denied_tools", "requires_user_confirmation")}
    ),
}
"""Body fields naming a role, project, capability or allowed command or host (a matrix's rows
and columns are roles), or a new name that must not be taken: a 400 naming only these (or
paths inside them) is not a refused valid body. Each field's schema description says so."""
SCHEMA_GAPS: dict[tuple[str, str], str] = {
    ("POST", "/api/v1/knowledge/sources"): "the file must be UTF-8 text of a listed kind, at most 1 MB, with one "
    "existing role, skill or project as its scope (knowledge.sources)",
    ("POST", "/api/v1/config/import"): "the document's schema is the body's (JSON and YAML), but the names it holds "
    "(roles, cards, matrix rows and columns) and the prompts' templates are checked by team.config_import",
    ("POST", "/api/v1/skills"): "the skill-index schema is the body's, but unique names, alert conditions and "
    "durations, defaults of their type and PROVIDER-only implementations are checked by capabilities.skill_index",
}
"""Operations whose request body the document does not yet describe in full (the server checks
more in the domain and names every refused field): positive data acceptance is not asked of
them; every other check is. Issue 31 follow-up: shrink this to nothing."""
SESSION_COOKIE = "sessionid"


@pytest.fixture(autouse=True)
def generation_without_the_canonical_path(monkeypatch):
    """schemathesis 4.24 first tries jsonschema-rs's canonical form of a schema and falls back
    to hypothesis-jsonschema when there is none; the pinned jsonschema-rs (0.61) has
    ``canonicalize`` but not ``CanonicalSchema.is_satisfiable``, so every case failed to
    generate. Until the pins agree, take the fallback the library itself uses (cases still come
    from each operation's schema)."""
    if not hasattr(jsonschema_rs.canonicalize({"type": "string"}), "is_satisfiable"):
        monkeypatch.setattr(openapi_hypothesis, "_canonical_strategy_or_none", lambda *args, **kwargs: None)


@pytest.fixture(autouse=True)
def multipart_of_any_value():
    """schemathesis 4.24 hands werkzeug a multipart body as a mapping, so a
    negative case whose body is no object (``true``, ``140``) fails in the client with an
    AttributeError before any request is sent. Such a body is sent as its JSON text under the
    multipart Content-Type, as a careless client would, so the server's answer is what is
    checked (a 400: it is no multipart body)."""
    original = WSGI_TRANSPORT._serializers["multipart/form-data"]

    def serialize(ctx: Any, value: Any) -> dict[str, Any]:
        if isinstance(value, dict):
            return original(ctx, value)
        return {"data": json.dumps(value).encode()}

    WSGI_TRANSPORT.serializer("multipart/form-data")(serialize)
    yield
    WSGI_TRANSPORT.serializer("multipart/form-data")(original)


@pytest.fixture
def wsgi_app():
    """Django's WSGI application inside this test's transaction: as Django's test client
    does, requests do not close the connection (which would end the transaction)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def nul_in_a_key(value: Any) -> bool:
    """Whether a key of an object anywhere in ``value`` holds U+0000: the JSON parser refuses
    it (400 naming its path), and OpenAPI 3.0 has no ``propertyNames`` to say so of a map."""
    if isinstance(value, dict):
        return any("\x00" in str(key) or nul_in_a_key(item) for key, item in value.items())
    if isinstance(value, list):
        return any(nul_in_a_key(item) for item in value)
    return False


def refused_nul_key(response: Any, case: Any) -> bool:
    """Whether ``response`` is the parser's 400 for a NUL in a key of ``case``'s body."""
    return response.status_code == 400 and b"NUL character" in response.content and nul_in_a_key(case.body)


def names_nothing(response: Any, fields: frozenset[str]) -> bool:
    """Whether ``response`` is a 400 whose ``errors`` name only ``fields`` (a name of nothing)."""
    if response.status_code != 400:
        return False
    try:
        errors = json.loads(response.content).get("errors") or {}
    except (ValueError, AttributeError):
        return False
    return bool(errors) and all(any(within(str(key), field) for field in fields) for key in errors)


def within(key: str, field: str) -> bool:
    """Whether the error ``key`` (``a``, ``a.b``, ``a[0]``, a JSON pointer ``/a/b``) is ``field``
    or a path inside it; ``*`` in ``field`` stands for one index or name (``steps[*].next``),
    and a ``field`` ending in ``$`` matches only itself, not the paths inside it."""
    exact = field.endswith("$")
    pattern = re.escape(field.removesuffix("$")).replace(r"\*", r"[^.\]/]*")
    return re.fullmatch(pattern + ("" if exact else r"(?:[.\[/].*)?"), key) is not None


def all_checks(operation: Any) -> list[Any]:
    """Every check schemathesis registers, as its runner takes them; on an operation of
    ``NAMES_THAT_MUST_EXIST``, positive data acceptance lets a 400 naming only those fields be."""
    load_all_checks()
    checks = [check for check in CHECKS.get_all() if not isinstance(check, type)]
    key = (operation.method.upper(), operation.path)
    if key in SCHEMA_GAPS:
        return [check for check in checks if check is not positive_data_acceptance]
    fields = NAMES_THAT_MUST_EXIST.get(key, frozenset())

    def positive_data_acceptance_of_existing_names(ctx: Any, response: Any, case: Any) -> bool | None:
        if names_nothing(response, fields) or refused_nul_key(response, case):
            return None
        return positive_data_acceptance(ctx, response, case)

    return [positive_data_acceptance_of_existing_names if c is positive_data_acceptance else c for c in checks]


def exercise(operation: Any, headers: dict[str, str], failures: dict[str, str]) -> int:
    """Run ``MAX_EXAMPLES`` seeded cases of ``operation`` (valid and invalid data, as
    schemathesis's runner draws them); every distinct failure goes to ``failures`` under
    ``METHOD /path: title`` (collected rather than raised: no shrinking, and every failing
    operation and check is reported). Returns how many cases were sent."""
    label = f"{operation.method.upper()} {operation.path}"
    checks = all_checks(operation)
    sent = 0
    strategy = st.one_of(operation.as_strategy(generation_mode=mode) for mode in GenerationMode)

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        nonlocal sent
        # An apiKey cookie has no schema: schemathesis generates any text for the session
        # cookie, which its own ignored_auth check then cannot parse (http.cookies). The
        # token header authenticates; the session cookie is tested by the HTML page tests.
        case.cookies.pop(SESSION_COOKIE, None)
        sent += 1
        answer = ""
        try:
            response = case.call(headers=headers)
            answer = f"-> {response.status_code} {response.content[:400]!r}"
            case.validate_response(response, checks=checks, headers=headers)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # schemathesis's FailureGroup is a BaseExceptionGroup
            for failure in getattr(exc, "exceptions", [exc]):
                title = failure.title if isinstance(failure, Failure) else type(failure).__name__
                report = f"{str(failure)[:600]}\n{case.as_curl_command()[:600]}\n{answer}"
                failures.setdefault(f"{label}: {title}", report)

    run()
    return sent


def test_every_operation_answers_as_its_schema_says(builtin, staff_user, wsgi_app):
    schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
    schema.app = wsgi_app
    headers = {"Authorization": f"Token {Token.objects.create(user=staff_user).key}"}
    failures: dict[str, str] = {}
    ran = sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if (operation.method.upper(), operation.path) in LEFT_OUT:
            continue
        ran += 1
        sent += exercise(operation, headers, failures)
    assert ran > 50
    assert sent >= ran
    assert not failures, f"{len(failures)} failures:\n\n" + "\n\n".join(f"{k}\n{v}" for k, v in failures.items())

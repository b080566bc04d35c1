"""Executor choices: which brain each role uses, and changing it (docs/architecture.md §8, issue 8).

Reads the effective configuration (a ConfigSnapshot) and the server settings; never shows
a key: endpoints appear as ``scheme://host[:port]/path`` only.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from capabilities.config import record_change
from capabilities.models import AgentRole, Project, RoleExecutor
from teamclaw.json_types import json_type_name
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.executors import BUILTIN_KINDS, choose_kind
from teamclaw.runtime.executors.chat import MODEL_NAME, ModelSettings, option_errors
from teamclaw.runtime.executors.http import check_plugin_url, parse_allowed_hosts
from teamclaw.runtime.executors.plugins import entry_point_kinds

KIND_LABELS = {
    "offline": "offline: deterministic, no network, estimated tokens",
    "openai": "openai: a chat-completions model",
    "http": "http: a plugin behind a URL",
}


def model_settings() -> ModelSettings:
    """The server's model configuration (settings.TEAMCLAW)."""
    return ModelSettings.from_mapping(settings.TEAMCLAW)


def default_executor() -> str:
    """The server's default brain: TEAMCLAW_EXECUTOR, else ``openai`` when OPENAI_BASE_URL is set."""
    return str(settings.TEAMCLAW["EXECUTOR"])


def executor_kinds() -> list[str]:
    """Every executor kind this server offers: the built-in ones and installed plugins."""
    return [*BUILTIN_KINDS, *(k for k in entry_point_kinds() if k not in BUILTIN_KINDS)]


def role_kinds() -> list[str]:
    """Kinds a role may choose (``http`` needs a card's URL, so only cards name it)."""
    return [k for k in executor_kinds() if k != "http"]


def model_status() -> dict[str, Any]:
    """``{configured, endpoint (the default one's URL), default_executor, model, stream,
    max_rounds, endpoints: [{name, url, structured_output}]}`` for pages and the API (URLs
    without credentials; ``structured_output``: answers asked for through ``response_format``)."""
    conf = model_settings()
    default = conf.endpoints.get("default")
    return {
        "configured": conf.configured,
        "endpoint": default.label if default else None,
        "default_executor": default_executor(),
        "model": conf.model,
        "stream": conf.stream,
        "max_rounds": conf.max_rounds,
        "endpoints": [
            {"name": name, "url": endpoint.label, "structured_output": endpoint.structured_output}
            for name, endpoint in sorted(conf.endpoints.items())
        ],
    }


def role_executor(snapshot: ConfigSnapshot, role: str) -> dict[str, Any]:
    """What runs ``role``'s capabilities under ``snapshot``.

    ``{role, executor (the role's choice or None), model, endpoint, model_missing,
    kinds: {kind: count}, capabilities: [{capability_id, executor}], parts: [{kind, count,
    label, after_kind}], summary}`` (``after_kind``: the label less the kind, for a page that
    words the kind in its language); ``model``/``endpoint`` are
    those an ``openai`` call of this role would use (None when nothing runs on a model).
    """
    spec = snapshot.roles.get(role)
    default = default_executor()
    cards = sorted((c for c in snapshot.cards.values() if role in c.owner_roles), key=lambda c: c.capability_id)
    rows = [{"capability_id": c.capability_id, "executor": choose_kind(c, spec, default)} for c in cards]
    kinds: dict[str, int] = {}
    for row in rows:
        kinds[row["executor"]] = kinds.get(row["executor"], 0) + 1
    conf = model_settings()
    options = dict(spec.executor_config) if spec else {}
    model = endpoint = None
    if "openai" in kinds:
        model = options.get("model") or conf.model
        chosen = conf.endpoints.get(options.get("endpoint") or "default")
        endpoint = chosen.label if chosen else None
    parts = []
    for kind, count in sorted(kinds.items(), key=lambda item: (-item[1], item[0])):
        label = f"{kind} · {model}" if kind == "openai" and model else kind
        label = label if len(kinds) == 1 else f"{label} ×{count}"
        parts.append({"kind": kind, "count": count, "label": label, "after_kind": label[len(kind) :]})
    return {
        "role": role,
        "executor": spec.executor if spec else None,
        "model": model,
        "endpoint": endpoint,
        "model_missing": "openai" in kinds and endpoint is None,
        "kinds": kinds,
        "capabilities": rows,
        "parts": parts,
        "summary": ", ".join(str(p["label"]) for p in parts) or "no capabilities",
    }


def set_role_executor(
    role: AgentRole,
    project: Project | None,
    *,
    executor: str = "",
    model: str = "",
    endpoint: str = "",
    actor: Any = None,
) -> RoleExecutor:
    """Choose ``role``'s executor (and model options) globally or for ``project``; blank
    values inherit. Audited as a ``role`` config change (PRD §4.8); running tasks keep
    their snapshot.

    Raises django ValidationError ``{field: [reason]}`` for an executor that is not
    installed (or ``http``), a malformed model name or an endpoint that is not configured.
    """
    errors: dict[str, list[str]] = {}
    values = {"executor": executor, "model": model, "endpoint": endpoint}
    for name, value in values.items():
        if not isinstance(value, str):
            errors[name] = [f"must be a string, not {json_type_name(value)}"]
    if not errors:
        if executor and executor not in role_kinds():
            errors["executor"] = [f"{executor!r} is not an executor a role can use ({', '.join(role_kinds())})"]
        if model and not MODEL_NAME.match(model):
            errors["model"] = ["use 1-200 letters, digits and . _ : / @ + - (no spaces)"]
        names = sorted(model_settings().endpoints)
        if endpoint and endpoint not in names:
            errors["endpoint"] = [f"no endpoint {endpoint!r} is configured ({', '.join(names) or 'none'})"]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        row, _ = RoleExecutor.objects.select_for_update().get_or_create(role=role, project=project)
        changes = {
            name: {"old": getattr(row, name), "new": value}
            for name, value in values.items()
            if getattr(row, name) != value
        }
        for name, value in values.items():
            setattr(row, name, value)
        row.save()
        if changes:
            record_change(
                "role",
                changed_fields=[f"executor.{name}" for name in changes],
                changes=changes,
                role=role.role,
                project=project,
                actor=actor,
            )
    return row


def workflow_executors(snapshot: ConfigSnapshot, capability_ids: tuple[str, ...]) -> str:
    """The executor kinds that run ``capability_ids`` (on every owner role) under ``snapshot``,
    joined by '+' (e.g. ``openai`` or ``offline+openai``): what a task of that workflow uses."""
    default = default_executor()
    kinds = {
        choose_kind(card, snapshot.roles.get(owner), default)
        for capability_id in capability_ids
        if (card := snapshot.cards.get(capability_id)) is not None
        for owner in card.owner_roles
    }
    return "+".join(sorted(kinds))[:40] or default


def plugin_url_errors(url: Any) -> list[str]:
    """Why ``url`` cannot be a plugin capability's ``executor_config.url`` (US-12) under
    TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS: scheme, credentials in the URL, host or port not
    allowed. Empty when it may be registered. No DNS lookup (the executor checks addresses
    on every call)."""
    return check_plugin_url(url, parse_allowed_hosts(settings.TEAMCLAW["HTTP_EXECUTOR_ALLOWED_HOSTS"]))


def model_option_errors(config: dict[str, Any]) -> dict[str, list[str]]:
    """Problems with the model options in a card's ``executor_config`` (``model``,
    ``endpoint``, ``max_rounds``, ``stream``, ``max_output_tokens``, ``temperature``) as
    ``{key: [reason]}``; endpoints must be configured on this server."""
    return option_errors(config, model_settings().endpoints.keys())

"""Config versions, the audit trail and ConfigChangeEvent publication (PRD §4.8 热加载流程).

Every saved change goes through ``record_change`` inside the caller's transaction: it bumps
the config version under a row lock (concurrent saves serialise, none is lost), writes the
``ConfigChange`` audit row and, only after the transaction commits, publishes the
``ConfigChangeEvent`` to the listeners (the runtime host registers one), so running agents
apply it at their next task start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from django.db import transaction

from capabilities import names
from capabilities.models import ConfigChange, ConfigState, Project

log = logging.getLogger(__name__)

ConfigListener = Callable[[dict[str, Any]], None]
_listeners: list[ConfigListener] = []


def add_listener(listener: ConfigListener) -> None:
    """Call ``listener(event)`` with each ConfigChangeEvent dict after its commit."""
    if listener not in _listeners:
        _listeners.append(listener)


def remove_listener(listener: ConfigListener) -> None:
    if listener in _listeners:
        _listeners.remove(listener)


def current_version() -> int:
    """The current config version (0 before anything was loaded)."""
    state = ConfigState.objects.order_by("id").first()
    return state.version if state else 0


def _bump() -> tuple[int, int]:
    state = ConfigState.objects.select_for_update().order_by("id").first()
    if state is None:
        state = ConfigState.objects.create(version=0)
        state = ConfigState.objects.select_for_update().get(pk=state.pk)
    old = state.version
    state.version = old + 1
    state.save(update_fields=["version", "updated_at"])
    return old, state.version


def record_change(
    config_type: str,
    *,
    changed_fields: Iterable[str],
    changes: dict[str, Any] | None = None,
    role: str = "",
    project: Project | None = None,
    note: str = "",
    actor: Any = None,
) -> ConfigChange:
    """Bump the version, audit the change and publish it after commit.

    Must run inside ``transaction.atomic()`` together with the change itself, so the
    change, the version and the audit row commit or roll back as one.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record_change must be called inside transaction.atomic()")
    old, new = _bump()
    change = ConfigChange.objects.create(
        config_type=config_type,
        role=role,
        project=project,
        old_version=old,
        new_version=new,
        changed_fields=sorted(set(changed_fields)),
        changes=changes or {},
        note=note[:2000],
        actor=actor if getattr(actor, "is_authenticated", False) else None,
    )
    event = change.event()
    transaction.on_commit(names.forget)  # a role's or a card's name may have changed
    transaction.on_commit(lambda: publish(event))
    return change


def record_refusal(
    config_type: str,
    *,
    refusal: dict[str, Any],
    attempted_fields: Iterable[str] = (),
    role: str = "",
    project: Project | None = None,
    note: str = "",
    actor: Any = None,
) -> ConfigChange:
    """Audit a refused attempt at a governed config write: who (``actor``), when, what
    (``config_type``, ``role``, ``project``, the ``attempted_fields`` and ``note`` sent) and
    why (``refusal``: ``{status, code, detail, errors, method, path}``).

    Call it after the attempt's transaction rolled back, so it records the refusal and
    nothing of the change: no version bump (old and new version are the current one), no
    ``changes``, no ConfigChangeEvent.
    """
    row = {
        "config_type": config_type,
        "role": role[:40],
        "project": project,
        "changed_fields": sorted({str(f)[:200] for f in attempted_fields})[:100],
        "changes": {},
        "note": note[:2000],
        "actor": actor if getattr(actor, "is_authenticated", False) else None,
        "outcome": ConfigChange.REFUSED,
        "refusal": refusal,
    }
    return _refused_row(row)


def _refused_row(row: dict[str, Any]) -> ConfigChange:
    """Create the refused attempt's ``row`` at the current version (old = new)."""
    version = current_version()
    return ConfigChange.every.create(old_version=version, new_version=version, **row)


def publish(event: dict[str, Any]) -> None:
    """Deliver a ConfigChangeEvent to every listener; a failing listener is logged only."""
    for listener in list(_listeners):
        try:
            listener(event)
        except Exception:
            log.exception("config listener %r failed", listener)

"""The live viewer's filters: by role, message type, task and project (US-04).

The same filters drive the first render of ``/live/``, the message log pages, the
call-relationship graph and what a ``/ws/live/`` socket pushes, so a filtered page stays
filtered as it streams. Parsing refuses bad values with the field and the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.utils.translation import gettext

from teamclaw.errors import DomainError
from teamclaw.runtime.messages import MessageType

ROLE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,39}$")
TASK_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")
MESSAGE_TYPES = tuple(str(t) for t in MessageType)


class FilterError(DomainError, ValueError):
    """Bad filter values (400): ``errors`` is ``{field: [reason]}``."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {v[0]}" for k, v in errors.items()), errors=errors)


@dataclass(frozen=True, slots=True)
class LiveFilters:
    """``role`` matches a message's sender or receiver and a context's role; ``type`` is a
    PRD §4.3 MessageType (messages only); ``task`` a task id; ``project`` a project slug."""

    role: str = ""
    type: str = ""
    task: str = ""
    project: str = ""

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> LiveFilters:
        """Read the filters from query parameters; raise FilterError naming each bad field."""

        def value(name: str) -> str:
            raw = params.get(name, "")
            if isinstance(raw, list):
                raw = raw[-1] if raw else ""
            return str(raw or "").strip()

        role, message_type, task, project = value("role"), value("type"), value("task"), value("project")
        errors: dict[str, list[str]] = {}
        if role and not ROLE.match(role):
            errors["role"] = [gettext("a role is a letter followed by up to 39 letters, digits or '_'")]
        if message_type and message_type not in MESSAGE_TYPES:
            errors["type"] = [
                gettext("unknown message type; use one of %(types)s") % {"types": ", ".join(MESSAGE_TYPES)}
            ]
        if task and not TASK_ID.match(task):
            errors["task"] = [gettext("a task id is 1-64 letters, digits, '-' or '_'")]
        if project and not SLUG.match(project):
            errors["project"] = [gettext("a project is given by its slug")]
        if errors:
            raise FilterError(errors)
        return cls(role=role, type=message_type, task=task, project=project)

    @property
    def active(self) -> bool:
        return bool(self.role or self.type or self.task or self.project)

    def query(self, **extra: Any) -> str:
        """The filters (and ``extra``) as a query string without the leading '?'."""
        pairs = {k: v for k, v in (("role", self.role), ("type", self.type), ("task", self.task)) if v}
        if self.project:
            pairs["project"] = self.project
        pairs.update({k: v for k, v in extra.items() if v not in (None, "")})
        return urlencode(pairs)

    def matches_message(self, roles: list[str], message_type: str) -> bool:
        """Whether a pushed message passes the role and type filters."""
        if self.type and message_type != self.type:
            return False
        return not self.role or self.role in roles

    def matches(self, kind: str, roles: list[str], message_type: str) -> bool:
        """Whether a pushed live event passes: messages by role and type, contexts,
        confirmations and snapshots by role, everything else always."""
        if kind == "message":
            return self.matches_message(roles, message_type)
        if kind in ("context", "confirmation", "snapshot") and self.role:
            return self.role in roles
        return True

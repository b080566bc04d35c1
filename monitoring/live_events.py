"""Runtime events -> live payloads for the browser (PRD §4.6, docs/architecture.md §4, §7).

Two steps, on two threads:

1. ``extract(batch)`` runs in the recorder's thread right after a batch committed. It
   coalesces the batch (a context changed ten times is one card with its latest fields; a
   message queued then delivered is one row with its final status) and copies the fields the
   page shows into plain dicts (``monitoring.live_items``), so what is published is what the
   database holds at that commit. It never touches the database and costs microseconds.
2. ``render(items, tasks, languages)`` runs in the live sink's thread: each item becomes a
   ``LiveEvent`` carrying the rendered fragment (the same template the page uses on first
   load) as JSON text once per language in use (``translation.override``; each socket sends
   the text in its operator's language, ``web.sockets.languages``), plus the few fields
   consumers filter on (task, project, owner, roles, message type) without parsing it.
   Times are rendered in ``settings.TIME_ZONE`` as ``<time>`` elements carrying their
   instant; a socket in another zone rewords them (``live_times.in_zone``).

A payload's JSON: ``{"kind", "key", "task_id", "data": {...}, "swap": {"id", "into",
"where", "html"}}``. ``swap`` tells the page's script to replace the element ``id`` or, when
it is not on the page, insert the HTML into the container ``into`` at ``where``
(``afterbegin`` / ``beforeend``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.template.loader import render_to_string
from django.utils import timezone, translation

from monitoring import dom_ids, live_items
from teamclaw.runtime.events import (
    AlertRaised,
    ArtifactWritten,
    ConfigApplied,
    ConfirmationChanged,
    ContextChanged,
    MessageSent,
    MessageStatusChanged,
    RuntimeEvent,
    SnapshotTaken,
    TaskFinished,
    TaskProgress,
    TaskStarted,
)

LIVE_KINDS = ("message", "context", "snapshot", "confirmation", "alert", "config_change", "task", "artifact")
"""What the live page shows (issue #6): message with delivery status, context (status,
progress, current step), snapshot, confirmation request, alert, config change; plus task
status and artifacts for a task's own page."""

GRAPH_MESSAGE_TYPES = frozenset({"invoke_request", "hook_event"})
"""Message types the call-relationship graph counts (US-04: who invoked or hooked whom)."""


class Fragment(NamedTuple):
    template: str
    var: str
    where: str


FRAGMENTS: dict[str, Fragment] = {
    "context": Fragment("monitoring/_context_card.html", "c", "beforeend"),
    "message": Fragment("monitoring/_message_row.html", "m", "afterbegin"),
    "confirmation": Fragment("monitoring/_confirmation.html", "cf", "afterbegin"),
    "snapshot": Fragment("monitoring/_snapshot_item.html", "s", "beforeend"),
    "alert": Fragment("monitoring/_alert.html", "a", "afterbegin"),
    "config_change": Fragment("monitoring/_config_change.html", "cc", "afterbegin"),
    "task": Fragment("monitoring/_task_chip.html", "t", "afterbegin"),
    "artifact": Fragment("monitoring/_artifact.html", "a", "beforeend"),
}
"""One fragment template per live thing, with the name the template knows it by."""


class LiveItem(NamedTuple):
    """One coalesced live thing extracted at commit time (not yet rendered)."""

    kind: str
    key: str
    item: dict[str, Any]


class LiveEvent(NamedTuple):
    """What travels through the channel layer for one live thing (``pack``ed with its batch).

    ``owner_id`` is the id of the user who started the task (None: nobody; staff only);
    ``public`` events (config changes) are for every logged-in user. ``roles`` are the roles
    the thing is about (a message's sender and receiver), ``message_type`` a message's type;
    consumers filter on these. ``texts`` maps a language code (``settings.LANGUAGES``) to the
    payload's JSON with the fragment rendered in that language; only the languages in use
    when it was rendered are there.
    """

    key: str
    kind: str
    task_id: str
    project_id: str
    owner_id: int | None
    public: bool
    roles: list[str]
    message_type: str
    graph: bool
    texts: dict[str, str]


HTML_FIELD = ',"html":'
"""How a payload's JSON text starts its last field, the fragment (``swap.html``): a socket
rewording the fragment's times (``live_times.in_zone``) finds it there, never in ``data``."""

SEPARATOR = "\x00"
"""Joins the events' JSON texts of a batch: ``json.dumps`` escapes every control character,
so it never occurs inside one."""


def pack(events: list[LiveEvent]) -> dict[str, Any]:
    """A batch for ``group_send`` as strings: the filter fields (small JSON) under ``meta`` and,
    under ``texts``, one string per language (``{"en": ..., "zh-hans": ...}``) joining the
    events' texts in that language. Every event of a batch has the same languages.

    The in-memory channel layer deep-copies every message for every receiver; strings are
    copied for free, nested lists are not (with 20 browsers that copying dominated the CPU).
    """
    meta = [
        [e.key, e.kind, e.task_id, e.project_id, e.owner_id, e.public, e.roles, e.message_type, e.graph] for e in events
    ]
    languages = events[0].texts if events else {}
    texts = {language: SEPARATOR.join(e.texts[language] for e in events) for language in languages}
    return {"meta": json.dumps(meta, separators=(",", ":")), "texts": texts}


def unpack(message: dict[str, Any]) -> list[LiveEvent]:
    """The events of a ``pack``ed batch. Raises KeyError or ValueError on a malformed one."""
    meta = json.loads(message["meta"])
    if not meta:
        return []
    columns = {language: joined.split(SEPARATOR) for language, joined in message["texts"].items()}
    if any(len(texts) != len(meta) for texts in columns.values()):
        raise ValueError("a packed batch holds one text per event in each language")
    return [
        LiveEvent._make([*fields, {language: texts[index] for language, texts in columns.items()}])
        for index, fields in enumerate(meta)
    ]


# -- step 1: extract (recorder thread) --------------------------------------------------------
def extract(batch: Iterable[RuntimeEvent]) -> list[LiveItem]:
    """Coalesce a committed batch into the live things it changed, in first-seen order."""
    out: dict[str, LiveItem] = {}
    contexts: dict[str, Any] = {}
    tasks: dict[str, dict[str, Any]] = {}
    for event in batch:
        match event:
            case MessageStatusChanged(message=message, status=status, reason=reason) if f"message:{message.id}" in out:
                previous = out[f"message:{message.id}"]
                previous.item["status"] = str(status)
                previous.item["reason"] = (reason or "")[:300]
            case MessageSent() | MessageStatusChanged():
                key = f"message:{event.message.id}"
                out[key] = LiveItem(
                    "message",
                    key,
                    live_items.message_item_from_runtime(
                        event.message, str(event.status), event.reason, event.project_id
                    ),
                )
            case ContextChanged(context=context):
                key = f"context:{context.id}"
                contexts[key] = context
                out.setdefault(key, LiveItem("context", key, {}))
            case SnapshotTaken(snapshot=snap):
                key = f"snapshot:{snap.id}"
                item = live_items.snapshot_item(snap.as_dict())
                item["task_id"] = snap.task_id
                item["project_id"] = snap.state.get("project_id")
                item["role"] = snap.state.get("role", "")
                out[key] = LiveItem("snapshot", key, item)
            case ConfirmationChanged(confirmation=confirmation):
                key = f"confirmation:{confirmation.id}"
                out.pop(key, None)
                out[key] = LiveItem("confirmation", key, live_items.confirmation_item(confirmation.as_dict()))
            case AlertRaised():
                key = f"alert:{event.seq}"
                out[key] = LiveItem("alert", key, live_items.alert_item(event.as_dict(), str(event.seq)))
            case ConfigApplied(change=change_event):
                change = live_items.config_change_item(dict(change_event), live_items.from_epoch(event.at))
                key = f"config_change:{change['new_version']}"
                out[key] = LiveItem("config_change", key, change)
            case TaskStarted() | TaskProgress() | TaskFinished():
                key = f"task:{event.task_id}"
                # A progress event says no status: it comes only while the task runs.
                tasks.setdefault(key, {"status": "running"}).update(event.as_dict())
                out.setdefault(key, LiveItem("task", key, {}))
            case ArtifactWritten():
                key = f"artifact:{event.task_id}:{event.name}"
                data = event.as_dict()
                out[key] = LiveItem("artifact", key, {**live_items.artifact_item(data), "project_id": event.project_id})
    # Latest fields of each context and task, read once, right after the commit.
    for key, context in contexts.items():
        out[key] = LiveItem("context", key, live_items.context_item_from_runtime(context))
    for key, info in tasks.items():
        out[key] = LiveItem("task", key, live_items.task_item(info))
    return list(out.values())


def merge(items: list[LiveItem]) -> list[LiveItem]:
    """Items of several batches as one: one item per live thing, at its first position, with
    its latest fields (each item is a complete picture of its thing)."""
    out: dict[str, LiveItem] = {}
    for item in items:
        if item.key in out:
            out[item.key] = LiveItem(item.kind, item.key, item.item)
        else:
            out[item.key] = item
    return list(out.values())


# -- step 2: render (live sink thread) ----------------------------------------------------------
def _roles(kind: str, item: dict[str, Any]) -> list[str]:
    if kind == "message":
        return [r for r in (item["from_role"], item["to_role"]) if r]
    if kind in ("context", "confirmation", "snapshot", "artifact"):
        return [item["role"]] if item.get("role") else []
    return []


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return DjangoJSONEncoder().default(value)


class _Placed(NamedTuple):
    """One item to render, with what ``render`` decided about it."""

    kind: str
    key: str
    item: dict[str, Any]
    owner_id: int | None
    insert: bool


def _events(placed: list[_Placed], languages: Sequence[str]) -> list[LiveEvent]:
    """Render every item's fragment in each language (one ``translation.override`` per
    language, not per item), in ``settings.TIME_ZONE``, and wrap each as a LiveEvent. The JSON of each payload is made
    once without its HTML; each language's fragment is spliced in as the last field."""
    html: dict[str, list[str]] = {}
    for language in languages or (settings.LANGUAGE_CODE,):
        # Always in the server's zone: a socket in another rewords the times (live_times).
        with translation.override(language), timezone.override(None):
            html[language] = [
                render_to_string(FRAGMENTS[p.kind].template, {FRAGMENTS[p.kind].var: p.item}) for p in placed
            ]
    events = []
    for index, (kind, key, item, owner_id, insert) in enumerate(placed):
        fragment = FRAGMENTS[kind]
        task_id = item.get("task_id") or (item.get("id") if kind == "task" else "") or ""
        into = dom_ids.container_id(kind, item.get("context_id", "")) if insert else ""
        swap = {"id": dom_ids.dom_id(kind, item), "into": into, "where": fragment.where}
        payload = {"kind": kind, "key": key, "task_id": task_id, "data": item, "swap": swap}
        head = json.dumps(payload, ensure_ascii=False, default=_json_default, separators=(",", ":"))[:-2]
        texts = {
            language: f"{head}{HTML_FIELD}{json.dumps(rendered[index], ensure_ascii=False)}}}}}"
            for language, rendered in html.items()
        }
        events.append(
            LiveEvent(
                key=key,
                kind=kind,
                task_id=task_id,
                project_id=item.get("project_id") or "",
                owner_id=owner_id,
                public=kind == "config_change",
                roles=_roles(kind, item),
                message_type=item.get("type", "") if kind == "message" else "",
                graph=kind == "message" and item.get("type") in GRAPH_MESSAGE_TYPES,
                texts=texts,
            )
        )
    return events


def render_one(
    kind: str,
    key: str,
    item: dict[str, Any],
    owner_id: int | None = None,
    *,
    insert: bool = True,
    languages: Sequence[str] = (),
) -> LiveEvent:
    """Render one live thing's fragment once in each of ``languages`` (codes of
    ``settings.LANGUAGES``; none given: ``LANGUAGE_CODE``) and wrap it as a LiveEvent (see
    module docstring). With ``insert`` False the page only replaces the thing where it is
    already shown."""
    return _events([_Placed(kind, key, item, owner_id, insert)], languages)[0]


def render(
    items: list[LiveItem], tasks: dict[str, tuple[int | None, str, str]], languages: Sequence[str] = ()
) -> list[LiveEvent]:
    """Render every item once per language of ``languages`` (see ``render_one``); ``tasks``
    maps task id -> (owner user id or None, title, kind).

    The short tasks around a standalone invoke or hook (kind ``invoke``/``hook``) update their
    own page but are not added to the live page's list of tasks."""
    placed = []
    for kind, key, item in items:
        task_id = item.get("task_id") or (item.get("id") if kind == "task" else "")
        owner, title, task_kind = tasks.get(task_id, (None, "", "task")) if task_id else (None, "", "task")
        if kind == "task" and title:
            item["title"] = title
        if kind == "context":
            item["task_title"] = title or task_id  # the live page groups cards by task
        placed.append(_Placed(kind, key, item, owner, kind != "task" or task_kind == "task"))
    return _events(placed, languages)


def task_ids(items: list[LiveItem]) -> set[str]:
    """The task ids the items belong to (the sink looks their owners up)."""
    out = set()
    for kind, _key, item in items:
        task_id = item.get("task_id") or (item.get("id") if kind == "task" else "")
        if task_id:
            out.add(task_id)
    return out

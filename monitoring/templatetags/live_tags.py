"""Template filters of the live viewer, replay and token statistics pages."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from datetime import datetime
from urllib.parse import quote

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from knowledge.search import relevance
from monitoring import dom_ids, live_times, task_replay
from monitoring.live_items import summary_text
from monitoring.markdown_html import render_markdown
from monitoring.role_labels import role_labels
from monitoring.step_labels import snapshot_words as snapshot_in_language
from monitoring.step_labels import step_label as step_in_language
from teamclaw.emoji_icons import emoji_icon as emoji_picture
from teamclaw.labels import list_separator

register = template.Library()


@register.filter(name="dom_id")
def dom_id(item: dict, kind: str) -> str:
    """``{{ c|dom_id:"context" }}``: the element id of a live thing (``monitoring.dom_ids``)."""
    return dom_ids.dom_id(kind, item)


@register.filter(name="message_summary")
def message_summary(item: dict) -> str:
    """``{{ m|message_summary }}``: a message item's summary line in the active language
    (``live_items.summary_parts``), else its stored English ``summary``."""
    parts = item.get("summary_parts")
    return summary_text(parts) if parts else str(item.get("summary") or "")


@register.filter(name="step_label")
def step_label(step: str) -> str:
    """``{{ c.current_step|step_label }}``: an agent's progress step in the active language
    (``monitoring.step_labels``)."""
    return step_in_language(str(step or ""))


@register.filter(name="snapshot_label")
def snapshot_label(trigger: str) -> str:
    """``{{ s.trigger|snapshot_label }}``: what a snapshot's trigger says, in the active
    language (``monitoring.task_replay.snapshot_step``)."""
    return task_replay.snapshot_step(str(trigger or ""))[1]


@register.simple_tag(name="container_id")
def container_id(kind: str, context_id: str = "") -> str:
    """``{% container_id "context" %}``: the id of the element holding live things of a kind."""
    return dom_ids.container_id(kind, context_id)


@register.filter
def role_emoji(role: str) -> str:
    """The role's emoji (PRD §4.1) as its picture (``emoji_icon``), or an empty string for
    an unknown role."""
    return emoji_picture(role_labels().get(role or "", ("", ""))[0])


@register.filter
def emoji_icon(text: object) -> str:
    """An emoji as its local picture with alt text in the page's language
    (``teamclaw.emoji_icons``), or as text when none is shipped for it."""
    return emoji_picture(text)


@register.filter
def role_name(role: str) -> str:
    """The role's display name, or the slug itself when unknown."""
    return role_labels().get(role or "", ("", role))[1] or role


@register.filter
def role_names(roles: Iterable[str] | str | None) -> str:
    """Role slugs (a list) as their display names (``role_name``), joined as the active
    language joins a list (``teamclaw.labels.list_separator``); '' for none."""
    if not roles:
        return ""
    if isinstance(roles, str):
        return role_name(roles)
    return list_separator().join(role_name(str(role)) for role in roles)


@register.filter
def snapshot_words(text: str) -> str:
    """A snapshot's trigger or label in the page's language (``monitoring.step_labels``)."""
    return snapshot_in_language(text)


@register.filter
def party(role: str) -> str:
    """A message end as a page names it: a role's display name in the page's language
    (``role_name``; the slug for an unknown role), or the operator (the runtime's ``user``)
    in the active language."""
    return gettext("Operator") if role == "user" else role_name(role)


@register.filter
def short_id(value: str, length: int = 8) -> str:
    """The last ``length`` characters of an id (the full id goes in a title attribute).

    Ids from ``teamclaw.runtime.messages.new_id`` start with a prefix shared by every id the
    process mints and end with a counter, so the end is what tells two tasks apart."""
    text = str(value or "")
    return text[-int(length) :] if int(length) > 0 else ""


@register.filter
def clock(value: datetime | None) -> str:
    """``HH:MM:SS.mmm`` of a datetime in the operator's time zone (``teamclaw.time_zones``:
    the active zone, else ``TIME_ZONE``), as a ``<time>`` element a live socket rewords in
    its operator's zone (``monitoring.live_times``); '' for None."""
    return live_times.time_element(value, "clock")


@register.filter
def clock_zone(value: datetime | None) -> str:
    """``clock`` followed by the zone's name (``12:00:00.000 Asia/Shanghai``), one element."""
    return live_times.time_element(value, "clock_zone")


@register.filter
def short_time_zone(value: datetime | None) -> str:
    """The language's ``MONTH_DAY_TIME_FORMAT`` and the zone's name (``Dec 1, 22:52 UTC``,
    ``12月1日 22:52 UTC``), one ``<time>``
    element (``monitoring.live_times``)."""
    return live_times.time_element(value, "short_zone")


@register.filter
def moment_zone(value: datetime | None) -> str:
    """The language's ``MONTH_DAY_SECONDS_FORMAT`` and the zone's name (``Dec 1, 22:52:13
    UTC``, ``12月1日 22:52:13 Asia/Shanghai``), one ``<time>`` element whose ``title`` is the
    ISO 8601 instant (``monitoring.live_times``); '' for None."""
    return live_times.time_element(value, "moment_zone")


@register.filter
def relevance_to(score: float | None, best: float | None) -> int:
    """A retrieved chunk's relevance next to the best chunk of its retrieval, a whole
    percent (``knowledge.search.relevance``)."""
    return relevance(score, best)


@register.filter
def shown_zone(value: object) -> str:
    """The name of the time zone ``value`` (a datetime) is shown in: the active one
    (``teamclaw.time_zones``), e.g. ``Asia/Shanghai``; ``UTC`` by default."""
    return timezone.get_current_timezone_name()


@register.filter
def thousands(value: int | None) -> str:
    """An integer with thousands separators (token counts)."""
    try:
        return f"{int(value or 0):,}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pretty_json(value: object) -> str:
    """Indented JSON (autoescaped by the template like any string)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


_PLACEHOLDER = "00placeholder00"


@functools.cache
def _pattern(name: str, arity: int) -> str:
    return reverse(name, args=[_PLACEHOLDER] * arity)


def _url(name: str, *ids: str) -> str:
    # ``{% url %}`` resolves the pattern on every call; the live sink renders hundreds of
    # fragments a second, so each pattern is reversed once and the ids substituted.
    pattern = _pattern(name, len(ids))
    for value in ids:
        pattern = pattern.replace(_PLACEHOLDER, quote(str(value), safe=""), 1)
    return pattern


@register.filter
def task_url(task_id: str) -> str:
    """URL of a task's page."""
    return _url("task-detail", task_id)


@register.filter
def replay_url(context_id: str) -> str:
    """URL of a context's replay."""
    return _url("replay", context_id)


@register.filter
def inspect_url(context_id: str) -> str:
    """URL of a context's inspector fragment."""
    return _url("live-context", context_id)


@register.filter
def decide_url(confirmation_id: str) -> str:
    """URL that approves or rejects a tool confirmation."""
    return _url("live-confirmation", confirmation_id)


@register.filter
def artifact_url(artifact: dict) -> str:
    """URL of an artifact's whole content (``artifact`` is a live_items artifact dict)."""
    return _url("task-artifact", artifact["task_id"], artifact["name"])


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    """Markdown rendered and sanitised (``monitoring.markdown_html``)."""
    return render_markdown(text or "")

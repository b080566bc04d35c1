"""Recorded alerts (queue drops, health changes, budget stops, failovers, alert rules), filtered."""

from __future__ import annotations

from collections.abc import Mapping

from django.db.models import QuerySet

from monitoring.models import Alert

FILTERS = (("severity", "severity"), ("kind", "kind"), ("capability", "capability_id"))
"""Query parameter -> the Alert column it filters on."""


def filter_alerts(params: Mapping[str, str]) -> QuerySet[Alert]:
    """Alerts filtered by ``status`` (``open``: an alert rule's alert still open; ``resolved``),
    ``severity``, ``kind`` and ``capability``; newest first."""
    alerts = Alert.objects.select_related("rule")
    state = params.get("status")
    if state == "open":
        alerts = alerts.filter(resolved_at__isnull=True, rule__isnull=False)
    elif state == "resolved":
        alerts = alerts.filter(resolved_at__isnull=False)
    for key, column in FILTERS:
        if params.get(key):
            alerts = alerts.filter(**{column: params[key]})
    return alerts

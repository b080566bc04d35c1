"""Alerts (queue drops, health changes, budget stops, failovers, alert rules): the list and
resolving one."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from monitoring.alerts import filter_alerts
from monitoring.models import Alert
from web.forms import safe_next
from web.htmx import fragment_or_page

SEVERITIES = ("info", "warning", "critical")


def alert_list(request: HttpRequest) -> HttpResponse:
    """Alerts newest first, 50 a page; ``status`` (open|resolved), ``severity``, ``kind``.
    An htmx request gets only the rows partial (the page polls it)."""
    filters = {key: request.GET.get(key, "") for key in ("status", "severity", "kind")}
    page = Paginator(filter_alerts(filters), 50).get_page(request.GET.get("page"))
    kinds = Alert.objects.order_by().values_list("kind", flat=True).distinct()
    context = {
        "nav": "alerts",
        "page": page,
        "alerts": page.object_list,
        "filters": filters,
        "severities": SEVERITIES,
        "kinds": sorted(kinds),
        "query": "&".join(f"{k}={v}" for k, v in filters.items() if v),
    }
    return fragment_or_page(request, "monitoring/alert_list.html", context, part="rows")


@require_POST
def alert_resolve(request: HttpRequest, alert_id: int) -> HttpResponse:
    """An operator resolves an open alert (staff only)."""
    if not request.user.is_staff:
        messages.error(request, _("Resolving alerts needs a staff account."))
        return redirect("alerts")
    alert = get_object_or_404(Alert, pk=alert_id)
    if alert.resolved_at is None:
        alert.resolved_at = timezone.now()
        alert.details = {**alert.details, "resolved_by": request.user.get_username()}
        alert.save(update_fields=["resolved_at", "details"])
        messages.success(request, _("Alert %(id)s resolved.") % {"id": alert.pk})
    return safe_next(request, "alerts")

"""htmx requests (django-htmx) and the one decision "fragment or page".

A page whose parts htmx refreshes names its fragment as an inline partial of its template
(django-template-partials: ``page.html#part``); the view renders the partial for an htmx
request and the whole page otherwise, from the same context. A boosted request (``hx-boost``)
is a navigation and gets the whole page.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """An ``HttpRequest`` with django-htmx's ``htmx`` attribute, for type checking."""

    htmx: HtmxDetails


def wants_fragment(request: HttpRequest) -> bool:
    """True for an htmx request that is not a boosted navigation."""
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.boosted


def fragment_or_page(
    request: HttpRequest, template: str, partial: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """Render ``template#partial`` for an htmx request, ``template`` otherwise."""
    name = f"{template}#{partial}" if wants_fragment(request) else template
    return render(request, name, context, status=status)

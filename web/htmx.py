"""htmx requests (django-htmx) and the one decision "fragment or page".

A page whose parts htmx refreshes names each fragment as an inline partial of its template
(django-template-partials: ``page.html#part``); the view renders it with ``fragment_or_page``:
the partial for an htmx request, the whole page otherwise, from the same context. A page
with several parts says which one with ``?part=`` (``parts``); a boosted request
(``hx-boost``) is a navigation and gets the whole page. Every view that asks
``wants_fragment`` answers differently with and without the ``HX-Request`` header, so its
response carries ``Vary: HX-Request`` (``VaryOnHtmxMiddleware``): no cache or browser history
serves a fragment for the page or the page for a fragment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers
from django_htmx.middleware import HtmxDetails

VARIES = "_teamclaw_varies_on_htmx"
"""Set on a request whose answer depends on the ``HX-Request`` header."""


class HtmxHttpRequest(HttpRequest):
    """An ``HttpRequest`` with django-htmx's ``htmx`` attribute, for type checking."""

    htmx: HtmxDetails


def wants_fragment(request: HttpRequest) -> bool:
    """True for an htmx request that is not a boosted navigation. Marks the request, so its
    response varies on ``HX-Request``."""
    setattr(request, VARIES, True)
    htmx: HtmxDetails | None = getattr(request, "htmx", None)
    return htmx is not None and bool(htmx) and not htmx.boosted


def fragment_or_page(
    request: HttpRequest,
    template: str,
    context: dict[str, Any],
    *,
    part: str | None = None,
    parts: Iterable[str] = (),
    status: int = 200,
) -> HttpResponse:
    """Render ``template#<partial>`` for an htmx request, ``template`` otherwise. The partial
    is ``part``, or for a page with several (``parts``) the one ``?part=`` names; an htmx
    request naming none of them gets the whole template."""
    chosen = part
    if parts:
        asked = request.GET.get("part")
        chosen = asked if asked in set(parts) else None
    name = f"{template}#{chosen}" if chosen and wants_fragment(request) else template
    setattr(request, VARIES, True)
    return render(request, name, context, status=status)


class VaryOnHtmxMiddleware:
    """Adds ``Vary: HX-Request`` to the response of a request whose view asked
    ``wants_fragment`` (module docstring). After django-htmx's middleware in MIDDLEWARE."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if getattr(request, VARIES, False):
            patch_vary_headers(response, ("HX-Request",))
        return response

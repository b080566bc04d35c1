"""The site's pages as the URL resolver lists them (``web.urls``), so a page added there is
tested without anyone adding it to a list."""

from __future__ import annotations

from collections.abc import Mapping

from django.urls import URLPattern, reverse

from web import urls


def page_patterns() -> list[URLPattern]:
    """Every page's URL pattern."""
    return [p for p in urls.urlpatterns if isinstance(p, URLPattern)]


def parameters(pattern: URLPattern) -> list[str]:
    """The names of the pattern's path parameters (``role``, ``task_id``...)."""
    return list(pattern.pattern.converters)


def page_path(pattern: URLPattern, values: Mapping[str, str]) -> str | None:
    """The pattern's path with its parameters taken from ``values``; None when one is missing."""
    names = parameters(pattern)
    if any(name not in values for name in names):
        return None
    return reverse(str(pattern.name), kwargs={name: values[name] for name in names})


def takes_get(response: object) -> bool:
    """False for a 405 whose ``Allow`` header leaves GET out (a form's POST-only action)."""
    status = getattr(response, "status_code", None)
    allow = response.get("Allow", "") if hasattr(response, "get") else ""
    return not (status == 405 and "GET" not in allow)

"""One row by its key for an API view, or a 404 that names what is missing (``role 'x' does
not exist``) instead of Django's "No AgentRole matches the given query.", which names a
model class the API never shows."""

from __future__ import annotations

from typing import Any, TypeVar

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Model, QuerySet
from rest_framework.exceptions import NotFound

M = TypeVar("M", bound=Model)


def found(source: type[M] | QuerySet[M], what: str, **lookup: Any) -> M:
    """The row of ``source`` (a model or a queryset, e.g. the tasks a user may see) matching
    ``lookup`` (one field). Raises NotFound (404) "<what> '<value>' does not exist"."""
    queryset = source if isinstance(source, QuerySet) else source.objects.all()  # type: ignore[attr-defined]
    try:
        return queryset.get(**lookup)
    except (ObjectDoesNotExist, ValueError, TypeError):
        value = next(iter(lookup.values()), "")
        raise NotFound(f"{what} {str(value)[:80]!r} does not exist") from None

"""Query parameters of the REST API: declared once, documented and checked from that one
declaration.

``@query_parameters(*parameters)`` on a view method puts drf-spectacular ``OpenApiParameter``
declarations into the OpenAPI document (``extend_schema(parameters=...)``) and, before the
method runs, checks the request's query string against the same declarations: a value of a
parameter declared with an ``enum`` must be one of it (an empty ``?category=`` is not), an
``int`` parameter takes a whole number (within the bounds ``bounds`` reads), a ``bool`` one
``true``/``false`` (also ``1``/``0``, ``yes``/``no``).
A bad value is a 400 in the API's error shape naming the parameter
(``{"detail": "page_size: must be a whole number", "errors": {"page_size": [...]}}``).
``paginated=True`` adds ``page`` and ``page_size`` (``StrictPagination``). Parameters the
endpoint does not declare are ignored, as HTTP caches and browsers add their own.

``StrictPagination`` is the API's one page-number pagination: ``page`` and ``page_size`` must
be whole numbers >= 1 (``page_size=false`` is a 400, not the default size); a page past the
last is a 404.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from teamclaw.whole_numbers import LARGEST, whole_number_or_none, whole_number_problem

TRUE_TEXTS = frozenset({"true", "1", "yes"})
FALSE_TEXTS = frozenset({"false", "0", "no"})
MAX_PAGE_SIZE = 200
"""Largest ``page_size`` a list answers with unless its pagination says otherwise."""


def _kind(parameter: OpenApiParameter) -> str:
    declared = parameter.type
    if isinstance(declared, dict):
        return {"integer": "int", "boolean": "bool"}.get(str(declared.get("type")), "str")
    if declared in (int, OpenApiTypes.INT, OpenApiTypes.INT32, OpenApiTypes.INT64):
        return "int"
    if declared in (bool, OpenApiTypes.BOOL):
        return "bool"
    return "str"


def integer(minimum: int | None = None, maximum: int | None = None) -> dict[str, Any]:
    """The schema of a whole-number query parameter with its bounds, as ``OpenApiParameter``'s
    type: ``OpenApiParameter("days", integer(1, 90))``. Without ``maximum`` the bound is
    ``teamclaw.whole_numbers.LARGEST`` (18 digits), the most any query parameter takes."""
    schema: dict[str, Any] = {"type": "integer", "maximum": LARGEST if maximum is None else maximum}
    if minimum is not None:
        schema["minimum"] = minimum
    return schema


NON_BLANK_PATTERN = "^[^\\x00]*[^\\x00\\s][^\\x00]*$"
"""Pattern of a query text that must hold more than white space (and, as every URL text, no
NUL: ``teamclaw.middleware``)."""


def non_blank_text(max_length: int | None = None) -> dict[str, Any]:
    """The schema of a text query parameter that refuses a blank value (400 "may not be
    blank"): ``OpenApiParameter("task_id", non_blank_text())``."""
    schema: dict[str, Any] = {"type": "string", "pattern": NON_BLANK_PATTERN}
    if max_length is not None:
        schema["maxLength"] = max_length
    return schema


def non_blank_when_required(parameter: OpenApiParameter) -> OpenApiParameter:
    """``parameter``, a required plain text one documented as ``non_blank_text()``:
    ``parameter_problem`` refuses its blank value."""
    if parameter.required and _kind(parameter) == "str" and not parameter.enum and not isinstance(parameter.type, dict):
        parameter.type = non_blank_text()
    return parameter


def bounds(parameter: OpenApiParameter) -> tuple[int | None, int | None]:
    """``(minimum, maximum)`` of an integer parameter declared with ``integer()`` (None:
    unbounded)."""
    declared = parameter.type if isinstance(parameter.type, dict) else {}
    return declared.get("minimum"), declared.get("maximum")


def _whole_number_problem(raw: str, low: int | None, high: int | None) -> str | None:
    """Why ``raw`` is no whole number (``teamclaw.whole_numbers``: ASCII digits, at most 18)
    within ``low``..``high`` (None: unbounded; no bound at all is 0..10**18 - 1)."""
    value = whole_number_or_none(raw)
    if value is not None and (low is None or value >= low) and (high is None or value <= high):
        return None
    if low is None and high in (None, LARGEST):
        return whole_number_problem(raw)
    if high in (None, LARGEST):
        return f"must be a whole number >= {low}"
    if low is None:
        return f"must be a whole number <= {high}"
    return f"must be a whole number from {low} to {high}"


def parameter_problem(parameter: OpenApiParameter, raw: str) -> str | None:
    """Why the query text ``raw`` is no value of ``parameter``, or None when it is."""
    kind = _kind(parameter)
    if parameter.enum:
        allowed = [str(v) for v in parameter.enum]
        if raw not in allowed:
            return f"must be one of {', '.join(allowed)}"
        return None
    if kind == "int":
        return _whole_number_problem(raw, *bounds(parameter))
    if kind == "bool":
        if raw.strip().lower() not in TRUE_TEXTS | FALSE_TEXTS:
            return "must be true or false"
        return None
    if parameter.required and not raw.strip():
        return "may not be blank"
    return None


def check_query(params: Mapping[str, str], parameters: list[OpenApiParameter]) -> None:
    """Raise a ValidationError (400) naming every declared query parameter of ``parameters``
    whose value in ``params`` is not valid or that is given more than once, and every required
    one that is missing."""
    errors: dict[str, list[str]] = {}
    for parameter in parameters:
        if parameter.location != OpenApiParameter.QUERY:
            continue
        raw = params.get(parameter.name)
        if raw is None:
            if parameter.required:
                errors[parameter.name] = ["this query parameter is required"]
            continue
        getlist = getattr(params, "getlist", None)
        if getlist is not None and len(getlist(parameter.name)) > 1:
            # only the last would be read, unchecked by the others: ambiguous, so refused
            errors[parameter.name] = ["given more than once; send it once"]
            continue
        if reason := parameter_problem(parameter, raw):
            errors[parameter.name] = [reason]
    if errors:
        raise ValidationError(errors)


def flag(params: Mapping[str, str], name: str, default: bool) -> bool:
    """A checked ``bool`` query parameter's value (``default`` when absent or blank)."""
    raw = (params.get(name) or "").strip().lower()
    if not raw:
        return default
    return raw in TRUE_TEXTS


PAGE = OpenApiParameter("page", integer(1), description="Page number, from 1.")


def page_size_parameter(maximum: int = MAX_PAGE_SIZE) -> OpenApiParameter:
    """The ``page_size`` query parameter (1..``maximum``)."""
    return OpenApiParameter("page_size", integer(1, maximum), description=f"Results per page, 1 to {maximum}.")


def whole_number_at_least_zero(parameter: OpenApiParameter) -> OpenApiParameter:
    """``parameter``, its plain ``int`` type documented as ``integer(0)``: ``parameter_problem``
    takes only digits, so the schema may not promise ``-1``."""
    if _kind(parameter) == "int" and not isinstance(parameter.type, dict):
        parameter.type = integer(0)
    return parameter


def query_parameters(
    *parameters: OpenApiParameter, paginated: bool = False, max_page_size: int = MAX_PAGE_SIZE
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a view method's query parameters: documented in the OpenAPI document and
    checked before the method runs (``check_query``). ``paginated`` adds ``page`` and
    ``page_size`` (1..``max_page_size``). Works on sync and async (adrf) methods."""
    declared = [non_blank_when_required(whole_number_at_least_zero(parameter)) for parameter in parameters]
    declared += [PAGE, page_size_parameter(max_page_size)] if paginated else []

    def decorate(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def checked_async(view: Any, request: Request, *args: Any, **kwargs: Any) -> Any:
                check_query(request.query_params, declared)
                return await method(view, request, *args, **kwargs)

            wrapped: Callable[..., Any] = checked_async
        else:

            @functools.wraps(method)
            def checked(view: Any, request: Request, *args: Any, **kwargs: Any) -> Any:
                check_query(request.query_params, declared)
                return method(view, request, *args, **kwargs)

            wrapped = checked
        wrapped.query_parameters = declared  # type: ignore[attr-defined]
        return extend_schema(parameters=declared)(wrapped)

    return decorate


class StrictPagination(PageNumberPagination):
    """Page-number pagination whose ``page`` and ``page_size`` are checked: a value that is
    not a whole number >= 1 (or a size above ``max_page_size``) is a 400 naming it, instead of
    the default size or a 404; a page past the last is still a 404, saying how many pages
    there are."""

    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int | None:
        raw = request.query_params.get(self.page_size_query_param or "page_size")
        if raw is None:
            return self.page_size
        limit = self.max_page_size or MAX_PAGE_SIZE
        if problem := whole_number_problem(raw, 1, limit):
            raise ValidationError({"page_size": [problem]})
        return int(raw)

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        raw = request.query_params.get(self.page_query_param)
        if raw is not None and raw not in self.last_page_strings:
            if whole_number_problem(raw, 1) is not None:
                raise ValidationError({self.page_query_param: ["must be a whole number >= 1 (or 'last')"]})
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            pages = self.django_paginator_class(queryset, self.get_page_size(request) or 1).num_pages
            raise NotFound(f"page {raw} is past the last page ({pages}); ask for page=1 to {pages}") from None

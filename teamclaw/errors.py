"""The one domain error: a request the product refuses, and everything needed to say why.

Services raise a ``DomainError`` (or one of its kinds: ``ConfigInvalid``, ``StaleVersion``,
``LifecycleError``, ``PromptChangeError``...) and never build responses. It is translated
in one place for the API (``teamclaw.api_errors.exception_handler``: the body
``{"detail", "errors", **extra}`` with ``status``) and in one place for pages
(``web.forms.show_refusal`` for a refusal shown on the next page, ``web.errors`` for an
error page).

- ``message``: one sentence for a person (the API's ``detail``), a ``str`` in the language
  active when it is read: a service words it with ``gettext_lazy`` (and ``worded`` for its
  values), so the same refusal reads in Chinese on a zh-Hans page or API request and in
  English elsewhere (issue 32, "every word in the page's language");
- ``errors``: ``{field: [reasons]}``, ``{}`` when no field is at fault; reasons may be lazy
  texts too and are read as ``str`` in the language active when ``errors`` is read;
- ``status``: the HTTP status that fits (400 bad input, 403, 404, 409 conflict, 413...);
- ``code``: a machine-readable reason (``invalid``, ``not_found``, ``conflict``...);
- ``extra``: more keys for the API body (``current_version``, ``errorCode``...).

A kind that reports bad input is also a ``ValueError`` (a missing thing also a
``LookupError``), as it was before the kinds shared this base: code that cannot import the
kind, such as the runtime's model executor catching a prompt that cannot be rendered
(``ValueError``, see ``teamclaw.runtime.execution.PromptRenderer``), still catches it.
"""

from __future__ import annotations

from typing import Any, cast


class DomainError(Exception):
    """A refused request (see module docstring). Subclasses set a default ``status``/``code``."""

    status: int = 400
    code: str = "invalid"

    def __init__(
        self,
        message: str,
        *,
        errors: dict[str, list[str]] | None = None,
        status: int | None = None,
        code: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self._message = message
        self._errors: dict[str, list[str]] = errors or {}
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.extra: dict[str, Any] = dict(extra or {})

    @property
    def message(self) -> str:
        """The sentence, in the language active now (see the module docstring)."""
        return str(self._message)

    @message.setter
    def message(self, value: str) -> None:
        self._message = value

    @property
    def errors(self) -> dict[str, list[str]]:
        """``{field: [reasons]}``, each reason a ``str`` in the language active now (a copy)."""
        return {field: [str(reason) for reason in reasons] for field, reasons in self._errors.items()}

    @errors.setter
    def errors(self, value: dict[str, list[str]]) -> None:
        self._errors = value

    def body(self) -> dict[str, Any]:
        """The API's error body: ``{"detail": message, "errors": {...}, **extra}``."""
        return {"detail": self.message, "errors": self.errors, **self.extra}


class InvalidField(DomainError):
    """One input is refused: ``reason`` says why ``field`` cannot be used (message
    ``"field: reason"``, errors ``{field: [reason]}``); 400 unless ``status`` says otherwise."""

    def __init__(self, reason: str, field: str, *, status: int | None = None, code: str | None = None) -> None:
        self.reason = reason
        self.field = field
        super().__init__(cast(str, _Joined(field, reason)), errors={field: [reason]}, status=status, code=code)


class _Joined:
    """``"field: reason"`` worded when read: ``reason`` may be a lazy text (InvalidField)."""

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class NotFound(DomainError):
    """Something named in the request does not exist (404); ``errors`` stays empty."""

    status = 404
    code = "not_found"


class Conflict(DomainError):
    """The request contradicts the current state (409)."""

    status = 409
    code = "conflict"


def field_message(errors: dict[str, list[str]], fallback: str = "invalid input") -> str:
    """``"<field>: <first reason>"`` of the first field in ``errors`` (just the reason for
    ``non_field_errors`` or a blank field; ``fallback`` when there is none)."""
    first = next(iter(errors.items()), None)
    if first is None or not first[1]:
        return fallback
    field, reasons = first
    return f"{field}: {reasons[0]}" if field and field != "non_field_errors" else reasons[0]

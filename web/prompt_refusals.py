"""Why a prompt save, activation or rollback was refused, in the page's language (issue 32
"Every word in the page's language"; PRD §4.8).

``prompts.actions`` words most ``PromptChangeError`` reasons when they are read, so the API
answers in the request's language as the page does (save, activate and rollback refusals:
tests/web/test_refusal_languages.py); the rest are worded in English when raised, and a page
shows those in its reader's language here: an
``ActivationRefused`` is worded again from its ``ContentCheck`` (the names used but not
declared, or the sample render's failure), and the other refusals are matched against the
rows of ``REASONS`` (the English pattern and the catalog's wording, each row tested from the
row in tests/web/test_translations.py). A reason no row matches is shown as it is."""

from __future__ import annotations

import re

from django.utils.functional import Promise
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _lazy

from prompts.actions import ActivationRefused, ContentCheck, PromptChangeError
from prompts.render import ALWAYS_AVAILABLE, PromptRenderError

REASONS: tuple[tuple[re.Pattern[str], Promise], ...] = (
    (
        re.compile(r"may not be blank when it is activated: .*"),
        _lazy("may not be blank when it is activated: the role would get no instructions (save it as a draft instead)"),
    ),
    (
        re.compile(
            r"nothing to save: content, variables and language are those of the active version (?P<version>\S+)"
        ),
        _lazy("nothing to save: content, variables and language are those of the active version %(version)s"),
    ),
    (
        re.compile(r"the active version is now (?P<current>\S+), not (?P<base>\S+): .*"),
        _lazy(
            "the active version is now %(current)s, not %(base)s: someone changed this template; reload it and "
            "reapply your edit"
        ),
    ),
    (
        re.compile(r"another change to this template was saved at the same moment; retry"),
        _lazy("another change to this template was saved at the same moment; retry"),
    ),
    (
        re.compile(r"version (?P<version>\S+) is already active"),
        _lazy("version %(version)s is already active"),
    ),
    (
        re.compile(r"version (?P<version>\S+) is older than the active (?P<active>\S+); roll back to it instead"),
        _lazy("version %(version)s is older than the active %(active)s; roll back to it instead"),
    ),
    (
        re.compile(r"nothing to roll back: it is"),
        _lazy("nothing to roll back: it is the active version"),
    ),
    (
        re.compile(r"nothing to roll back: it has the same content as the active version (?P<version>\S+)"),
        _lazy("nothing to roll back: it has the same content as the active version %(version)s"),
    ),
    (
        re.compile(r"not valid JSON: (?P<detail>.*)", re.S),
        _lazy("not valid JSON: %(detail)s"),
    ),
    (
        re.compile(r"must be a JSON object"),
        _lazy("must be a JSON object"),
    ),
    (
        re.compile(r"must be a JSON list"),
        _lazy("must be a JSON list"),
    ),
    (
        re.compile(r"content must be text"),
        _lazy("content must be text"),
    ),
    (
        re.compile(r"content contains a NUL character"),
        _lazy("content contains a NUL character"),
    ),
)
"""``(pattern of the English reason, its wording)``; the pattern's named groups fill the
wording's ``%(name)s``."""


RENDER_FRAMES: dict[str, Promise] = {
    "syntax": _lazy("the template has a syntax error"),
    "undefined": _lazy("the template uses a name that is not defined"),
    "missing": _lazy("a required variable has no value"),
    "security": _lazy("the sandbox refuses what the template does"),
    "limit": _lazy("the template goes over a rendering limit"),
    "error": _lazy("the template failed while rendering"),
}
"""What went wrong, by ``PromptRenderError.kind`` (prompts/render.py), in the reader's language."""


def render_error_words(error: PromptRenderError) -> dict[str, str]:
    """A failed render told in the active language (issue 32): ``{"message": the framing,
    with the layer and the line where known ("第 3 行：模板语法错误"), "detail": the
    engine's own English message (Jinja's, such as ``unexpected '}'``), shown quoted}``."""
    frame = str(RENDER_FRAMES.get(error.kind, RENDER_FRAMES["error"]))
    if error.line:
        frame = gettext("line %(line)s: %(what)s") % {"line": error.line, "what": frame}
    if getattr(error, "template_type", ""):
        frame = f"{error.template_type} ({error.layer}): {frame}"
    detail = error.reason.removeprefix("syntax error: ")
    return {"message": frame, "detail": detail}


def render_error_text(error: PromptRenderError) -> str:
    """``render_error_words`` as one line: the framing, then the detail in quotes."""
    words = render_error_words(error)
    return gettext("%(message)s: “%(detail)s”") % words


def activation_words(check: ContentCheck) -> str:
    """Why ``check``'s content may not become active, in the active language (the same
    grounds as ``ContentCheck.activation_refusal``); '' when it may."""
    available = ", ".join(ALWAYS_AVAILABLE)
    if check.undeclared:
        names = ", ".join(_with_close(name, check.suggestions.get(name, [])) for name in check.undeclared)
        return ngettext(
            "cannot be activated: %(names)s is used but not declared; declare it in variables or use an "
            "always-available variable (%(available)s); save it as a draft to keep it",
            "cannot be activated: %(names)s are used but not declared; declare them in variables or use an "
            "always-available variable (%(available)s); save it as a draft to keep it",
            len(check.undeclared),
        ) % {"names": names, "available": available}
    if check.error is not None:
        return gettext(
            "cannot be activated: it does not render with its declared variables and the always-available ones "
            "(%(available)s): %(reason)s; save it as a draft to keep it"
        ) % {"available": available, "reason": render_error_text(check.error)}
    return ""


def _with_close(name: str, close: list[str]) -> str:
    if not close:
        return repr(name)
    return gettext("%(name)s (did you mean %(close)s?)") % {
        "name": repr(name),
        "close": gettext(" or ").join(repr(c) for c in close),
    }


def reason_words(reason: str) -> str:
    """An English refusal ``reason`` in the active language (the first row of ``REASONS``
    whose pattern matches it whole), or ``reason`` as it is."""
    reason = str(reason)  # a lazy reason (prompts.actions) is already worded in the active language
    for pattern, wording in REASONS:
        if found := pattern.fullmatch(reason):
            return str(wording) % found.groupdict() if found.groupdict() else str(wording)
    return reason


def refusal_words(refusal: PromptChangeError) -> str:
    """What a page shows for ``refusal``: ``activation_words`` for an ``ActivationRefused``,
    ``render_error_text`` for the content's compile or render failure, ``reason_words`` for
    any other."""
    if isinstance(refusal, ActivationRefused):
        return activation_words(refusal.check) or reason_words(refusal.reason)
    if refusal.render_error is not None and refusal.field != "variables":
        return render_error_text(refusal.render_error)
    return reason_words(refusal.reason)

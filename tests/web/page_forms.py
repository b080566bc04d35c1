"""Reading a page form's refusal from its HTML: the reasons shown next to a field
(``templates/forms/_field_errors.html``) and the value the field kept."""

from __future__ import annotations

import html
import re

from django.http import HttpResponse

LANGUAGES = {"en": "en", "zh": "zh-hans"}
"""The two page languages a form refusal is checked in (Accept-Language values)."""


def field_error(response: HttpResponse, field: str) -> str:
    """The text shown next to ``field`` (its ``forms/_field_errors.html`` block), '' if none."""
    page = response.content.decode()
    block = rf'<div class="error field-error" role="alert" id="[^"]*" data-field="{re.escape(field)}">(.*?)</div>'
    found = re.search(block, page, re.S)
    return html.unescape(found.group(1)) if found else ""


def assert_refused(response: HttpResponse, field: str, reason: str) -> None:
    """The page answered 400 with ``reason`` next to ``field`` and the field, when the page
    shows an input for it, marked invalid."""
    assert response.status_code == 400, response.status_code
    shown = field_error(response, field)
    assert reason in shown, f"{field}: {shown!r} does not say {reason!r}"
    page = response.content.decode()
    if f'name="{field}"' in page:
        assert re.search(rf'name="{re.escape(field)}"[^>]*aria-invalid="true"', page), f"{field} is not marked invalid"

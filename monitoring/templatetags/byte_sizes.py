"""Sizes in decimal units (kB = 1,000 bytes), as limits are set and refusals state them."""

from __future__ import annotations

from django import template
from django.utils.translation import ngettext

from teamclaw.labels import bracketed

register = template.Library()

_UNITS = ((1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "kB"))


@register.filter
def decimal_size(value: int) -> str:
    """``value`` bytes in the largest decimal unit, to one decimal, with the exact count:
    1,000,000 -> ``"1 MB (1,000,000 bytes)"``; under 1 kB only the count (``"999 bytes"``),
    "bytes" and the brackets in the page's language (``1 MB（1,000,000 字节）``).

    Django's ``filesizeformat`` divides by 1,024 and showed a 1,000,000-byte limit as
    "976.6 KB" next to errors saying "the limit is 1,000,000 bytes"."""
    size = int(value)
    exact = ngettext("%(count)s byte", "%(count)s bytes", size) % {"count": f"{size:,}"}
    for factor, unit in _UNITS:
        if size >= factor:
            amount = f"{size / factor:.1f}".removesuffix(".0")
            return f"{amount} {unit} {bracketed(exact)}"
    return exact

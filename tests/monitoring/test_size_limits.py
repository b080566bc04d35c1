"""Size limits read in decimal units with the exact bytes, as the refusals state them."""

from __future__ import annotations

import pytest

from monitoring.templatetags.byte_sizes import decimal_size


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (1_000_000, "1 MB (1,000,000 bytes)"),
        (2_000_000, "2 MB (2,000,000 bytes)"),
        (262_144, "262.1 kB (262,144 bytes)"),
        (1_500, "1.5 kB (1,500 bytes)"),
        (999, "999 bytes"),
        (1, "1 byte"),
        (5_000_000_000, "5 GB (5,000,000,000 bytes)"),
    ],
)
def test_decimal_size(size, shown):
    assert decimal_size(size) == shown


def test_the_pages_state_their_limits_in_decimal_units(page_client, builtin):
    assert "UTF-8 text up to 1 MB (1,000,000 bytes)." in page_client.get("/tasks/new/").content.decode()
    assert "Up to 262.1 kB (262,144 bytes)." in page_client.get("/skills/_upload/").content.decode()
    assert "Up to 2 MB (2,000,000 bytes), YAML or JSON." in page_client.get("/config/transfer/").content.decode()

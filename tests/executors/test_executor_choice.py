"""Which executor runs a call (teamclaw.runtime.executors.choose_kind): plugin-bound cards
keep theirs, a role's choice switches brains, and ``offline`` cards follow the server default."""

from __future__ import annotations

import pytest

from teamclaw.runtime import RoleSpec
from tests.factories import echo_card


@pytest.mark.parametrize(
    ("card_kind", "role_kind", "default", "expected"),
    [
        ("offline", None, "offline", "offline"),
        ("offline", None, "openai", "openai"),  # a configured model drives the team
        ("openai", None, "offline", "openai"),  # the card's own brain
        ("offline", "offline", "openai", "offline"),  # the role keeps its brain offline
        ("openai", "offline", "openai", "offline"),
        ("http", "openai", "openai", "http"),  # a plugin card always runs on its plugin
        ("translator", "offline", "offline", "translator"),  # so does an entry-point one
        ("offline", "translator", "offline", "translator"),  # a role may choose a plugin brain
    ],
)
def test_choose_kind(card_kind, role_kind, default, expected):
    from teamclaw.runtime.executors import choose_kind

    role = RoleSpec("b", "B", executor=role_kind)
    assert choose_kind(echo_card(executor=card_kind), role, default) == expected

"""The UI is English (the PRD is Chinese): no page shows Chinese words of its own.

User data may be in any language (a requirement document, a skill's descriptions), so the
pages are rendered over the built-in team and English-only data."""

from __future__ import annotations

import re

from capabilities.models import CapabilityCard, Project
from capabilities.skill_models import SkillStatus
from tests.skills.support import bring_up, skill_yaml

CJK = re.compile(r"[\u4e00-\u9fff]")

PAGES = [
    "/",
    "/tasks/",
    "/tasks/new/",
    "/live/",
    "/live/log/",
    "/stats/tokens/",
    "/alerts/",
    "/roles/",
    "/roles/new/",
    "/roles/coderA/",
    "/capabilities/",
    "/capabilities/{card}/",
    "/permissions/invoke/",
    "/permissions/tools/",
    "/permissions/invoke/?project=shop",
    "/constraints/",
    "/constraints/coderA/",
    "/projects/",
    "/projects/shop/",
    "/config/changes/",
    "/config/transfer/",
    "/prompts/",
    "/prompts/pm/",
    "/prompts/pm/persona/",
    "/prompts/pm/persona/edit/",
    "/prompts/pm/preview/",
    "/skills/",
    "/skills/_upload/",
    "/skills/english/",
    "/skills/english/deactivate/",
    "/graph/",
    "/workflows/",
]


def test_pages_show_no_chinese_words(page_client, runtime_host, api):
    Project.objects.create(slug="shop", name="Shop")
    bring_up(api, skill_yaml("english", "lookup", "search:ENTRY"))
    card = CapabilityCard.objects.filter(skill__isnull=True).first().capability_id
    found = {}
    for path in PAGES:
        response = page_client.get(path.format(card=card))
        assert response.status_code == 200, path
        if chinese := CJK.findall(response.content.decode()):
            found[path] = "".join(dict.fromkeys(chinese))
    assert found == {}


def test_skill_states_are_labelled_in_english():
    for value, label in SkillStatus.choices:
        assert not CJK.search(label), value

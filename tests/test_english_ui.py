"""The UI is English (the PRD is Chinese): no page shows Chinese words of its own.

User data may be in any language (a requirement document, a skill's descriptions), so the
pages are rendered over the built-in team and English-only data."""

from __future__ import annotations

import re

from capabilities.models import CapabilityCard, Project
from capabilities.skill_models import SkillStatus
from tests.pages import page_path, page_patterns, parameters, takes_get
from tests.skills.support import bring_up, skill_yaml

CJK = re.compile(r"[\u4e00-\u9fff]")

UNFILLED = {"task_id", "name", "context_id", "confirmation_id", "alert_id", "workflow_id"}
"""Pages about one run or workflow (the test's world has none); their fragments are the live
page's and the task page's, which are checked here."""


def test_pages_show_no_chinese_words(page_client, runtime_host, api):
    Project.objects.create(slug="shop", name="Shop")
    bring_up(api, skill_yaml("english", "lookup", "search:ENTRY"))
    card = CapabilityCard.objects.filter(skill__isnull=True).first().capability_id
    values = {
        "role": "coderA",
        "capability_id": card,
        "which": "invoke",
        "slug": "shop",
        "template_type": "persona",
        "version": "1.0.0",
        "skill_id": "english",
        "action": "deactivate",
    }
    paths = ["/permissions/invoke/?project=shop", "/permissions/tools/"]
    for pattern in page_patterns():
        path = page_path(pattern, values)
        if path is None:
            assert set(parameters(pattern)) & UNFILLED, pattern.name
        else:
            paths.append(path)
    found = {}
    for path in paths:
        response = page_client.get(path)
        if not takes_get(response):
            continue
        assert response.status_code == 200, path
        if chinese := CJK.findall(response.content.decode()):
            found[path] = "".join(dict.fromkeys(chinese))
    assert found == {}


def test_skill_states_are_labelled_in_english():
    for value, label in SkillStatus.choices:
        assert not CJK.search(label), value

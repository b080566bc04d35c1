"""Helpers for the skill tests: seed 003's example files and small skill packages."""

from __future__ import annotations

import re
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "data"
SKILLS = DATA / "skills"

SEED_COMPLETE = ["customer-service-bot", "hr-assistant", "smart-assistant", "workflow-assistant"]
"""Seed 003 examples carrying every field the full schema marks 必填 (id, name, version)."""
SEED_MISSING = {
    "llm-provider": ["skill.version"],
    "smart-workflow": ["skill.version"],
    "weather-service": ["skill.name", "skill.version"],
}
"""Seed 003 examples lacking required fields, with the fields they lack."""


def seed_text(name: str) -> str:
    return (SKILLS / f"{name}.yaml").read_text(encoding="utf-8")


def add_fields(text: str, **fields: str) -> str:
    """``text`` with ``key: value`` lines added right after the skill's ``id:`` line."""
    lines = "".join(f"\n  {key}: {value}" for key, value in fields.items())
    return re.sub(r"(?m)^(  id: .*)$", lambda m: m.group(1) + lines, text, count=1)


def skill_yaml(skill_id: str, *capabilities: str, extra: str = "", version: str = "1.0.0", form: str = "SCENE") -> str:
    """A small skill-index.yaml; each capability is ``name:TYPE`` (EXPOSED by default)."""
    caps = ""
    for spec in capabilities:
        name, _, kind = spec.partition(":")
        caps += f"    - name: {name}\n      type: {kind or 'EXPOSED'}\n"
    body = f"skill:\n  id: {skill_id}\n  name: {skill_id} skill\n  version: {version}\n  skillForm: {form}\n"
    if caps:
        body += "  capabilities:\n" + caps
    return body + extra


def upload(api, text: str):
    return api.post("/api/v1/skills", text.encode(), content_type="application/yaml")


def bring_up(api, text: str, role: str = "devops") -> str:
    """Upload, install and activate a skill through the API; returns its id."""
    response = upload(api, text)
    assert response.status_code in (200, 201), response.content
    skill_id = response.json()["skillId"]
    assert api.post(f"/api/v1/skills/{skill_id}/install", {}, format="json").status_code == 200
    activated = api.post(f"/api/v1/skills/{skill_id}/activate", {"role": role}, format="json")
    assert activated.status_code == 200, activated.content
    return skill_id

"""Helpers for the prompt tests: URLs and a project to override in."""

from __future__ import annotations

import pytest

from capabilities.models import Project


def versions_url(role: str = "pm", template_type: str = "persona") -> str:
    return f"/api/v1/prompts/{role}/{template_type}/versions"


@pytest.fixture
def shop(db) -> Project:
    return Project.objects.create(
        slug="shop", name="Online shop", description="Sells books", tech_stack="Django + PostgreSQL"
    )

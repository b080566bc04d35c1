"""The demo knowledge a fresh install starts with (issue 32): two short documents written for
it, ``demo/数据库规范.md`` (database conventions, Chinese) for the ``dba`` role and
``demo/deployment-runbook.md`` (English) for ``devops``, so the Knowledge page and the search
API answer questions such as "表名怎么命名" or "How are tables named?" from the first
``make run``. ``manage.py load_demo_knowledge`` (run by ``make run``) adds each document that
its role does not already have by that name; it never replaces or re-indexes an existing one.
"""

from __future__ import annotations

from pathlib import Path

from capabilities.models import AgentRole
from knowledge.models import KnowledgeSource
from knowledge.sources import Upload, add_source

DEMO_FOLDER = Path(__file__).with_name("demo")
DEMO_SOURCES = (("数据库规范.md", "dba"), ("deployment-runbook.md", "devops"))
"""(file in ``DEMO_FOLDER``, role name) of every demo document."""


def load_demo_knowledge() -> list[KnowledgeSource]:
    """Add the demo documents their roles lack (indexed in full); the sources added. A role
    that does not exist (the built-in team not loaded) is skipped."""
    added = []
    for name, role in DEMO_SOURCES:
        if not AgentRole.objects.filter(role=role).exists():
            continue
        if KnowledgeSource.objects.filter(role__role=role, name=name).exists():
            continue
        data = (DEMO_FOLDER / name).read_bytes()
        added.append(add_source(Upload(name, "text/markdown", data), role=role, project=None, load_level="full"))
    return added

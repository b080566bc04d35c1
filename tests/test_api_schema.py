"""The OpenAPI schema behind /api/v1/docs/ is generated without a warning or error: every
operation has its own id and every view says what it answers (drf-spectacular)."""

from __future__ import annotations

import yaml
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS


def test_the_schema_generates_without_warnings_and_validates(db, tmp_path):
    GENERATOR_STATS.reset()  # warnings of earlier generations in this process do not count
    target = tmp_path / "schema.yml"
    # --fail-on-warn raises SchemaGenerationError on any warning or error, --validate on an invalid document
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text(encoding="utf-8"))
    ids = [op["operationId"] for item in schema["paths"].values() for op in item.values() if "operationId" in op]
    assert len(ids) == len(set(ids))
    assert "/api/v1/metrics/{capability_id}" in schema["paths"]
    assert {"tasks_list", "tasks_retrieve", "roles_list", "roles_retrieve"} <= set(ids)

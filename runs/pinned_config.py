"""Each task's pinned configuration, kept across processes (PRD §4.8; ``runs.models.PinnedConfig``).

``remember`` stores the document of every snapshot the runtime loads (once per version and
project) and drops the older documents no unfinished task still runs on; ``pinned_for`` gives a
resumed task the snapshot of the version it started on.
"""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction

from monitoring.models import Task
from runs.models import PinnedConfig
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.snapshot_document import DocumentFormatError, snapshot_from_document, snapshot_to_document

log = logging.getLogger(__name__)


def remember(snapshot: ConfigSnapshot) -> None:
    """Store ``snapshot``'s document unless its (version, project) is stored already, and
    delete this project's older documents that no queued or running task was pinned to."""
    key = snapshot.project_id or ""
    if PinnedConfig.objects.filter(version=snapshot.version, project_key=key).exists():
        return
    try:
        with transaction.atomic():
            PinnedConfig.objects.create(
                version=snapshot.version, project_key=key, document=snapshot_to_document(snapshot)
            )
    except IntegrityError:
        return  # another worker stored it first: the same version has the same document
    unfinished = Task.objects.filter(status__in=("queued", "running"))
    if snapshot.project_id:
        unfinished = unfinished.filter(project_id=snapshot.project_id)
    else:
        unfinished = unfinished.filter(project__isnull=True)
    in_use = unfinished.values_list("config_version", flat=True)
    PinnedConfig.objects.filter(project_key=key, version__lt=snapshot.version).exclude(version__in=in_use).delete()


def pinned_for(task: Task) -> ConfigSnapshot | None:
    """The snapshot ``task`` started on, or None when it never started (``config_version`` 0)
    or its document is gone or unreadable (then it runs on the current one; logged)."""
    if not task.config_version:
        return None
    row = PinnedConfig.objects.filter(version=task.config_version, project_key=task.project_id or "").first()
    if row is None:
        log.warning("task %s: no stored configuration v%s; it resumes on the current one", task.pk, task.config_version)
        return None
    try:
        return snapshot_from_document(row.document)
    except DocumentFormatError as exc:
        log.warning(
            "task %s: configuration v%s unreadable (%s); it resumes on the current one", task.pk, row.version, exc
        )
        return None

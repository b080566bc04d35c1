"""The configuration a runtime runs on: one ``ConfigSnapshot`` per project, reloaded lazily.

A task pins the snapshot current when it starts for its whole life (PRD §4.8). A
``ConfigChangeEvent`` only raises ``latest_version``; the next task start of a project whose
cached snapshot is older reloads it from ``config_source`` (in a worker thread: it reads the
database), so tasks in flight never see a change half-way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from teamclaw.runtime.config import ConfigSnapshot

ConfigSource = Callable[[str | None], ConfigSnapshot]
"""``(project_id or None) -> ConfigSnapshot`` at the current config version."""


class ConfigCache:
    """Snapshots by project id, from ``source`` or installed directly (tests, benchmarks).

    Raises ValueError when given neither a source nor a snapshot.
    """

    def __init__(self, source: ConfigSource | None = None, snapshot: ConfigSnapshot | None = None) -> None:
        if source is None and snapshot is None:
            raise ValueError("a Runtime needs a config_source or a snapshot")
        self._source = source
        self._snapshots: dict[str | None, ConfigSnapshot] = {}
        self._lock: asyncio.Lock | None = None
        self.latest_version = 0
        if snapshot is not None:
            self.install(snapshot)

    @property
    def cached(self) -> Mapping[str | None, ConfigSnapshot]:
        """The snapshots loaded so far, by project id (None = global)."""
        return self._snapshots

    def install(self, snapshot: ConfigSnapshot) -> None:
        """Use ``snapshot`` for its project from now on."""
        self._snapshots[snapshot.project_id] = snapshot
        self.latest_version = max(self.latest_version, snapshot.version)

    def note_version(self, change: Mapping[str, Any]) -> None:
        """Take a ConfigChangeEvent's ``new_version``: later task starts reload (PRD §4.8).
        A missing or malformed version changes nothing."""
        try:
            new_version = int(change.get("new_version") or 0)
        except (TypeError, ValueError):
            new_version = 0
        self.latest_version = max(self.latest_version, new_version)

    async def snapshot_for(self, project_id: str | None) -> ConfigSnapshot:
        """The newest snapshot for ``project_id``, reloading it when the config moved on.

        Without a source, a project falls back to the global snapshot; raises LookupError
        when there is none.
        """
        cached = self._snapshots.get(project_id)
        if cached is not None and (cached.version >= self.latest_version or self._source is None):
            return cached
        if self._source is None:
            fallback = self._snapshots.get(None)
            if fallback is None:
                raise LookupError(f"no configuration for project {project_id!r}")
            return fallback
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            cached = self._snapshots.get(project_id)
            if cached is not None and cached.version >= self.latest_version:
                return cached
            snapshot = await asyncio.to_thread(self._source, project_id)
            self._snapshots[project_id] = snapshot
            self.latest_version = max(self.latest_version, snapshot.version)
            return snapshot

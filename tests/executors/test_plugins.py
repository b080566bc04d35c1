"""Python executors come only from installed ``teamclaw.executors`` entry points: a real
distribution (``*.dist-info`` with ``entry_points.txt``) on ``sys.path``, loaded through
importlib.metadata."""

from __future__ import annotations

import textwrap
from pathlib import Path

from teamclaw.runtime import CardSpec, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.executors.plugins import entry_point_kinds, install_entry_point_executors
from tests.factories import object_schema, small_snapshot

PLUGIN = """
class Reverser:
    kind = "reverse"

    async def execute(self, call):
        return {"text": call.params["text"][::-1]}


async def shout(call):
    return {"text": call.params["text"].upper() + "!"}


not_an_executor = 42
"""


def install(site: Path, entry_points: str) -> None:
    """Install a distribution into ``site`` the way pip lays it out (module + dist-info)."""
    (site / "teamclaw_test_plugin.py").write_text(PLUGIN)
    info = site / "teamclaw_test_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: teamclaw-test-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))


ENTRY_POINTS = """
[teamclaw.executors]
reverse = teamclaw_test_plugin:Reverser
shout = teamclaw_test_plugin:shout
broken = teamclaw_test_plugin_missing:Thing
http = teamclaw_test_plugin:Reverser
number = teamclaw_test_plugin:not_an_executor
"""


async def test_installed_entry_points_become_executors_and_bad_ones_are_reported(tmp_path, monkeypatch):
    install(tmp_path, ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = ExecutorRegistry({"offline": OfflineExecutor()})
    installed = install_entry_point_executors(registry)
    assert installed == ["reverse", "shout"]
    problems = "\n".join(registry.problems)
    assert "broken" in problems
    assert "failed to load" in problems
    assert "http = " in problems  # a plugin may not replace a built-in executor
    assert "number" in problems
    assert "neither an executor" in problems
    assert entry_point_kinds() == ["broken", "number", "reverse", "shout"]

    schema = object_schema(text={"type": "string"})
    cards = [
        CardSpec("mirror", "Mirror", "reverses", "generation", schema, schema, "1.0.0", ("b",), executor="reverse"),
        CardSpec("yell", "Yell", "shouts", "generation", schema, schema, "1.0.0", ("b",), executor="shout"),
    ]
    runtime = Runtime(snapshot=small_snapshot(cards=cards), executors=registry)
    try:
        mirrored = await runtime.run_task(capability_id="mirror", params={"text": "abc"}, entry_role="b")
        yelled = await runtime.run_task(capability_id="yell", params={"text": "abc"}, entry_role="b")
    finally:
        await runtime.stop()
    assert mirrored.data == {"text": "cba"}
    assert yelled.data == {"text": "ABC!"}


async def test_a_card_naming_an_executor_that_is_not_installed_fails_clearly():
    schema = object_schema(text={"type": "string"})
    card = CardSpec("ghost", "Ghost", "x", "generation", schema, schema, "1.0.0", ("b",), executor="not_installed")
    runtime = Runtime(snapshot=small_snapshot(cards=[card]), executors=ExecutorRegistry({"offline": OfflineExecutor()}))
    try:
        result = await runtime.run_task(capability_id="ghost", params={"text": "abc"}, entry_role="b")
    finally:
        await runtime.stop()
    assert not result.success
    assert result.error.code == "executor_error"
    assert "'not_installed' is not available" in result.error.message

"""A fork's configuration overlay: laid over the pinned snapshot for one task, read back from JSON."""

from __future__ import annotations

import pytest

from teamclaw.runtime.config import ConfigSnapshot, LayeredPrompt, PromptSpec, RoleSpec, ToolMode
from teamclaw.runtime.overlay import ConfigOverlay, OverlayError


def snapshot() -> ConfigSnapshot:
    return ConfigSnapshot.build(
        version=7,
        roles=[RoleSpec("main", "Main"), RoleSpec("pm", "PM", executor="offline", executor_config={"model": "a"})],
        cards=[],
        invoke_allowed=[("main", "pm")],
        tool_modes={("main", "file_write"): "allow"},
        prompts={
            "pm": {
                "system": LayeredPrompt(PromptSpec("system", "1.0.0", "base"), PromptSpec("system", "1.0.0", "proj"))
            }
        },
    )


def test_the_overlay_changes_only_the_cells_it_names_and_keeps_the_version():
    overlay = ConfigOverlay.from_dict(
        {
            "prompts": {"pm/system": {"layer": "global", "version": "2.0.0", "content": "strict", "language": "zh"}},
            "tool_modes": {"main/file_write": "confirm", "pm/mcp:time/get_current_time": "allow"},
            "invoke": {"main/pm": False, "pm/main": True},
            "executors": {"pm": {"model": "b"}},
        }
    )
    changed = overlay.apply(base := snapshot())
    assert changed.version == base.version == 7
    layered = changed.prompts["pm"]["system"]
    assert (layered.base.content, layered.base.version, layered.project.content) == ("strict", "2.0.0", "proj")
    assert changed.tool_mode("main", "file_write") == ToolMode.CONFIRM
    assert changed.tool_mode("pm", "mcp:time/get_current_time") == ToolMode.ALLOW
    assert not changed.can_invoke("main", "pm") and changed.can_invoke("pm", "main")
    assert changed.roles["pm"].executor == "offline" and changed.roles["pm"].executor_config["model"] == "b"
    # the pinned snapshot itself is untouched
    assert base.can_invoke("main", "pm") and base.tool_mode("main", "file_write") == ToolMode.ALLOW
    assert base.prompts["pm"]["system"].base.content == "base"


def test_a_project_layer_override_keeps_the_global_base():
    overlay = ConfigOverlay.from_dict(
        {"prompts": {"pm/system": {"layer": "project", "version": "3.0.0", "content": "mine"}}}
    )
    layered = overlay.apply(snapshot()).prompts["pm"]["system"]
    assert (layered.base.content, layered.project.content) == ("base", "mine")


def test_the_document_round_trips_and_the_empty_overlay_is_a_no_op():
    document = {
        "prompts": {
            "pm/system": {"layer": "global", "version": "2.0.0", "content": "x", "variables": [], "language": "en"}
        },
        "tool_modes": {"main/file_write": "deny"},
        "invoke": {"pm/dba": True},
        "executors": {"pm": {"executor": "openai", "model": "m"}},
    }
    assert ConfigOverlay.from_dict(document).as_dict() == document
    base = snapshot()
    assert ConfigOverlay.from_dict(None).apply(base) is base
    assert not ConfigOverlay.from_dict({})


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ([], "config_overlay"),
        ({"matrix": {}}, "matrix"),
        ({"tool_modes": {"main/file_write": "sometimes"}}, "tool_modes.main/file_write"),
        ({"tool_modes": {"file_write": "allow"}}, "tool_modes.file_write"),
        ({"invoke": {"main/pm": 1}}, "invoke.main/pm"),
        ({"prompts": {"pm/system": {"layer": "task", "version": "1", "content": ""}}}, "prompts.pm/system.layer"),
        ({"prompts": {"pm/system": {"layer": "global", "content": ""}}}, "prompts.pm/system.version"),
        ({"executors": {"pm": {}}}, "executors.pm"),
        ({"executors": "pm"}, "executors"),
    ],
)
def test_a_bad_document_names_the_key_path(document, field):
    with pytest.raises(OverlayError) as raised:
        ConfigOverlay.from_dict(document)
    assert raised.value.field == field

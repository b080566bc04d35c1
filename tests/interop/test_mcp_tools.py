"""Which MCP tools a role sees and how a card becomes one (interop.mcp_tools), and how an
invoke's result becomes a tool result (interop.mcp_server.tool_result): in process, no server."""

from __future__ import annotations

import dataclasses

import pytest

from capabilities.models import AgentRole, CapabilityCard, InvokePermission
from capabilities.snapshot import governance_snapshot
from interop.mcp_server import MAX_ARGUMENTS_BYTES, origin_allowed, refuse_arguments, tool_result
from interop.mcp_tools import card_tool, reachable_cards, tool_annotations, tools_digest, tools_for_role
from teamclaw.runtime.config import CapabilityType

pytestmark = pytest.mark.django_db


def names(snapshot, role: str) -> set[str]:
    return {card.capability_id for card in reachable_cards(snapshot, role)}


def test_each_role_sees_the_cards_of_the_roles_its_matrix_row_allows(builtin):
    snapshot = governance_snapshot(None)
    everything = set(CapabilityCard.objects.filter(enabled=True).values_list("capability_id", flat=True))
    assert names(snapshot, "main") == everything  # PRD §4.7: main may invoke everyone
    for caller in AgentRole.objects.all():
        targets = InvokePermission.objects.filter(project=None, caller=caller, allowed=True).values("target")
        expected = set(
            CapabilityCard.objects.filter(enabled=True, owner_roles__in=targets).values_list("capability_id", flat=True)
        )
        assert names(snapshot, caller.role) == expected, caller.role
    assert names(snapshot, "dba") == set()  # dba may invoke no one
    assert names(snapshot, "nobody") == set()


def test_disabled_cards_disabled_owners_and_internal_cards_are_not_offered(builtin):
    snapshot = governance_snapshot(None)
    assert "tech_stack_selection" in names(snapshot, "pm")
    cards = dict(snapshot.cards)
    cards["tech_stack_selection"] = dataclasses.replace(cards["tech_stack_selection"], enabled=False)
    cards["ui_design"] = dataclasses.replace(cards["ui_design"], capability_type=CapabilityType.INTERNAL, skill_id="s")
    changed = dataclasses.replace(snapshot, cards=cards)
    assert {"tech_stack_selection", "ui_design"} & names(changed, "pm") == set()
    roles = dict(snapshot.roles)
    roles["architect"] = dataclasses.replace(roles["architect"], enabled=False)
    without_architect = dataclasses.replace(snapshot, roles=roles)
    # expert_review is also the pm's own card, but pm may not invoke pm: only the architect offered it.
    assert names(without_architect, "pm") == {"prototype_generation", "style_guide_creation", "ui_design"}
    roles["pm"] = dataclasses.replace(roles["pm"], enabled=False)
    assert names(dataclasses.replace(snapshot, roles=roles), "pm") == set()


def test_a_tool_carries_the_cards_name_schemas_and_hints(builtin):
    snapshot = governance_snapshot(None)
    card = snapshot.cards["tech_stack_selection"]
    tool = card_tool(card)
    assert (tool.name, tool.title, tool.annotations.title) == ("tech_stack_selection", card.name, card.name)
    assert tool.description.startswith(card.description) and "architect" in tool.description
    assert tool.input_schema == dict(card.input_schema) and tool.output_schema == dict(card.output_schema)
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    assert set(wire) >= {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}


@pytest.mark.parametrize(
    ("capability_id", "changes", "hints"),
    [
        # analysis, no tool: read-only; the other hints are meaningless then and left out
        ("tech_stack_selection", {}, (True, None, None, False)),
        ("code_review", {}, (True, None, None, False)),  # review that only reads files
        ("query_optimization", {}, (False, True, True, False)),  # analysis that needs the database
        ("ui_design", {}, (False, False, True, False)),  # design: adds, changes nothing
        ("deployment_config", {}, (False, True, True, False)),  # file_write + deployment
        ("ui_design", {"idempotent": False}, (False, False, False, False)),
        ("ui_design", {"executor": "http"}, (False, False, False, True)),  # a plugin: open world, not retried
        ("ui_design", {"required_tools": ("network",)}, (False, False, True, True)),
    ],
)
def test_hints_follow_the_category_the_tools_and_the_idempotent_flag(builtin, capability_id, changes, hints):
    card = dataclasses.replace(governance_snapshot(None).cards[capability_id], **changes)
    annotations = tool_annotations(card)
    got = (
        annotations.read_only_hint,
        annotations.destructive_hint,
        annotations.idempotent_hint,
        annotations.open_world_hint,
    )
    assert got == hints


def test_a_non_object_schema_still_gives_an_object_input_and_no_output_schema(builtin):
    card = dataclasses.replace(
        governance_snapshot(None).cards["ui_design"], input_schema={"type": "string"}, output_schema={"type": "array"}
    )
    tool = card_tool(card)
    assert tool.input_schema == {"type": "object", "properties": {}, "allOf": [{"type": "string"}]}
    assert tool.output_schema is None


def test_the_digest_changes_exactly_when_the_list_does(builtin):
    snapshot = governance_snapshot(None)
    assert tools_digest(tools_for_role(snapshot, "pm")) == tools_digest(tools_for_role(snapshot, "pm"))
    assert tools_digest(tools_for_role(snapshot, "pm")) != tools_digest(tools_for_role(snapshot, "designer"))
    cards = dict(snapshot.cards)
    cards["ui_design"] = dataclasses.replace(cards["ui_design"], description="Something else.")
    assert tools_digest(tools_for_role(dataclasses.replace(snapshot, cards=cards), "pm")) != tools_digest(
        tools_for_role(snapshot, "pm")
    )


def test_results_become_structured_content_or_tool_errors_naming_the_code():
    ok = tool_result(
        {"success": True, "data": {"stack": []}, "error": None, "task_id": "t1", "invoke_id": "i1", "attempts": 1},
        None,
    )
    assert (ok.is_error, ok.structured_content) == (False, {"stack": []})
    assert ok.meta["teamclaw/task_id"] == "t1" and '"stack"' in ok.content[0].text
    refused = tool_result(
        {
            "success": False,
            "data": None,
            "task_id": "t2",
            "error": {"code": "permission_denied", "message": "pm may not invoke dba", "details": {"to": "dba"}},
        },
        None,
    )
    assert refused.is_error and refused.structured_content is None
    assert refused.content[0].text == "permission_denied: pm may not invoke dba"
    assert refused.meta["teamclaw/error"]["code"] == "permission_denied" and refused.meta["teamclaw/task_id"] == "t2"
    unreached = tool_result(None, {"status": 503, "detail": "no worker answered", "errors": None})
    assert unreached.is_error and unreached.content[0].text == "unavailable: no worker answered"


def test_oversized_arguments_are_refused_before_any_invoke():
    assert refuse_arguments({"requirement": "x"}) is None
    refused = refuse_arguments({"requirement": "x" * (MAX_ARGUMENTS_BYTES + 1)})
    assert refused is not None and refused.is_error and refused.content[0].text.startswith("invalid_params:")


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ([(b"host", b"127.0.0.1:8000")], True),  # MCP clients send no Origin
        ([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:8000")], True),
        ([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://evil.example")], False),
        ([(b"host", b"127.0.0.1:8000"), (b"origin", b"http://127.0.0.1:9000")], False),
    ],
)
def test_a_browser_page_elsewhere_may_not_call_mcp(headers, allowed):
    assert origin_allowed({"type": "http", "headers": headers}) is allowed

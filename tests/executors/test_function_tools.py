"""The functions offered to a model (seed 003 FunctionContext.toTools): what is offered,
and names that stay valid and unique when capability ids, roles and tools collide."""

from __future__ import annotations

from teamclaw.runtime import CapabilityType, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.executors.function_tools import FUNCTION_NAME, FunctionTools
from tests.factories import echo_card, small_snapshot

LONG_ID = "a" + "b" * 62


class Capture:
    """An executor that only builds the FunctionTools of its call."""

    kind = "capture"

    def __init__(self) -> None:
        self.tools: FunctionTools | None = None

    async def execute(self, call):
        self.tools = FunctionTools(call)
        return {"text": "captured"}


async def offered() -> FunctionTools:
    cards = [
        echo_card("work", owners=("a",), executor="capture", required_tools=("file_read", "database")),
        echo_card("file_read", owners=("b",)),
        echo_card("review", owners=("b", "c")),
        echo_card("review__b", owners=("b",)),
        echo_card(LONG_ID, owners=("b", "c")),
        echo_card("helper", owners=("a",)),
        echo_card("internal_x", owners=("b",), capability_type=CapabilityType.INTERNAL, skill_id="other"),
        echo_card("switched_off", owners=("b",), enabled=False),
        echo_card("elsewhere", owners=("d",)),
    ]
    snapshot = small_snapshot(
        cards=cards,
        roles=["a", "b", "c", "d"],
        allowed=[("a", "a"), ("a", "b"), ("a", "c")],
        tool_modes={("a", "file_read"): "allow", ("a", "database"): "allow"},
    )
    capture = Capture()
    runtime = Runtime(snapshot=snapshot, executors=ExecutorRegistry({"offline": OfflineExecutor(), "capture": capture}))
    try:
        result = await runtime.run_task(capability_id="work", params={"text": "x"}, entry_role="a")
    finally:
        await runtime.stop()
    assert result.success, result.error
    assert capture.tools is not None
    return capture.tools


async def test_names_are_valid_unique_and_map_back_to_one_target_each():
    tools = await offered()
    names = [spec["function"]["name"] for spec in tools.specs()]
    assert len(names) == len(set(names)) == len(tools.targets)
    assert all(FUNCTION_NAME.match(name) for name in names)
    targets = {(t.capability_id, t.target_role, t.tool) for t in tools.targets.values()}
    assert targets == {
        (None, None, "file_read"),
        ("file_read", "b", None),
        ("review", "b", None),
        ("review", "c", None),
        ("review__b", "b", None),
        (LONG_ID, "b", None),
        (LONG_ID, "c", None),
        ("helper", "a", None),
    }
    assert tools.targets["file_read"].tool == "file_read"  # the tool keeps its name; the card gets a digest
    assert tools.targets["review__b"].capability_id == "review"  # first come, first named


async def test_what_is_not_offered():
    tools = await offered()
    capabilities = {t.capability_id for t in tools.targets.values()}
    assert "work" not in capabilities  # no self-recursion
    assert "internal_x" not in capabilities  # INTERNAL to another skill
    assert "switched_off" not in capabilities
    assert "elsewhere" not in capabilities  # a may not invoke d
    assert all(t.tool != "database" for t in tools.targets.values())  # no implementation on this server
    assert tools.lookup("work") is None  # not even by guessing its id
    assert tools.lookup("elsewhere").capability_id == "elsewhere"  # guessed: the runtime will refuse it

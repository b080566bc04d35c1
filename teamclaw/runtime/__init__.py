"""TeamClaw agent runtime: plain asyncio, no ORM (DESIGN.md §2, §4).

Public surface: ``Runtime``, ``ConfigSnapshot`` and its specs, ``InvokeRequest`` /
``InvokeResult``, ``HookEvent`` / ``HookAck`` / ``EventSubscription``, ``AgentMessage``,
``ErrorCode``, clocks and event sinks.
"""

from teamclaw.runtime.clock import ManualClock, SystemClock
from teamclaw.runtime.config import (
    CATEGORIES,
    TOOLS,
    CapabilityType,
    CardSpec,
    ConfigSnapshot,
    Constraints,
    LayeredPrompt,
    PromptSpec,
    RoleSpec,
    ToolMode,
)
from teamclaw.runtime.context import ContextStatus, ExecutionContext, SnapshotType, TaskState, TaskStatus
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.events import CollectingSink, EventKind, RuntimeEvent
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.runtime.invocation import (
    EventSubscription,
    HookAck,
    HookEvent,
    InvokeRequest,
    InvokeResult,
    RoutingStrategy,
)
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageType, Party, Priority
from teamclaw.runtime.runtime import Runtime

__all__ = [
    "CATEGORIES",
    "TOOLS",
    "AgentError",
    "AgentFailure",
    "AgentMessage",
    "CapabilityType",
    "CardSpec",
    "CollectingSink",
    "ConfigSnapshot",
    "Constraints",
    "ContextStatus",
    "DeliveryStatus",
    "ErrorCode",
    "EventKind",
    "EventSubscription",
    "ExecutionCall",
    "ExecutionContext",
    "ExecutorRegistry",
    "HookAck",
    "HookEvent",
    "InvokeRequest",
    "InvokeResult",
    "LayeredPrompt",
    "ManualClock",
    "MessageType",
    "OfflineExecutor",
    "Party",
    "Priority",
    "PromptSpec",
    "RoleSpec",
    "RoutingStrategy",
    "Runtime",
    "RuntimeEvent",
    "SnapshotType",
    "SystemClock",
    "TaskState",
    "TaskStatus",
    "ToolMode",
]

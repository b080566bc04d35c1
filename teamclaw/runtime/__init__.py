"""TeamClaw agent runtime: plain asyncio, no ORM (docs/architecture.md, "The runtime").

Public surface: the contract (``AgentRuntime``, ``AgentPort``) and its implementation
``Runtime``; ``ConfigSnapshot`` and its specs; ``InvokeRequest`` / ``InvokeResult``,
``HookEvent`` / ``HookAck`` / ``EventSubscription``, ``AgentMessage``, ``ErrorCode``; clocks;
the typed events and sinks.
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
from teamclaw.runtime.contract import AgentPort, AgentRuntime
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.events import (
    EVENT_TYPES,
    AlertRaised,
    ArtifactWritten,
    CallSite,
    CollectingSink,
    ConfigApplied,
    ConfirmationChanged,
    ContextChanged,
    EventKind,
    InstanceChanged,
    MessageSent,
    MessageStatusChanged,
    ModelCalled,
    RuntimeEvent,
    SnapshotTaken,
    TaskFinished,
    TaskProgress,
    TaskStarted,
    ToolUsed,
)
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
from teamclaw.runtime.tasks import TaskNotRunning

__all__ = [
    "CATEGORIES",
    "EVENT_TYPES",
    "TOOLS",
    "AgentError",
    "AgentFailure",
    "AgentMessage",
    "AgentPort",
    "AgentRuntime",
    "AlertRaised",
    "ArtifactWritten",
    "CallSite",
    "CapabilityType",
    "CardSpec",
    "CollectingSink",
    "ConfigApplied",
    "ConfigSnapshot",
    "ConfirmationChanged",
    "Constraints",
    "ContextChanged",
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
    "InstanceChanged",
    "InvokeRequest",
    "InvokeResult",
    "LayeredPrompt",
    "ManualClock",
    "MessageSent",
    "MessageStatusChanged",
    "MessageType",
    "ModelCalled",
    "OfflineExecutor",
    "Party",
    "Priority",
    "PromptSpec",
    "RoleSpec",
    "RoutingStrategy",
    "Runtime",
    "RuntimeEvent",
    "SnapshotTaken",
    "SnapshotType",
    "SystemClock",
    "TaskFinished",
    "TaskNotRunning",
    "TaskProgress",
    "TaskStarted",
    "TaskState",
    "TaskStatus",
    "ToolMode",
    "ToolUsed",
]

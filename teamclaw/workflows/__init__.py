"""Built-in workflows and the executors' brains for their capabilities.

Plain Python on top of ``teamclaw.runtime`` (no ORM): ``requirement_review`` (seed 002)
and a generic task. ``register_offline_handlers`` plugs them into an OfflineExecutor,
``register_model_handlers`` (model_review) into the ``openai`` executor.
"""

from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.workflows.model_review import register_model_handlers
from teamclaw.workflows.requirement_review import HANDLERS

WORKFLOWS = ("requirement_review", "generic")
WORKFLOW_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "requirement_review": (
        "task_orchestration",
        "expert_review",
        "requirement_consolidation",
        "requirement_quality_check",
    ),
    "generic": ("task_orchestration", "requirement_analysis"),
}
"""The capabilities each workflow invokes (their owners run them), for showing its executors."""
__all__ = ["WORKFLOWS", "WORKFLOW_CAPABILITIES", "register_model_handlers", "register_offline_handlers"]


def register_offline_handlers(executor: OfflineExecutor) -> None:
    """Give ``executor`` the handlers of the built-in workflow capabilities."""
    for capability_id, handler in HANDLERS.items():
        executor.register(capability_id, handler)

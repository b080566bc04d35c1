"""Built-in workflows and the offline executor's brains for their capabilities.

Plain Python on top of ``teamclaw.runtime`` (no ORM): ``requirement_review`` (seed 002)
and a generic task. ``register_offline_handlers`` plugs them into an OfflineExecutor.
"""

from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.workflows.orchestration import HANDLERS as ORCHESTRATION_HANDLERS
from teamclaw.workflows.requirement_review import HANDLERS

WORKFLOWS = ("requirement_review", "generic")


def register_offline_handlers(executor: OfflineExecutor) -> None:
    """Give ``executor`` the handlers of the built-in workflow capabilities."""
    for capability_id, handler in {**HANDLERS, **ORCHESTRATION_HANDLERS}.items():
        executor.register(capability_id, handler)

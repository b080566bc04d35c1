"""Built-in workflows and the executors' brains for their capabilities.

Plain Python on top of ``teamclaw.runtime`` (no ORM): ``requirement_review`` (seed 002:
phases 1-5 in ``drafting`` and ``interview``, phase 6 in ``requirement_review`` and the review
modules) and a generic task. ``register_offline_handlers`` plugs them into an OfflineExecutor,
``register_model_handlers`` (model_drafting, model_review) into the ``openai`` executor. Seed 003 workflows
(``workflow_orchestration``, orchestration.py) run the same deterministic engine on either.
"""

from typing import Any

from teamclaw.runtime.executors.offline import OfflineExecutor
from teamclaw.workflows.model_drafting import register_model_handlers as _register_drafting_model_handlers
from teamclaw.workflows.model_review import register_model_handlers as _register_review_model_handlers
from teamclaw.workflows.orchestration import HANDLERS as ORCHESTRATION_HANDLERS
from teamclaw.workflows.orchestration import run_orchestration_on_model
from teamclaw.workflows.requirement_review import HANDLERS

WORKFLOWS = ("requirement_review", "generic")
WORKFLOW_CAPABILITIES: dict[str, tuple[str, ...]] = {
    "requirement_review": (
        "task_orchestration",
        "project_type_matching",
        "requirement_interview",
        "question_aggregation",
        "requirement_writing",
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
    for capability_id, handler in {**HANDLERS, **ORCHESTRATION_HANDLERS}.items():
        executor.register(capability_id, handler)


def register_model_handlers(executor: Any) -> None:
    """Give the ``openai`` executor the requirement_review brains (model_drafting: type
    matching and interview wording; model_review: the experts) and the seed 003 workflow
    engine, which stays deterministic: the steps are the workflow's."""
    _register_drafting_model_handlers(executor)
    _register_review_model_handlers(executor)
    executor.register("workflow_orchestration", run_orchestration_on_model)

"""Who may run what: the checks an invoke or a capability-naming hook passes (PRD §4.2-§4.4, §4.7).

In order: the target role owns the capability -> the effective invoke matrix allows
caller -> target (unless the call stays inside one skill) -> role, card and skill enabled ->
an INTERNAL capability only from inside its skill -> params match the ``input_schema``.
Each failure raises ``AgentFailure`` with one ``ErrorCode``; none is retryable.
"""

from __future__ import annotations

from typing import Any

from teamclaw.runtime.articles import with_article
from teamclaw.runtime.config import CapabilityType, CardSpec, ConfigSnapshot
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import InvokeRequest
from teamclaw.runtime.messages import Party
from teamclaw.runtime.routing import InstancePool
from teamclaw.runtime.schemas import SchemaValidators, schema_errors


def check_policy(
    snapshot: ConfigSnapshot,
    card: CardSpec,
    target_role: str,
    caller: Party,
    caller_skill: str | None,
    *,
    enforce_matrix: bool = True,
) -> None:
    """Raise AgentFailure unless ``caller`` may have ``target_role`` run ``card``.

    ``caller_skill`` is the skill of the capability the caller is executing (None outside
    any skill); ``enforce_matrix`` False skips the invoke matrix (the operator handing a task
    to its entry role is not one role invoking another).
    """
    if target_role not in card.owner_roles:
        raise AgentFailure(
            ErrorCode.CAPABILITY_NOT_FOUND,
            f"role {target_role} does not offer {card.capability_id}",
            {"capability_id": card.capability_id, "target_role": target_role},
            retryable=False,
        )
    # A skill calling one of its own INTERNAL capabilities is the skill's inner working,
    # not one role invoking another: the invoke matrix governs calls between roles.
    inside_skill = (
        card.capability_type == CapabilityType.INTERNAL and card.skill_id is not None and caller_skill == card.skill_id
    )
    if enforce_matrix and not inside_skill and not snapshot.can_invoke(caller.role or "", target_role):
        raise AgentFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{caller.role} may not invoke {target_role} (invoke permission matrix, PRD §4.7)",
            {"from_role": caller.role, "target_role": target_role},
            retryable=False,
        )
    if not snapshot.roles[target_role].enabled:
        raise AgentFailure(
            ErrorCode.CAPABILITY_DISABLED,
            f"role {target_role} is disabled",
            {"target_role": target_role},
            retryable=False,
        )
    if not card.enabled:
        reason = f"skill {card.skill_id} is not active" if card.skill_id else "it is disabled"
        raise AgentFailure(
            ErrorCode.CAPABILITY_DISABLED,
            f"capability {card.capability_id} is unavailable: {reason}",
            {"capability_id": card.capability_id},
            retryable=False,
        )
    if card.capability_type == CapabilityType.INTERNAL and caller_skill != card.skill_id:
        raise AgentFailure(
            ErrorCode.PERMISSION_DENIED,
            f"{card.capability_id} is INTERNAL to skill {card.skill_id}",
            {"capability_id": card.capability_id, "skill_id": card.skill_id},
            retryable=False,
        )


def check_params(
    validators: SchemaValidators, card: CardSpec, params: dict[str, Any], message: str | None = None
) -> None:
    """Raise AgentFailure(invalid_params) listing JSON pointers when ``params`` fail the
    card's ``input_schema``; ``message`` words it for the caller (default: an invoke's
    "params do not match the input schema of <capability_id>")."""
    input_validator, _ = validators.for_card(card)
    errors = schema_errors(input_validator, params)
    if errors:
        raise AgentFailure(
            ErrorCode.INVALID_PARAMS,
            message or f"params do not match the input schema of {card.capability_id}",
            {"errors": errors},
            retryable=False,
        )


def check_target_role(snapshot: ConfigSnapshot, role: str) -> None:
    """Raise AgentFailure unless ``role`` exists (capability_not_found) and is enabled
    (capability_disabled): the target roles a hook names."""
    if role not in snapshot.roles:
        raise AgentFailure(
            ErrorCode.CAPABILITY_NOT_FOUND, f"there is no role {role!r}", {"target_role": role}, retryable=False
        )
    if not snapshot.roles[role].enabled:
        raise AgentFailure(
            ErrorCode.CAPABILITY_DISABLED, f"role {role} is disabled", {"target_role": role}, retryable=False
        )


def resolve_target(
    snapshot: ConfigSnapshot, card: CardSpec, request: InvokeRequest, caller: Party, pool: InstancePool
) -> tuple[str, AgentInstance | None]:
    """``(target_role, instance or None)`` for ``request`` (PRD §4.4 调用路由策略).

    ``target_instance_id``: that live instance (unavailable when unknown, terminated or of
    another role than ``target_role``). ``target_role``: that role, instance routed later.
    Neither: the least loaded owner role the caller may invoke. Raises AgentFailure.
    """
    if request.target_instance_id:
        instance = pool.get(request.target_instance_id)
        if instance is None or not instance.alive:
            state = "unknown" if instance is None else "terminated"
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"instance {request.target_instance_id} is {state}",
                {"target_instance_id": request.target_instance_id, "reason": f"instance_{state}"},
                retryable=False,
            )
        if request.target_role and request.target_role != instance.role:
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"instance {instance.instance_id} is {with_article(instance.role)}, "
                f"not {with_article(request.target_role)}",
                {"target_instance_id": instance.instance_id},
                retryable=False,
            )
        return instance.role, instance
    if request.target_role:
        if request.target_role not in snapshot.roles:
            raise AgentFailure(
                ErrorCode.CAPABILITY_NOT_FOUND,
                f"there is no role {request.target_role!r}",
                {"target_role": request.target_role},
                retryable=False,
            )
        return request.target_role, None
    owners = [role for role in card.owner_roles if role in snapshot.roles]
    if not owners:
        raise AgentFailure(
            ErrorCode.CAPABILITY_NOT_FOUND,
            f"no role offers {card.capability_id}",
            {"capability_id": card.capability_id},
            retryable=False,
        )
    usable = [r for r in owners if snapshot.roles[r].enabled and snapshot.can_invoke(caller.role or "", r)]
    if not usable:
        return owners[0], None
    return min(usable, key=pool.load), None

"""Resuming a task after its process stopped: answering completed steps from the record.

A task whose worker died is run again from its start by another worker (docs/architecture.md
§3). Like a Temporal workflow replaying its history, the new attempt does not execute again
what the earlier attempt completed: every invoke whose response was recorded is answered from
that record, and a tool confirmation the operator was asked is the same confirmation (still
waiting, or decided). Calls that were in flight when the process stopped are executed again:
the guarantee is at least once for them, exactly once for completed steps.

A step is matched by who asked for what: ``(caller role, capability_id, params)``. The same
request made twice in one task is answered by its recorded responses in order; a request the
record does not hold (the brain asks something else this time: a model-backed agent) runs live.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

StepKey = tuple[str, str, str]


def step_key(caller_role: str, capability_id: str, params: Mapping[str, Any]) -> StepKey:
    """The key a step is matched by: caller role, capability, and the params as canonical JSON."""
    return caller_role, capability_id, json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)


def confirmation_key(role: str, tool: str, args: Mapping[str, Any]) -> StepKey:
    """The key a tool confirmation is matched by: the asking role, the tool and its arguments."""
    return role, tool, json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class RecordedStep:
    """An invoke the earlier attempt completed: who asked (``caller_role``) for what
    (``capability_id`` with ``params``) and the ``result`` that came back."""

    caller_role: str
    capability_id: str
    params: Mapping[str, Any]
    result: Mapping[str, Any]
    completed_at: float = 0.0
    """When the response was sent (epoch s)."""


@dataclass(frozen=True, slots=True)
class RecordedConfirmation:
    """A confirmation of the earlier attempt: its ``id`` and ``status`` (``pending``,
    ``approved``, ``rejected``, ``expired``, or ``answered`` with the ``answer``) and who
    decided it."""

    id: str
    role: str
    tool: str
    args: Mapping[str, Any]
    status: str
    decided_by: str = ""
    expires_at: float | None = None
    """Clock seconds at which a pending one expires (its original deadline)."""
    created_at: float | None = None
    """Clock seconds at which the operator was first asked."""
    answer: Mapping[str, Any] | None = None
    """An answered ``input``'s answer (status ``answered``)."""


@dataclass(frozen=True, slots=True)
class RecordedArtifact:
    """An artifact the earlier attempt wrote: the resumed task starts with it, as agents
    that read artifacts (main reading ``requirement_final.md``) expect after the step that
    wrote it, which is now answered from the record."""

    name: str
    content: str
    content_type: str
    role: str
    context_id: str | None
    created_at: float


@dataclass(slots=True)
class ResumeJournal:
    """What an earlier attempt of a task completed, consumed by the attempt that resumes it.

    ``attempt`` is this attempt's number (2 for the first resume). ``answered`` counts the
    invokes answered from the record so far; ``reattached`` the confirmations taken over.
    ``tokens_used`` (tokens) is what the earlier attempts' contexts were charged, and
    ``tokens_estimated`` whether any of it is an estimate: the resumed task counts on from
    there against its budget (PRD §4.7), rather than from 0.
    """

    attempt: int
    steps: dict[StepKey, deque[Mapping[str, Any]]] = field(default_factory=dict)
    confirmations: dict[StepKey, deque[RecordedConfirmation]] = field(default_factory=dict)
    artifacts: list[RecordedArtifact] = field(default_factory=list)
    fork_of: str | None = None
    """For a fork: the task whose steps it starts with; its artifacts are written anew."""
    rejected_tools: frozenset[str] = frozenset()
    """For a fork: ``role/tool`` pairs whose use the source's operator rejected; the fork
    holds each such use rejected without asking, whatever the tool's mode (issue 31)."""
    answered: int = 0
    reattached: int = 0
    tokens_used: int = 0
    tokens_estimated: bool = False

    @classmethod
    def of(
        cls,
        attempt: int,
        steps: Iterable[RecordedStep],
        confirmations: Iterable[RecordedConfirmation] = (),
        artifacts: Iterable[RecordedArtifact] = (),
        fork_of: str | None = None,
        *,
        tokens_used: int = 0,
        tokens_estimated: bool = False,
        rejected_tools: Iterable[str] = (),
    ) -> ResumeJournal:
        """A journal from the recorded steps, confirmations and artifacts, in recorded order,
        the tokens the earlier attempts used and, for a fork, the tool uses its source's
        operator rejected (``role/tool``)."""
        journal = cls(
            attempt,
            artifacts=list(artifacts),
            fork_of=fork_of,
            rejected_tools=frozenset(rejected_tools),
            tokens_used=max(0, int(tokens_used)),
            tokens_estimated=tokens_estimated,
        )
        for step in steps:
            key = step_key(step.caller_role, step.capability_id, step.params)
            journal.steps.setdefault(key, deque()).append(step.result)
        for confirmation in confirmations:
            key = confirmation_key(confirmation.role, confirmation.tool, confirmation.args)
            journal.confirmations.setdefault(key, deque()).append(confirmation)
        return journal

    def answer(self, caller_role: str, capability_id: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The recorded result of this step (consumed), or None when it must run live."""
        queue = self.steps.get(step_key(caller_role, capability_id, params))
        if not queue:
            return None
        self.answered += 1
        return dict(queue.popleft())

    def holds_rejected(self, role: str, tool: str) -> bool:
        """True when ``role``'s use of ``tool`` was rejected on the task this one forks."""
        return f"{role}/{tool}" in self.rejected_tools

    def confirmation(self, role: str, tool: str, args: Mapping[str, Any]) -> RecordedConfirmation | None:
        """The recorded confirmation of this tool use (consumed), or None when it is new."""
        queue = self.confirmations.get(confirmation_key(role, tool, args))
        if not queue:
            return None
        self.reattached += 1
        return queue.popleft()

    @property
    def remaining(self) -> int:
        """Recorded steps not (yet) answered."""
        return sum(len(queue) for queue in self.steps.values())

"""What a model-backed agent remembers (seed 003 ``MemoryContext``).

Per agent instance and conversation (one ``ExecutionContext``: an instance's view of a
task), a ``Memory`` holds:

- ``history``: the chat turns of its earlier model calls in this conversation (the task
  message, function calls with their results, the final answer), replayed after the system
  message on the next call and trimmed to a token budget (``trim``): the most recent turns
  are kept, a function call and its results are kept or dropped together, so the model never
  sees a result without its call or a call without its results;
- ``preferences`` and ``session_state``: small key-value maps an executor (or an operator
  through it) sets and the next calls see.

``Memory.state()`` is part of the context's state, so snapshots, the inspector and replay
show what the agent remembered at each step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MEMORY_TOKENS = 4000
"""Token budget (estimated, ~4 characters a token) of the history replayed to the model."""
MIN_MEMORY_TOKENS = 100
MAX_MEMORY_TOKENS = 1_000_000
"""Bounds of a memory budget, the process's (``TEAMCLAW_MEMORY_TOKENS``) and a role's
(``memory_tokens`` constraint, PRD §4.7) alike."""
BUDGET_DEFAULT = "default"
BUDGET_ROLE = "role"
"""Where a memory's budget came from (``Memory.budget_source``): the process default, or the
role's ``memory_tokens`` constraint."""
MAX_STORED_TURNS = 200
"""Turns kept per memory (older ones are trimmed away for good)."""


def turn_tokens(turn: dict[str, Any]) -> int:
    """Estimated tokens of one chat turn (its JSON, ~4 characters a token, at least 1)."""
    return max(1, len(json.dumps(turn, ensure_ascii=False, default=str)) // 4)


def units(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """``history`` cut into units that stand or fall together: an assistant turn with
    ``tool_calls`` and the ``tool`` turns answering it; every other turn alone. A ``tool``
    turn with no call before it is a unit of its own (``trim`` drops such orphans)."""
    out: list[list[dict[str, Any]]] = []
    for turn in history:
        if turn.get("role") == "tool" and out and _answers(out[-1], turn):
            out[-1].append(turn)
        else:
            out.append([turn])
    return out


def _answers(unit: list[dict[str, Any]], turn: dict[str, Any]) -> bool:
    calls = unit[0].get("tool_calls") or []
    return unit[0].get("role") == "assistant" and any(c.get("id") == turn.get("tool_call_id") for c in calls)


def _complete(unit: list[dict[str, Any]]) -> bool:
    """A unit the model may see: not an orphan result, and a call has all its results."""
    head = unit[0]
    if head.get("role") == "tool":
        return False
    calls = head.get("tool_calls") or []
    if not calls:
        return True
    answered = {t.get("tool_call_id") for t in unit[1:]}
    return all(c.get("id") in answered for c in calls)


def trim(history: list[dict[str, Any]], budget_tokens: int) -> list[dict[str, Any]]:
    """The most recent complete units of ``history`` whose estimated tokens fit in
    ``budget_tokens``, oldest first (a suffix of the complete units, never a split pair)."""
    kept: list[list[dict[str, Any]]] = []
    spent = 0
    for unit in reversed([u for u in units(history) if _complete(u)]):
        cost = sum(turn_tokens(t) for t in unit)
        if spent + cost > budget_tokens:
            break
        kept.append(unit)
        spent += cost
    return [turn for unit in reversed(kept) for turn in unit]


@dataclass(slots=True)
class Memory:
    """One instance's memory of one conversation (see module docstring). ``budget_tokens``
    bounds what ``recall`` replays; ``budget_source`` says where it came from
    (``BUDGET_DEFAULT`` the process's, ``BUDGET_ROLE`` the role's ``memory_tokens``
    constraint); ``trimmed`` counts turns left out of the last recall."""

    budget_tokens: int = DEFAULT_MEMORY_TOKENS
    budget_source: str = BUDGET_DEFAULT
    history: list[dict[str, Any]] = field(default_factory=list)
    preferences: dict[str, Any] = field(default_factory=dict)
    session_state: dict[str, Any] = field(default_factory=dict)
    trimmed: int = 0

    def recall(self) -> list[dict[str, Any]]:
        """The turns to replay now (``trim`` to ``budget_tokens``); notes how many were left out."""
        kept = trim(self.history, self.budget_tokens)
        self.trimmed = len(self.history) - len(kept)
        return kept

    def remember(self, turns: list[dict[str, Any]]) -> None:
        """Append the turns of a finished model call (keeping at most ``MAX_STORED_TURNS``,
        never cutting a function call from its results)."""
        self.history.extend(turns)
        if len(self.history) > MAX_STORED_TURNS:
            self.history = trim(self.history, sum(turn_tokens(t) for t in self.history[-MAX_STORED_TURNS:]))

    def state(self) -> dict[str, Any]:
        """JSON shape: ``{history, preferences, session_state, budget_tokens, budget_source,
        trimmed, tokens}``."""
        return {
            "history": [dict(t) for t in self.history],
            "preferences": dict(self.preferences),
            "session_state": dict(self.session_state),
            "budget_tokens": self.budget_tokens,
            "budget_source": self.budget_source,
            "trimmed": self.trimmed,
            "tokens": sum(turn_tokens(t) for t in self.history),
        }

"""Workflow definitions (seed 003 "编排配置" ``orchestration``): reading, validation at save.

A workflow is a list of steps run from the first:

- an **invoke** step calls ``capability`` (a ``cap://skill/capability[?query]`` address or a
  capability id) with ``input``, whose strings may hold ``${...}`` references; its optional
  ``output`` mapping names values taken from ``${result...}`` (what the capability
  returned). Without ``output`` the step's value is the whole result;
- a **switch** step (``type: switch``) evaluates ``condition`` (a reference) and goes to
  ``cases.<value>.next``, else to ``default.next`` (the seed writes it as
  ``cases.default``);
- after a step comes its ``next`` (a step id, or ``end``), else the step written after it.

References: ``${userInput}`` / ``${userInput.a.b}`` (the run's input), ``${<stepId>}`` /
``${<stepId>.field}`` (an earlier step's value), ``${result...}`` (only in ``output``). A
reference that is the whole string keeps the value's type; inside a longer string it is
interpolated as text.

``read_workflow(raw)`` refuses, with every problem's path: YAML and schema problems
(strict_yaml, ``schemas/orchestration.schema.json``), duplicate step ids, a ``next`` or case
naming no step, unreachable steps, loops, references to unknown steps, to steps that cannot
have run before, to switch steps or to outputs a step does not declare, capabilities the
registry does not know, INTERNAL ones (callable only inside their own skill), and params a
capability's input schema forbids or requires but the step omits. A capability that exists
but is not active is a warning (runs fail until its skill is activated).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capabilities.published_schemas import schema_problems
from capabilities.strict_yaml import YamlDocument, YamlError, YamlProblem, read_yaml
from teamclaw.runtime.address import AddressError, is_address, parse_address
from teamclaw.runtime.config import CapabilityType, CardSpec, ConfigSnapshot

MAX_WORKFLOW_BYTES = 262_144
REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_SEGMENT = re.compile(r"^[A-Za-z0-9_\-]+$")
END = "end"
NOT_A_STEP = frozenset({"workflow_orchestration", "task_orchestration"})
"""Capabilities that run whole workflows: a step calling one would nest workflows."""


class WorkflowError(YamlError):
    """A workflow that cannot be saved; ``problems`` lists every reason (path, line)."""

    document = "the workflow"


@dataclass(slots=True)
class WorkflowSpec:
    """A valid workflow: ``workflow_id``, ``name``, ``description``, ``definition`` (what
    the runtime runs: ``{id, name, steps: [...]}`` with each invoke step's resolved
    ``capability_id``) and ``warnings``."""

    workflow_id: str
    name: str
    description: str
    definition: dict[str, Any]
    warnings: list[YamlProblem] = field(default_factory=list)


def references(value: Any) -> list[str]:
    """Every ``${...}`` expression inside ``value`` (strings, nested mappings and lists)."""
    if isinstance(value, str):
        return [m.group(1).strip() for m in REFERENCE.finditer(value)]
    if isinstance(value, dict):
        return [ref for item in value.values() for ref in references(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in references(item)]
    return []


def _successors(step: dict[str, Any], following: str | None) -> list[str]:
    if step.get("type") == "switch":
        targets = [case["next"] for case in (step.get("cases") or {}).values()]
        if step.get("default"):
            targets.append(step["default"]["next"])
        return [t for t in targets if t != END]
    target = step.get("next", following)
    return [] if target in (None, END) else [target]


Add = Callable[[str, str], None]
"""``add(path, message)``: note a problem of the document at ``path``."""


def read_workflow(raw: bytes | str, snapshot: ConfigSnapshot) -> WorkflowSpec:
    """Read and validate a workflow against the registry in ``snapshot`` (module docstring).

    Raises WorkflowError listing every problem with its path and line."""
    try:
        document = read_yaml(raw, max_bytes=MAX_WORKFLOW_BYTES)
    except YamlError as exc:
        raise WorkflowError(exc.problems) from None
    problems = schema_problems(document, "orchestration")
    if problems:
        raise WorkflowError(problems)
    warnings = list(document.notices)
    problems = []

    def add(path: str, message: str) -> None:
        problems.append(YamlProblem(path, document.line_of(path), message))

    flow = document.data["orchestration"]
    steps: list[dict[str, Any]] = flow["steps"]
    index, default_in_cases = _check_steps(steps, add)
    _check_targets(steps, index, default_in_cases, add)
    if problems:
        raise WorkflowError(sorted(problems, key=lambda p: (p.line, p.path)))
    before = _check_graph(steps, add)
    _check_capabilities(steps, snapshot, document, warnings, index, before, add)
    if problems:
        raise WorkflowError(sorted(problems, key=lambda p: (p.line, p.path)))
    definition = {"id": flow["id"], "name": flow["name"], "steps": steps}
    return WorkflowSpec(flow["id"], flow["name"], flow.get("description", ""), definition, warnings)


def _check_steps(steps: list[dict[str, Any]], add: Add) -> tuple[dict[str, int], set[int]]:
    """Check each step's id and shape; ``(step id -> position, positions whose default was
    given among the cases)``. A switch's ``cases.default`` moves to its ``default``."""
    index: dict[str, int] = {}
    default_in_cases: set[int] = set()
    for position, step in enumerate(steps):
        path = f"orchestration.steps[{position}]"
        if step["id"] in index:
            add(f"{path}.id", f"step id {step['id']!r} is used twice (first by steps[{index[step['id']]}])")
        elif step["id"] in ("userInput", "result", END):
            add(f"{path}.id", f"{step['id']!r} is a reserved name")
        else:
            index[step["id"]] = position
        if step.get("type") == "switch":
            if _check_switch(step, path, add):
                default_in_cases.add(position)
        else:
            for key in ("condition", "cases", "default"):
                if key in step:
                    add(f"{path}.{key}", "only a switch step (type: switch) has " + key)
            if "capability" not in step:
                add(f"{path}.capability", "this field is required")
    return index, default_in_cases


def _check_switch(step: dict[str, Any], path: str, add: Add) -> bool:
    """Check a switch step; True when its default came as ``cases.default`` (moved)."""
    for key in ("capability", "input", "output", "next"):
        if key in step:
            add(f"{path}.{key}", "a switch step has no " + key + " (its cases say where to go)")
    if "condition" not in step:
        add(f"{path}.condition", "this field is required")
    cases = dict(step.get("cases") or {})
    moved = False
    if "default" in cases:
        if "default" in step:
            add(f"{path}.cases.default", "default is given twice (cases.default and default)")
        step["default"] = cases.pop("default")
        step["cases"] = cases
        moved = True
    if not cases:
        add(f"{path}.cases", "a switch needs at least one case")
    return moved


def _check_targets(steps: list[dict[str, Any]], index: dict[str, int], default_in_cases: set[int], add: Add) -> None:
    """Every ``next`` (of a step, a case, a default) names a step or ``end``."""
    ids = [s["id"] for s in steps]

    def check_target(path: str, target: str) -> None:
        if target != END and target not in index:
            guess = difflib.get_close_matches(target, ids, n=1)
            add(path, f"unknown step {target!r}" + (f"; did you mean {guess[0]!r}?" if guess else ""))

    for position, step in enumerate(steps):
        path = f"orchestration.steps[{position}]"
        if "next" in step:
            check_target(f"{path}.next", step["next"])
        for value, case in (step.get("cases") or {}).items():
            check_target(f"{path}.cases.{value}.next", case["next"])
        if step.get("default"):
            where = "cases.default" if position in default_in_cases else "default"
            check_target(f"{path}.{where}.next", step["default"]["next"])


def _check_graph(steps: list[dict[str, Any]], add: Add) -> dict[str, set[str]]:
    """Reachability from the first step and loops; returns, for each step, the steps that can
    run before it."""
    ids = [s["id"] for s in steps]
    graph = {
        step["id"]: _successors(step, steps[p + 1]["id"] if p + 1 < len(steps) else None)
        for p, step in enumerate(steps)
    }
    reachable = _reach(graph, steps[0]["id"]) | {steps[0]["id"]}
    for position, step in enumerate(steps):
        if step["id"] not in reachable:
            add(f"orchestration.steps[{position}]", f"step {step['id']!r} is unreachable: nothing leads to it")
    cycle = _cycle(graph, steps[0]["id"])
    if cycle:
        add("orchestration.steps", "the steps loop: " + " -> ".join(cycle) + " (a workflow must end)")
    reach = {sid: _reach(graph, sid) for sid in ids}
    return {sid: {a for a in ids if a != sid and sid in reach[a]} for sid in ids}


def _check_capabilities(
    steps: list[dict[str, Any]],
    snapshot: ConfigSnapshot,
    document: YamlDocument,
    warnings: list[YamlProblem],
    index: dict[str, int],
    before: dict[str, set[str]],
    add: Add,
) -> None:
    """Each invoke step's capability (resolved into ``capability_id``), its params, and every
    ``${...}`` reference of its input, condition and output."""
    cards: dict[str, CardSpec] = {}
    for position, step in enumerate(steps):
        path = f"orchestration.steps[{position}]"
        if step.get("type") != "switch" and "capability" in step:
            card = _card(step["capability"], snapshot, f"{path}.capability", add, warnings, document)
            if card is not None:
                cards[step["id"]] = card
                step["capability_id"] = card.capability_id
                _check_params(step, card, f"{path}.input", add)
        for key in ("input", "condition"):
            for ref in references(step.get(key)):
                _check_reference(ref, step, key, f"{path}.{key}", before, index, steps, cards, add)
        for ref in references(step.get("output")):
            if not (ref == "result" or ref.startswith("result.")):
                _check_reference(ref, step, "output", f"{path}.output", before, index, steps, cards, add)


def _reach(graph: dict[str, list[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = [start]
    while stack:
        node = stack.pop()
        for nxt in graph.get(node, []):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _cycle(graph: dict[str, list[str]], start: str) -> list[str]:
    """A loop reachable from ``start`` as ``[a, b, a]``, or [] (iterative DFS)."""
    state: dict[str, int] = {}
    path: list[str] = []
    stack: list[tuple[str, int]] = [(start, 0)]
    while stack:
        node, child = stack.pop()
        if child == 0:
            state[node] = 1
            path.append(node)
        successors = graph.get(node, [])
        if child < len(successors):
            stack.append((node, child + 1))
            nxt = successors[child]
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                stack.append((nxt, 0))
        else:
            state[node] = 2
            path.pop()
    return []


def _card(
    reference: str, snapshot: ConfigSnapshot, path: str, add: Any, warnings: list[YamlProblem], document: Any
) -> CardSpec | None:
    if is_address(reference):
        try:
            address = parse_address(reference)
        except AddressError as exc:
            add(path, f"{reference!r}: {exc}")
            return None
        capability_id = snapshot.addresses.get(address.base)
        card = snapshot.cards.get(capability_id) if capability_id else None
    else:
        card = snapshot.cards.get(reference)
    if card is None:
        add(path, f"unknown capability {reference!r}: no card answers at that address or id")
        return None
    if card.capability_id in NOT_A_STEP:
        add(path, f"{card.capability_id} runs whole workflows and tasks; a step cannot call it")
        return None
    if card.capability_type == CapabilityType.INTERNAL:
        add(path, f"{reference} is INTERNAL to skill {card.skill_id}: only that skill may call it")
        return None
    if not card.enabled:
        reason = f"skill {card.skill_id} is not active" if card.skill_id else "it is disabled"
        warnings.append(YamlProblem(path, document.line_of(path), f"{reference} is unavailable now ({reason})"))
    return card


def _check_params(step: dict[str, Any], card: CardSpec, path: str, add: Any) -> None:
    given = set((step.get("input") or {}).keys())
    if is_address(step["capability"]):
        try:
            given |= set(parse_address(step["capability"]).params)
        except AddressError:
            return
    schema = card.input_schema
    properties = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in given:
            add(path, f"{card.capability_id} requires the param {name!r}")
    if schema.get("additionalProperties") is False:
        for name in sorted(given - set(properties)):
            add(f"{path}.{name}", f"{card.capability_id} takes no param {name!r} (it takes {', '.join(properties)})")


def _check_reference(
    ref: str,
    step: dict[str, Any],
    key: str,
    path: str,
    before: dict[str, set[str]],
    index: dict[str, int],
    steps: list[dict[str, Any]],
    cards: dict[str, CardSpec],
    add: Any,
) -> None:
    parts = ref.split(".") if ref else [""]
    if not all(_SEGMENT.match(p) for p in parts):
        add(path, f"${{{ref}}} is not a reference: use ${{userInput}}, ${{userInput.field}} or ${{<stepId>.field}}")
        return
    head = parts[0]
    if head == "userInput":
        return
    if head == "result":
        add(path, "${result...} is only meaningful in a step's output")
        return
    if head not in index:
        add(path, f"${{{ref}}} refers to no step {head!r} (and is not userInput)")
        return
    if head == step["id"]:
        add(path, f"${{{ref}}} refers to this step itself")
        return
    if head not in before[step["id"]]:
        add(path, f"${{{ref}}}: step {head!r} never runs before {step['id']!r}")
        return
    target = steps[index[head]]
    if target.get("type") == "switch":
        add(path, f"${{{ref}}}: {head!r} is a switch and has no value")
        return
    if len(parts) > 1:
        if target.get("output"):
            if parts[1] not in target["output"]:
                declared = ", ".join(target["output"]) or "nothing"
                add(path, f"${{{ref}}}: step {head!r} has no output {parts[1]!r} (it declares {declared})")
        elif head in cards:
            schema = cards[head].output_schema
            props = schema.get("properties") or {}
            open_ended = schema.get("additionalProperties", False) is not False or schema.get("patternProperties")
            if props and not open_ended and parts[1] not in props:
                declared = ", ".join(props)
                add(path, f"${{{ref}}}: {cards[head].capability_id} returns no {parts[1]!r} (it declares {declared})")

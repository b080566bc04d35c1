"""Reading ``skill-index.yaml`` packages (seed 003) and what the registry derives from them.

``read_skill_index(raw)`` reads the YAML strictly (``strict_yaml``), validates it against
the published schema (``schemas/skill-index.schema.json``) and then checks what a schema
cannot: unique capability names and addresses, strict cap:// parsing (seed 003 "CAP 地址"),
a skill that depends on itself, default values of the declared type, LLM function
parameters that are valid JSON Schemas (the same check as cards' schemas: no ``$ref`` outside
the schema, no ``$ref`` cycle), implementations only on PROVIDER skills, alert
conditions that parse. It raises ``SkillIndexError`` with every problem (path, line,
reason) or returns a ``SkillIndex`` with the normalised document and warnings (YAML 1.1
readings, PROVIDER skills without implementations...).

``capability_cards(index)`` gives the card documents activation registers: input and output
JSON Schemas (2020-12) built from ``inputParameters`` / ``outputParameters``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from capabilities.published_schemas import schema_problems
from capabilities.strict_yaml import YamlDocument, YamlError, YamlProblem, join_path, read_yaml
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.address import AddressError, parse_address
from teamclaw.runtime.schemas import stored_schema_problems

MAX_SKILL_INDEX_BYTES = 262_144
"""Largest skill-index.yaml accepted (256 KiB)."""

SKILL_FORMS = ("SCENE", "PROVIDER", "DRIVER", "INTERNAL")
DEFAULT_CATEGORY = "execution"
DEFAULT_PRIORITY = 100
"""Seed 003 ``BaseProvider.getPriority()`` default."""

_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
    "object": dict,
    "array": list,
}
_CONDITION = re.compile(r"^\s*(?P<metric>[a-z0-9_]+)\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<value>\S+)\s*$")
_DURATION = re.compile(r"^(?P<n>[0-9]+)(?P<unit>ms|s|m|h)$")
HEALTH_STATES = ("HEALTHY", "DEGRADED", "UNHEALTHY")
METRICS = ("success_rate", "p99_latency_ms", "avg_latency_ms", "health_status")


class SkillIndexError(YamlError):
    """A skill-index.yaml that cannot be imported; ``problems`` lists every reason."""

    document = "the skill-index.yaml"


@dataclass(frozen=True, slots=True)
class AlertCondition:
    """A parsed alert ``condition``: ``metric op threshold`` (success_rate as a fraction 0-1,
    latencies in ms, health_status one of HEALTHY/DEGRADED/UNHEALTHY)."""

    metric: str
    op: str
    threshold: float | str

    def holds(self, value: float | str | None) -> bool:
        """True when ``value`` breaks the rule (None, i.e. no data, never does)."""
        if value is None:
            return False
        if self.metric == "health_status":
            if self.op == "==":
                return value == self.threshold
            if self.op == "!=":
                return value != self.threshold
            order = {state: float(index) for index, state in enumerate(HEALTH_STATES)}
            left, right = order.get(str(value), 0.0), order[str(self.threshold)]
        else:
            left, right = float(value), float(self.threshold)
        return {
            "<": left < right,
            "<=": left <= right,
            ">": left > right,
            ">=": left >= right,
            "==": left == right,
            "!=": left != right,
        }[self.op]


def parse_condition(text: str) -> AlertCondition:
    """Parse ``success_rate < 95%`` / ``p99_latency_ms > 5000`` / ``health_status == UNHEALTHY``
    (seed 003 ``alerting.rules[].condition``). Raises ValueError naming what is wrong."""
    match = _CONDITION.match(text or "")
    if match is None:
        raise ValueError("write <metric> <op> <value>, e.g. success_rate < 95%")
    metric, op, raw = match.group("metric"), match.group("op"), match.group("value")
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if metric == "health_status":
        if raw not in HEALTH_STATES:
            raise ValueError(f"{raw!r} is not a health status ({', '.join(HEALTH_STATES)})")
        return AlertCondition(metric, op, raw)
    percent = raw.endswith("%")
    try:
        number = float(raw[:-1] if percent else raw)
    except ValueError:
        raise ValueError(f"{raw!r} is not a number") from None
    if metric == "success_rate":
        if percent:
            number /= 100
        if not 0 <= number <= 1:
            raise ValueError("a success rate is a fraction between 0 and 1, or a percentage such as 95%")
    elif percent:
        raise ValueError(f"{metric} is in milliseconds, not a percentage")
    return AlertCondition(metric, op, number)


def parse_duration(text: str) -> float:
    """``5m`` -> 300.0 seconds (units ms, s, m, h). Raises ValueError for anything else."""
    match = _DURATION.match(text or "")
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 30s, 5m or 1h")
    return int(match.group("n")) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[match.group("unit")]


@dataclass(slots=True)
class SkillIndex:
    """A valid skill-index: ``document`` (the parsed YAML, dependencies normalised to
    objects), ``skill`` (its ``skill`` mapping) and ``warnings`` (path, line, reason)."""

    document: dict[str, Any]
    warnings: list[YamlProblem] = field(default_factory=list)

    @property
    def skill(self) -> dict[str, Any]:
        return self.document["skill"]

    @property
    def skill_id(self) -> str:
        return self.skill["id"]


def read_skill_index(raw: bytes | str) -> SkillIndex:
    """Read and validate a skill-index.yaml (see module docstring).

    Raises SkillIndexError listing every problem with its path and line.
    """
    try:
        yaml_document = read_yaml(raw, max_bytes=MAX_SKILL_INDEX_BYTES)
    except YamlError as exc:
        raise SkillIndexError(exc.problems) from None
    problems = schema_problems(yaml_document, "skill-index")
    if not problems:
        problems = _semantic_problems(yaml_document)
    if problems:
        raise SkillIndexError(problems)
    document = yaml_document.data
    skill = document["skill"]
    skill["dependencies"] = [normalise_dependency(d) for d in skill.get("dependencies") or []]
    warnings = list(yaml_document.notices)
    if skill.get("skillForm") == "PROVIDER" and not skill.get("implementations"):
        warnings.append(
            YamlProblem(
                "skill.implementations",
                yaml_document.line_of("skill"),
                "a PROVIDER skill without implementations runs its capabilities on the offline executor",
            )
        )
    for index, capability in enumerate(skill.get("capabilities") or []):
        if capability["type"] == "INTERNAL" and not any(
            c["type"] != "INTERNAL" for c in skill.get("capabilities") or []
        ):
            warnings.append(
                YamlProblem(
                    f"skill.capabilities[{index}]",
                    yaml_document.line_of(f"skill.capabilities[{index}]"),
                    "every capability is INTERNAL: nothing outside the skill can call it",
                )
            )
            break
    return SkillIndex(document, warnings)


def normalise_dependency(dependency: str | dict[str, Any]) -> dict[str, Any]:
    """A dependency as ``{skillId, capability, required, config}``; the seed's shorthand
    ``cap://http-client/default`` means a required dependency on that address."""
    if isinstance(dependency, str):
        address = parse_address(dependency)
        return {"skillId": address.skill_id, "capability": address.capability_name, "required": True, "config": {}}
    return {
        "skillId": dependency["skillId"],
        "capability": dependency["capability"],
        "required": dependency.get("required", True),
        "config": dependency.get("config") or {},
    }


Add = Callable[[str, str], None]
"""``add(path, message)``: note a problem of the document at ``path``."""


def _semantic_problems(yaml_document: YamlDocument) -> list[YamlProblem]:
    """What the JSON Schema cannot see: repeated names and addresses, bad defaults, a skill
    depending on itself, invalid function schemas, implementations outside PROVIDER skills,
    alert rules that cannot be read. Sorted by line."""
    problems: list[YamlProblem] = []

    def add(path: str, message: str) -> None:
        problems.append(YamlProblem(path, yaml_document.line_of(path), message))

    document = yaml_document.data
    skill = document["skill"]
    _check_plain_texts(skill, add)
    names = _check_capabilities(skill, add)
    _check_dependencies(skill, add)
    _check_functions_and_implementations(skill, add)
    _check_alert_rules(document, names, add)
    return sorted(problems, key=lambda p: (p.line, p.path))


PLAIN_TEXT_KEYS = ("name", "description")
"""The keys whose values the registry and the pages show: the skill's, each capability's and
each parameter's ``name`` and ``description``."""


def _check_plain_texts(skill: dict[str, Any], add: Add) -> None:
    """The names and descriptions shown in lists (the skill's, its capabilities', their
    parameters') are plain text (``teamclaw.plain_text``): no control or bidirectional control
    characters, which would let a package disguise what it installs (seed 003 skill-index)."""
    places: list[tuple[str, Any]] = [("skill", skill)]
    for index, capability in enumerate(skill.get("capabilities") or []):
        path = f"skill.capabilities[{index}]"
        places.append((path, capability))
        for kind in ("inputParameters", "outputParameters"):
            places.extend((f"{path}.{kind}[{i}]", p) for i, p in enumerate(capability.get(kind) or []))
    for path, item in places:
        if not isinstance(item, dict):
            continue
        for key in PLAIN_TEXT_KEYS:
            value = item.get(key)
            if isinstance(value, str) and (reason := hidden_character_problem(value)):
                add(join_path(path, key), reason)


def _check_capabilities(skill: dict[str, Any], add: Add) -> dict[str, str]:
    """Each capability's name, address and parameters; returns name -> its path."""
    names: dict[str, str] = {}
    addresses: dict[str, str] = {}
    for index, capability in enumerate(skill.get("capabilities") or []):
        path = f"skill.capabilities[{index}]"
        name = capability["name"]
        if name in names:
            add(join_path(path, "name"), f"capability {name!r} is declared twice (first at {names[name]})")
            continue
        names[name] = path
        address = capability.get("address") or f"cap://{skill['id']}/{name}"
        try:
            parsed = parse_address(address)
        except AddressError as exc:
            add(join_path(path, "address"), f"{address!r}: {exc}")
            continue
        if parsed.params:
            add(join_path(path, "address"), "a declared address cannot carry query parameters")
        if parsed.base in addresses:
            add(join_path(path, "address"), f"{parsed.base} is already the address of {addresses[parsed.base]}")
        addresses[parsed.base] = name
        _check_parameters(capability, path, add)
    return names


def _check_parameters(capability: dict[str, Any], path: str, add: Add) -> None:
    """A capability's input parameters (unique, defaults of their type) and outputs (unique)."""
    seen_params: set[str] = set()
    for p_index, parameter in enumerate(capability.get("inputParameters") or []):
        p_path = f"{path}.inputParameters[{p_index}]"
        if parameter["name"] in seen_params:
            add(join_path(p_path, "name"), f"parameter {parameter['name']!r} is declared twice")
        seen_params.add(parameter["name"])
        if "defaultValue" in parameter and not _fits(parameter["type"], parameter["defaultValue"]):
            add(join_path(p_path, "defaultValue"), f"the default is not of the declared type {parameter['type']}")
    seen_outputs: set[str] = set()
    for o_index, parameter in enumerate(capability.get("outputParameters") or []):
        if parameter["name"] in seen_outputs:
            add(f"{path}.outputParameters[{o_index}].name", f"output {parameter['name']!r} is declared twice")
        seen_outputs.add(parameter["name"])


def _check_dependencies(skill: dict[str, Any], add: Add) -> None:
    """Dependencies are readable and never the skill itself."""
    for index, dependency in enumerate(skill.get("dependencies") or []):
        path = f"skill.dependencies[{index}]"
        if isinstance(dependency, str):
            try:
                target = parse_address(dependency)
            except AddressError as exc:
                add(path, f"{dependency!r}: {exc}")
                continue
            target_skill = target.skill_id
        else:
            target_skill = dependency["skillId"]
        if target_skill == skill["id"]:
            add(path, "a skill cannot depend on itself")


def _check_functions_and_implementations(skill: dict[str, Any], add: Add) -> None:
    """LLM function schemas pass the check of every stored schema (``stored_schema_problems``:
    2020-12, references inside the schema only, no ``$ref`` cycle); implementations belong to
    PROVIDER skills, once each."""
    for index, function in enumerate((skill.get("llmConfig") or {}).get("functions") or []):
        if "parameters" in function:
            for problem in stored_schema_problems(function["parameters"]):
                add(f"skill.llmConfig.functions[{index}].parameters", f"not a valid JSON Schema: {problem}")
    implementations = skill.get("implementations") or []
    if implementations and skill.get("skillForm") != "PROVIDER":
        add("skill.implementations", "implementations belong to PROVIDER skills (set skillForm: PROVIDER)")
    providers: set[str] = set()
    for index, implementation in enumerate(implementations):
        if implementation["provider"] in providers:
            add(f"skill.implementations[{index}].provider", f"provider {implementation['provider']!r} is listed twice")
        providers.add(implementation["provider"])


def _check_alert_rules(document: dict[str, Any], names: dict[str, str], add: Add) -> None:
    """Each alert rule's condition and duration can be read; its capability is declared."""
    for index, rule in enumerate((document.get("alerting") or {}).get("rules") or []):
        path = f"alerting.rules[{index}]"
        try:
            parse_condition(rule["condition"])
        except ValueError as exc:
            add(join_path(path, "condition"), str(exc))
        try:
            parse_duration(rule.get("duration", "1m"))
        except ValueError as exc:
            add(join_path(path, "duration"), str(exc))
        if rule.get("capability") and rule["capability"] not in names:
            add(join_path(path, "capability"), f"the skill declares no capability {rule['capability']!r}")


def _fits(kind: str, value: Any) -> bool:
    if kind == "any":
        return True
    expected = _JSON_TYPES[kind]
    if isinstance(value, bool) and kind != "boolean":
        return False
    return isinstance(value, expected)


# ---------------------------------------------------------------------------- cards
def capability_id_for(skill_id: str, name: str) -> str:
    """The registry id of a skill capability: ``<skill>__<capability>`` in snake case,
    e.g. ``hr_assistant__query_employee_info``; ids longer than 64 characters are cut and
    end with a hash so they stay unique."""

    def snake(text: str) -> str:
        text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
        return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")

    base = f"{snake(skill_id)}__{snake(name)}"
    if not base[:1].isalpha():
        base = f"s_{base}"
    if len(base) > 64:
        digest = hashlib.sha1(f"{skill_id}/{name}".encode(), usedforsecurity=False).hexdigest()[:8]
        base = f"{base[:55]}_{digest}"
    return base


def parameters_schema(parameters: list[dict[str, Any]], *, output: bool) -> dict[str, Any]:
    """A JSON Schema 2020-12 object for seed 003 ``inputParameters`` / ``outputParameters``.

    Inputs are required only when ``required: true``; declared outputs are required unless
    ``required: false``. ``type: any`` leaves the value unconstrained. With no parameters
    the schema accepts any object."""
    if not parameters:
        return {"type": "object"}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in parameters:
        prop: dict[str, Any] = {} if parameter["type"] == "any" else {"type": parameter["type"]}
        if parameter.get("description"):
            prop["description"] = parameter["description"]
        if "defaultValue" in parameter:
            prop["default"] = parameter["defaultValue"]
        properties[parameter["name"]] = prop
        if parameter.get("required", output):
            required.append(parameter["name"])
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def capability_cards(index: SkillIndex) -> list[dict[str, Any]]:
    """The card documents activation registers, one per declared capability:
    ``{capability_id, name, description, category, input_schema, output_schema, version,
    timeout_s, tags, executor, executor_config, capability_type, address}``."""
    skill = index.skill
    implementations = sorted(
        (
            {
                "provider": i["provider"],
                "priority": i.get("priority", DEFAULT_PRIORITY),
                "executor": i.get("executor", "offline"),
                "timeout_ms": i.get("timeoutMs"),
                "config": i.get("config") or {},
                "order": n,
            }
            for n, i in enumerate(skill.get("implementations") or [])
        ),
        key=lambda i: (-i["priority"], i["order"]),
    )
    tags = list((skill.get("spec") or {}).get("tags") or [])
    cards = []
    for capability in skill.get("capabilities") or []:
        name = capability["name"]
        executor = capability.get("executor") or ("provider" if implementations else "offline")
        executor_config: dict[str, Any] = {"skill_form": skill.get("skillForm", "SCENE")}
        if executor == "provider":
            executor_config["implementations"] = implementations
        cards.append(
            {
                "capability_id": capability_id_for(skill["id"], name),
                "name": name,
                "description": capability.get("description") or name,
                "category": capability.get("category", DEFAULT_CATEGORY),
                "input_schema": parameters_schema(capability.get("inputParameters") or [], output=False),
                "output_schema": parameters_schema(capability.get("outputParameters") or [], output=True),
                "version": skill["version"],
                "timeout_s": capability.get("timeout", 60),
                "tags": [f"skill:{skill['id']}", *tags][:20],
                "executor": executor,
                "executor_config": executor_config,
                "capability_type": capability["type"],
                "address": capability.get("address") or f"cap://{skill['id']}/{name}",
            }
        )
    return cards


def alert_rules(index: SkillIndex) -> list[dict[str, Any]]:
    """The skill's ``alerting.rules`` normalised: ``{name, capability, condition, metric,
    op, threshold, duration_s, severity, actions: {notify?, auto_restart?, scale_out?,
    failover?}}``."""
    rules = []
    for rule in (index.document.get("alerting") or {}).get("rules") or []:
        condition = parse_condition(rule["condition"])
        actions: dict[str, Any] = {}
        for action in rule.get("actions") or []:
            actions.update(action)
        rules.append(
            {
                "name": rule["name"],
                "capability": rule.get("capability", ""),
                "condition": rule["condition"].strip(),
                "metric": condition.metric,
                "op": condition.op,
                "threshold": condition.threshold,
                "duration_s": parse_duration(rule.get("duration", "1m")),
                "severity": rule["severity"],
                "actions": actions,
            }
        )
    return rules

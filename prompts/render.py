"""Sandboxed, layered prompt rendering (PRD §4.5 模板变量插值, 项目级 Prompt 覆盖).

Templates are Jinja2, compiled once per distinct content by ``prompts.sandbox.PromptSandbox``
(``StrictUndefined``, no internals, no mutation, size limits on every value) and rendered
with a time limit (0.5 s, checked on every loop iteration and call) and an output limit
(200,000 characters):

- a declared variable that is required, used by the content, not given and without a default
  is an error naming it (a required variable the content does not use is never enforced:
  declarations may outlive the text that used them, issue 31); declared defaults apply;
- a name the content uses that is neither declared nor given is an error naming it *before*
  the template runs, so a misspelt name cannot slip through ``default()``, ``is defined``,
  ``{% set %}`` or a branch not taken into a model's prompt; every undefined-name error adds
  the close names (``difflib.get_close_matches`` over the declared and given names):
  ``undefined variable 'audeince' (did you mean 'audience'?)``;
- templates may not extend, include or import other templates, nor name an attribute
  starting with ``_``; both are refused when the template is compiled, before it runs;
- every failure is a ``PromptRenderError`` with a short reason that names the variable,
  the attribute or the limit, the template line where known, and never an object's repr,
  a file path or a traceback.

The final prompt of a role is, for each of the six template types in PRD order, the global
layer followed by the project layer, then the task enhancement (PRD §4.5
"最终 Prompt = 基础模板 + 项目覆盖 + 任务增强"). Nothing here touches the ORM: the runtime
calls ``system_prompt`` on its own thread with the task's pinned ConfigSnapshot.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import TracebackType
from typing import Any

from jinja2 import Template, TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.exceptions import SecurityError

from prompts.sandbox import (
    REMOVED_FILTERS,
    PromptSandbox,
    RenderTimeout,
    SandboxLimitError,
    deadline,
    guard_loops,
    measure,
)
from teamclaw.errors import DomainError
from teamclaw.runtime.config import ConfigSnapshot, LayeredPrompt

MAX_TEMPLATE_CHARS = 50_000
"""Largest template content accepted (characters)."""
MAX_OUTPUT_CHARS = 200_000
"""Largest rendered output of one template (characters)."""
MAX_RENDER_SECONDS = 0.5
"""Longest a single template render may run (seconds)."""

TEMPLATE_ORDER = ("system_prompt", "persona", "context_template", "output_format", "tool_instruction", "guardrails")
"""The six template types of PRD §4.5 ``PromptConfig``, in the order they are assembled."""

STANDARD_VARIABLES = (
    "project_name",
    "project_description",
    "tech_stack",
    "role",
    "role_display_name",
    "emoji",
    "task_description",
    "tools",
    "capabilities",
    "knowledge",
)
"""Variables the runtime gives every template (``standard_variables``); no need to declare them."""

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

ENV = PromptSandbox()

ALWAYS_AVAILABLE = (*STANDARD_VARIABLES, *sorted(ENV.globals))
"""Every name a template may use without declaring it: the STANDARD_VARIABLES that
``system_prompt`` gives every render (the runtime's executors pass no extra variables) and
the sandbox's globals (``range``)."""


class PromptRenderError(DomainError, ValueError):
    """A template could not be compiled or rendered (400).

    ``kind`` is one of ``syntax`` (cannot be parsed or compiled), ``security`` (refused by
    the sandbox), ``limit`` (size, time, output or depth limit), ``missing`` (a required
    variable was not given), ``undefined`` (an unknown name was used) or ``error`` (any other
    failure while running). ``field`` names the variable at fault (``content`` otherwise);
    ``line`` is the template line where known; ``template_type`` and ``layer`` say which
    layer of a role's prompt failed, when rendering layers; ``suggestions`` are the close
    names of an ``undefined`` one (already in ``reason`` as "did you mean").
    """

    def __init__(
        self,
        reason: str,
        field: str = "content",
        *,
        kind: str = "error",
        line: int | None = None,
        template_type: str = "",
        layer: str = "",
        suggestions: Iterable[str] = (),
    ) -> None:
        self.reason = reason
        self.field = field
        self.kind = kind
        self.line = line
        self.suggestions = list(suggestions)
        extra: dict[str, Any] = {"kind": kind, "line": line}
        if self.suggestions:
            extra["suggestions"] = {field: self.suggestions}
        super().__init__(reason, errors={field: [reason]}, code=kind, extra=extra)
        self.locate(template_type, layer)

    @classmethod
    def undefined(cls, name: str, known: Iterable[str], line: int | None = None) -> PromptRenderError:
        """``undefined variable 'name'``, with "(did you mean 'x'?)" when ``known`` holds
        close names (``near_names``); kind ``undefined``, field ``name``."""
        close = near_names(name, known)
        hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
        return cls(f"undefined variable '{name}'{hint}", name, kind="undefined", line=line, suggestions=close)

    def locate(self, template_type: str, layer: str) -> None:
        """Say which layer of a role's prompt failed (``template_type``, ``layer`` such as
        ``"global 1.2.0"``); the message then starts with them."""
        self.template_type = template_type
        self.layer = layer
        where = f"{template_type} ({layer}): " if template_type else ""
        at_line = f"line {self.line}: " if self.line else ""
        self.message = f"{where}{at_line}{self.reason}"
        self.args = (self.message,)

    @property
    def blocks_saving(self) -> bool:
        """True for failures no sample values could avoid (syntax, sandbox, limits)."""
        return self.kind in ("syntax", "security", "limit")


# ---------------------------------------------------------------------------- compiling
def _policy_errors(ast: nodes.Template) -> None:
    """Refuse what a prompt template may never do, before it runs."""
    for node in ast.find_all((nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)):
        raise PromptRenderError(
            "prompt templates cannot extend, include or import other templates", kind="security", line=node.lineno
        )
    for access in ast.find_all((nodes.Getattr, nodes.Getitem)):
        if isinstance(access, nodes.Getattr):
            name: str | None = access.attr
        else:
            name = _const_str(access.arg) if isinstance(access, nodes.Getitem) else None
        if name is not None and name.startswith("_"):
            raise PromptRenderError(
                f"access to attribute {name!r} is not allowed in prompt templates", kind="security", line=access.lineno
            )
    for call in ast.find_all((nodes.Filter, nodes.Test)):
        registry, what = (ENV.filters, "filter") if isinstance(call, nodes.Filter) else (ENV.tests, "test")
        if call.name not in registry:
            removed = " (not available in prompt templates)" if call.name in REMOVED_FILTERS else ""
            raise PromptRenderError(f"unknown {what} {call.name!r}{removed}", kind="syntax", line=call.lineno)


def _const_str(node: nodes.Node) -> str | None:
    return node.value if isinstance(node, nodes.Const) and isinstance(node.value, str) else None


def near_names(name: str, known: Iterable[str]) -> list[str]:
    """Up to three of ``known`` close to ``name`` (``difflib.get_close_matches``, cutoff 0.6),
    closest first, ``name`` itself left out: the "did you mean" of a misspelt variable."""
    return difflib.get_close_matches(name, sorted(set(known) - {name}), n=3, cutoff=0.6)


def _name_line(content: str, name: str) -> int | None:
    """The first template line that reads ``name`` (None if none does)."""
    lines = [n.lineno for n in ENV.parse(content).find_all(nodes.Name) if n.name == name and n.ctx == "load"]
    return min(lines, default=None)


def clear_compiled_cache() -> None:
    """Forget every compiled template (the cache holds 512); benchmarks time a cold compile."""
    _compiled.cache_clear()


@lru_cache(maxsize=512)
def _compiled(content: str) -> tuple[Template, frozenset[str]]:
    try:
        ast = ENV.parse(content)
        _policy_errors(ast)
        used = frozenset(meta.find_undeclared_variables(ast)) - set(ENV.globals)
        return ENV.from_string(guard_loops(ast)), used
    except TemplateSyntaxError as exc:
        raise PromptRenderError(f"syntax error: {_safe(exc.message or '')}", kind="syntax", line=exc.lineno) from None
    except RecursionError:
        raise PromptRenderError("the template nests too deeply", kind="limit") from None


def compile_template(content: str) -> Template:
    """The compiled template for ``content`` (cached per distinct content).

    Raises PromptRenderError: ``limit`` over MAX_TEMPLATE_CHARS, ``syntax`` for a syntax
    error or an unknown filter/test, ``security`` for include/import/extends or an
    attribute starting with ``_``.
    """
    if not isinstance(content, str):
        raise PromptRenderError("the template must be text", kind="syntax")
    if len(content) > MAX_TEMPLATE_CHARS:
        raise PromptRenderError(
            f"the template is {len(content):,} characters; the limit is {MAX_TEMPLATE_CHARS:,}", kind="limit"
        )
    return _compiled(content)[0]


def parse(content: str) -> nodes.Template:
    """Check ``content`` as ``compile_template`` does and return its syntax tree (for
    validating imported templates). Raises PromptRenderError."""
    compile_template(content)
    return ENV.parse(content)


def used_variables(content: str) -> set[str]:
    """Names ``content`` reads from its context (PromptRenderError if it does not compile)."""
    compile_template(content)
    return set(_compiled(content)[1])


def undeclared_variables(content: str, variables: Iterable[Mapping[str, Any]], known: Iterable[str] = ()) -> list[str]:
    """Names used in ``content`` that are neither declared in ``variables`` nor ``known``."""
    declared = {v.get("name") for v in variables} | set(known)
    return sorted(used_variables(content) - declared)


def validate_variables(variables: Any) -> list[dict[str, Any]]:
    """Normalise a ``variables`` list ``[{name, description, required, default}]`` (PRD §4.5
    ``TemplateVariable``): names are identifiers, unique; descriptions at most 500 characters;
    defaults plain JSON data of at most 10,000 characters.

    Raises PromptRenderError(field='variables') naming the entry at fault.
    """
    if variables in (None, ""):
        return []
    if not isinstance(variables, list):
        raise PromptRenderError("variables must be a list of {name, description, required, default}", "variables")
    if len(variables) > 100:
        raise PromptRenderError("a template may declare at most 100 variables", "variables")
    out, seen = [], set()
    for index, item in enumerate(variables):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise PromptRenderError(f"variables[{index}] needs a name", "variables")
        unknown = set(item) - {"name", "description", "required", "default"}
        if unknown:
            raise PromptRenderError(f"variables[{index}] has unknown keys: {', '.join(sorted(unknown))}", "variables")
        name = item["name"]
        if not VARIABLE_NAME.match(name):
            raise PromptRenderError(f"variables[{index}]: {name[:80]!r} is not a valid variable name", "variables")
        if name in seen:
            raise PromptRenderError(f"variables[{index}]: {name!r} is declared twice", "variables")
        seen.add(name)
        description = item.get("description", "")
        if not isinstance(description, str) or len(description) > 500:
            raise PromptRenderError(
                f"variables[{index}].description must be text of at most 500 characters", "variables"
            )
        required = item.get("required", False)
        if not isinstance(required, bool):
            raise PromptRenderError(f"variables[{index}].required must be true or false", "variables")
        entry: dict[str, Any] = {"name": name, "description": description, "required": required}
        if item.get("default") is not None:
            try:
                measure(item["default"], printable=True, limit=10_000)
            except SecurityError as exc:
                raise PromptRenderError(f"variables[{index}].default: {exc}", "variables") from None
            entry["default"] = item["default"]
        out.append(entry)
    return out


# ---------------------------------------------------------------------------- rendering
def render(content: str, variables: Iterable[Mapping[str, Any]] = (), values: Mapping[str, Any] | None = None) -> str:
    """Render ``content`` with its declared ``variables`` (defaults applied) and ``values``:
    the one render every prompt goes through before it reaches a model (the runtime's
    ``system_prompt``, previews, the render API, the save checks; issue 31).

    ``values`` must be plain data (each at most 100,000 characters or items); a value of None
    counts as not given. Raises PromptRenderError (kind ``undefined``, ``field`` the name) for
    a name the content uses that is neither declared nor given, before anything runs, with
    "did you mean" and ``suggestions`` when a declared or given name is close; ``missing`` for
    a required variable the content uses that is not given and has no default (one the content
    does not use is not enforced); a sandbox refusal; the time (0.5 s) or output (200,000
    characters) limit.
    """
    template = compile_template(content)
    used = _compiled(content)[1]
    variables = list(variables)
    for variable in variables:
        if not isinstance(variable, Mapping) or not isinstance(variable.get("name"), str):
            raise PromptRenderError("a declared variable has no name", "variables", kind="error")
    context: dict[str, Any] = {v["name"]: v["default"] for v in variables if v.get("default") is not None}
    context.update(check_values(values or {}))
    known = {v["name"] for v in variables} | set(context)
    unknown = sorted(used - known)
    if unknown:
        raise PromptRenderError.undefined(unknown[0], known, _name_line(content, unknown[0]))
    for variable in variables:
        if variable.get("required") and variable["name"] in used and variable["name"] not in context:
            raise PromptRenderError(f"missing required variable '{variable['name']}'", variable["name"], kind="missing")
    return _run(template, context, known)


def check_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without the None ones, each checked to be plain data of at most 100,000
    characters or items nested at most 32 deep. Raises PromptRenderError naming the variable."""
    out = {}
    for name, value in values.items():
        if value is None:
            continue
        try:
            measure(value, printable=True)
        except SecurityError as exc:
            raise PromptRenderError(f"variable '{name}': {exc}", str(name), kind="limit") from None
        out[name] = value
    return out


def _run(template: Template, context: dict[str, Any], known: Iterable[str] = ()) -> str:
    """Run ``template`` on ``context`` within the limits; an undefined name is told with the
    close ones of ``known``."""
    chunks: list[str] = []
    size = 0
    try:
        with deadline(MAX_RENDER_SECONDS):
            for chunk in template.generate(context):
                size += len(chunk)
                if size > MAX_OUTPUT_CHARS:
                    raise PromptRenderError(
                        f"the rendered prompt exceeds {MAX_OUTPUT_CHARS:,} characters", kind="limit"
                    )
                chunks.append(chunk)
    except RenderTimeout:
        raise PromptRenderError(f"rendering took longer than {MAX_RENDER_SECONDS} s", kind="limit") from None
    except PromptRenderError:
        raise
    except UndefinedError as exc:
        name = _undefined_name(str(exc))
        line = _line(exc.__traceback__)
        if name:
            raise PromptRenderError.undefined(name, known, line) from None
        raise PromptRenderError(_safe(str(exc)), kind="undefined", line=line) from None
    except SandboxLimitError as exc:
        raise PromptRenderError(_safe(str(exc)), kind="limit", line=_line(exc.__traceback__)) from None
    except SecurityError as exc:
        raise PromptRenderError(_safe(str(exc)), kind="security", line=_line(exc.__traceback__)) from None
    except (RecursionError, MemoryError):
        raise PromptRenderError("the template recurses too deeply or builds too much", kind="limit") from None
    except Exception as exc:  # any other failure of the template's own logic, told without internals
        line = _line(exc.__traceback__)
        raise PromptRenderError(f"{type(exc).__name__}: {_safe(str(exc))}", kind="error", line=line) from None
    return "".join(chunks)


def _line(tb: TracebackType | None) -> int | None:
    """The template line of the innermost template frame in ``tb`` (Jinja rewrites them)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _undefined_name(message: str) -> str | None:
    match = re.match(r"^'([A-Za-z_][A-Za-z0-9_]*)' is undefined$", message)
    return match.group(1) if match else None


def _safe(message: str) -> str:
    """A message without object reprs, memory addresses or paths, at most 200 characters."""
    message = re.sub(r"<[^<>]*>", "<object>", message)
    message = re.sub(r"0x[0-9a-fA-F]+", "0x…", message)
    message = re.sub(r"(/[\w.\-]+){2,}", "<path>", message)
    return message[:200]


# ---------------------------------------------------------------------------- layering
@dataclass(frozen=True)
class LayerPreview:
    """One template type's contribution: each layer's version and rendered text (None = no
    such layer)."""

    template_type: str
    base_version: str | None
    base: str | None
    project_version: str | None
    project: str | None

    def as_dict(self) -> dict[str, Any]:
        """``{template_type, base: {version, text} | None, project: {version, text} | None}``."""
        return {
            "template_type": self.template_type,
            "base": None if self.base is None else {"version": self.base_version, "text": self.base},
            "project": None if self.project is None else {"version": self.project_version, "text": self.project},
        }


def standard_variables(snapshot: ConfigSnapshot, role: str, task_description: str = "") -> dict[str, Any]:
    """The STANDARD_VARIABLES for ``role`` under ``snapshot``: project_name,
    project_description, tech_stack, role, role_display_name, emoji, task_description, tools
    (tools the role may use, with or without confirmation), capabilities (ids it offers) and
    knowledge (empty here: a model-backed call gives the passages retrieved for its input,
    seed 003 KnowledgeContext)."""
    spec = snapshot.roles.get(role)
    tools = [tool for (r, tool), mode in snapshot.tool_modes.items() if r == role and mode != "deny"]
    return {
        "project_name": snapshot.project_name,
        "project_description": snapshot.project_description,
        "tech_stack": snapshot.tech_stack,
        "role": role,
        "role_display_name": spec.display_name if spec else role,
        "emoji": spec.emoji if spec else "",
        "task_description": task_description,
        "tools": sorted(tools),
        "capabilities": list(spec.capabilities) if spec else [],
        "knowledge": "",
    }


def render_layers(layers: Mapping[str, LayeredPrompt], values: Mapping[str, Any]) -> list[LayerPreview]:
    """Render every template type's global and project layers, in PRD order.

    Raises PromptRenderError with ``template_type`` and ``layer`` ("global 1.2.0" or
    "project 1.0.0") set to the layer that failed.
    """
    previews = []
    for template_type in TEMPLATE_ORDER:
        layer = layers.get(template_type)
        if layer is None:
            continue
        texts: list[str | None] = []
        for name, spec in (("global", layer.base), ("project", layer.project)):
            if spec is None:
                texts.append(None)
                continue
            try:
                texts.append(render(spec.content, spec.variables, values))
            except PromptRenderError as exc:
                exc.locate(template_type, f"{name} {spec.version}")
                raise
        previews.append(
            LayerPreview(
                template_type,
                layer.base.version,
                texts[0],
                layer.project.version if layer.project else None,
                texts[1],
            )
        )
    return previews


def assemble(previews: Iterable[LayerPreview], task_enhancement: str = "") -> str:
    """The final prompt: per template type the base text then the project override, then the
    task enhancement (taken literally, not as a template); blank parts are left out."""
    parts: list[str] = []
    for preview in previews:
        for text in (preview.base, preview.project):
            if text and text.strip():
                parts.append(text.strip())
    if task_enhancement.strip():
        parts.append(task_enhancement.strip())
    return "\n\n".join(parts)


def system_prompt(snapshot: ConfigSnapshot, role: str, task: Any, extra: Mapping[str, Any] | None = None) -> str:
    """The runtime's prompt renderer (``Runtime(prompt_renderer=...)``): ``role``'s final
    prompt for ``task`` (a TaskState: ``description``, ``prompt_enhancement``) under the
    task's pinned ``snapshot`` (PRD §4.8), with ``extra`` variables from the executor.

    Raises PromptRenderError when a layer cannot be rendered.
    """
    values = standard_variables(snapshot, role, getattr(task, "description", ""))
    values.update(extra or {})
    previews = render_layers(snapshot.prompts.get(role, {}), values)
    return assemble(previews, getattr(task, "prompt_enhancement", "") or "")

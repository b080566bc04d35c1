"""Sandboxed, layered prompt rendering (PRD §4.5 模板变量插值, Prompt 覆盖).

Templates are Jinja2 rendered by a ``SandboxedEnvironment`` with ``StrictUndefined``:

- a declared variable that is required, not given and without a default is an error naming
  it; declared defaults apply; any other undefined name is an error naming it;
- the sandbox refuses dunder/internal attribute access and unsafe ``str.format`` use; on top
  of it this module caps ``range`` (10,000), the size of ``*``/``**`` results and of
  size-amplifying filters, the output (200,000 characters) and the render time (0.5 s);
- every failure is a ``PromptRenderError`` with a short, safe reason (no internals leak).

The final prompt of a role is, for each of the six template types in order, the global
layer followed by the project layer, then the task enhancement (PRD §4.5
"最终 Prompt = 基础模板 + 项目覆盖 + 任务增强").
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, UndefinedError, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from teamclaw.runtime.config import ConfigSnapshot, LayeredPrompt

MAX_TEMPLATE_CHARS = 50_000
"""Largest template content accepted when saving (characters)."""
MAX_OUTPUT_CHARS = 200_000
"""Largest rendered output (characters)."""
MAX_RENDER_SECONDS = 0.5
"""Longest a single render may run (seconds)."""
MAX_RANGE = 10_000
MAX_VALUE_CHARS = 100_000

TEMPLATE_ORDER = ("system_prompt", "persona", "context_template", "output_format", "tool_instruction", "guardrails")
VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class PromptRenderError(ValueError):
    """A template could not be rendered; ``field`` names the variable or part at fault."""

    def __init__(self, reason: str, field: str = "content") -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


class _RenderTimeout(Exception):
    pass


def _checked(value: Any) -> Any:
    if isinstance(value, str | list | tuple) and len(value) > MAX_VALUE_CHARS:
        raise SecurityError(f"a value longer than {MAX_VALUE_CHARS} would be produced")
    return value


class HardenedSandbox(SandboxedEnvironment):
    """Jinja2's sandbox plus caps on ``range``, ``*``/``**`` and size-amplifying filters."""

    intercepted_binops = frozenset({"*", "**"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        self.globals = {"range": self._range}
        for name in ("center", "indent", "wordwrap", "truncate", "join", "replace", "format"):
            original = self.filters[name]
            self.filters[name] = self._wrap_filter(original)

    @staticmethod
    def _wrap_filter(original: Any) -> Any:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            for arg in (*args[1:], *kwargs.values()):
                if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_VALUE_CHARS:
                    raise SecurityError("a filter argument is too large")
            return _checked(original(*args, **kwargs))

        guarded.__dict__.update(getattr(original, "__dict__", {}))
        return guarded

    @staticmethod
    def _range(*args: int) -> range:
        rng = range(*args)
        if len(rng) > MAX_RANGE:
            raise SecurityError(f"range() is limited to {MAX_RANGE} items")
        return rng

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > 100:
                raise SecurityError("exponents above 100 are not allowed")
            return left**right
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(count, int):
                    if len(seq) * max(count, 0) > MAX_VALUE_CHARS:
                        raise SecurityError(f"a value longer than {MAX_VALUE_CHARS} would be produced")
            return left * right
        return super().call_binop(context, operator, left, right)


_ENV = HardenedSandbox()


def _tracer(deadline: float) -> Any:
    """A trace function that aborts template frames running past ``deadline``."""

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and time.perf_counter() > deadline:
            raise _RenderTimeout
        return local

    def global_trace(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == "<template>":
            return local
        return None

    return global_trace


def parse(content: str) -> nodes.Template:
    """Parse ``content``; PromptRenderError for a syntax error or oversize content."""
    if len(content) > MAX_TEMPLATE_CHARS:
        raise PromptRenderError(f"the template is {len(content)} characters; the limit is {MAX_TEMPLATE_CHARS}")
    try:
        return _ENV.parse(content)
    except TemplateSyntaxError as exc:
        raise PromptRenderError(f"syntax error on line {exc.lineno}: {exc.message}") from None


def used_variables(content: str) -> set[str]:
    """Names the template reads from its context (undeclared names in Jinja's terms)."""
    return set(meta.find_undeclared_variables(parse(content))) - set(_ENV.globals)


def undeclared_variables(content: str, variables: Iterable[Mapping[str, Any]], known: Iterable[str] = ()) -> list[str]:
    """Variables used in ``content`` that are neither declared nor among ``known`` ones."""
    declared = {v.get("name") for v in variables} | set(known)
    return sorted(used_variables(content) - declared)


def validate_variables(variables: Any) -> list[dict[str, Any]]:
    """Normalise a ``variables`` list ``[{name, description, required, default}]``.

    Raises PromptRenderError(field='variables') for a malformed entry or a duplicate name.
    """
    if variables in (None, ""):
        return []
    if not isinstance(variables, list):
        raise PromptRenderError("variables must be a list", "variables")
    out, seen = [], set()
    for index, item in enumerate(variables):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise PromptRenderError(f"variables[{index}] needs a name", "variables")
        name = item["name"]
        if not VARIABLE_NAME.match(name):
            raise PromptRenderError(f"variables[{index}]: {name!r} is not a valid variable name", "variables")
        if name in seen:
            raise PromptRenderError(f"variables[{index}]: {name!r} is declared twice", "variables")
        seen.add(name)
        entry = {
            "name": name,
            "description": str(item.get("description", ""))[:500],
            "required": bool(item.get("required", False)),
        }
        if "default" in item and item["default"] is not None:
            entry["default"] = item["default"]
        out.append(entry)
    return out


def render(content: str, variables: Iterable[Mapping[str, Any]] = (), values: Mapping[str, Any] | None = None) -> str:
    """Render ``content`` with declared ``variables`` (defaults applied) and ``values``.

    Raises PromptRenderError naming a missing required variable, an undefined name, a
    sandbox violation, the time limit (0.5 s) or the output limit (200,000 characters).
    """
    template_ast = parse(content)
    context: dict[str, Any] = {}
    for variable in variables:
        if "default" in variable and variable["default"] is not None:
            context[variable["name"]] = variable["default"]
    context.update({k: v for k, v in (values or {}).items() if v is not None})
    for variable in variables:
        if variable.get("required") and variable["name"] not in context:
            raise PromptRenderError(f"missing required variable '{variable['name']}'", variable["name"])
    template = _ENV.from_string(template_ast)
    deadline = time.perf_counter() + MAX_RENDER_SECONDS
    previous = sys.gettrace()
    sys.settrace(_tracer(deadline))
    chunks: list[str] = []
    size = 0
    try:
        for chunk in template.generate(context):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise PromptRenderError(f"the rendered prompt exceeds {MAX_OUTPUT_CHARS} characters")
            if time.perf_counter() > deadline:
                raise _RenderTimeout
            chunks.append(chunk)
    except _RenderTimeout:
        raise PromptRenderError(f"rendering took longer than {MAX_RENDER_SECONDS} s") from None
    except UndefinedError as exc:
        name = _undefined_name(str(exc))
        raise PromptRenderError(
            f"undefined variable '{name}'" if name else "undefined variable", name or "content"
        ) from None
    except SecurityError as exc:
        raise PromptRenderError(f"refused by the sandbox: {_safe(str(exc))}") from None
    except PromptRenderError:
        raise
    except RecursionError:
        raise PromptRenderError("the template recurses too deeply") from None
    except Exception as exc:  # any other template runtime error, reported without internals
        raise PromptRenderError(f"the template failed: {type(exc).__name__}") from None
    finally:
        sys.settrace(previous)
    return "".join(chunks)


def _undefined_name(message: str) -> str | None:
    match = re.search(r"'([^']+)' is undefined", message)
    return match.group(1) if match else None


def _safe(message: str) -> str:
    """Keep sandbox messages short and free of object reprs."""
    message = re.sub(r"<[^>]*>", "<object>", message)
    return message[:200]


@dataclass(frozen=True)
class LayerPreview:
    """One template type's contribution: each layer's rendered text (None = no such layer)."""

    template_type: str
    base_version: str | None
    base: str | None
    project_version: str | None
    project: str | None


def standard_variables(snapshot: ConfigSnapshot, role: str, task_description: str = "") -> dict[str, Any]:
    """Variables every template may use: project_name, project_description, tech_stack,
    role, role_display_name, emoji, task_description, tools (allowed or confirm), capabilities."""
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
    }


def render_layers(layers: Mapping[str, LayeredPrompt], values: Mapping[str, Any]) -> list[LayerPreview]:
    """Render every template type's layers in PRD order."""
    previews = []
    for template_type in TEMPLATE_ORDER:
        layer = layers.get(template_type)
        if layer is None:
            continue
        base = render(layer.base.content, layer.base.variables, values)
        project = render(layer.project.content, layer.project.variables, values) if layer.project else None
        previews.append(
            LayerPreview(
                template_type, layer.base.version, base, layer.project.version if layer.project else None, project
            )
        )
    return previews


def assemble(previews: Iterable[LayerPreview], task_enhancement: str = "") -> str:
    """The final prompt: base + project override per type, then the task enhancement."""
    parts: list[str] = []
    for preview in previews:
        for text in (preview.base, preview.project):
            if text and text.strip():
                parts.append(text.strip())
    if task_enhancement.strip():
        parts.append(task_enhancement.strip())
    return "\n\n".join(parts)


def system_prompt(snapshot: ConfigSnapshot, role: str, task: Any, extra: Mapping[str, Any] | None = None) -> str:
    """The runtime's prompt renderer: the role's final prompt for ``task`` (a TaskState)."""
    values = standard_variables(snapshot, role, getattr(task, "description", ""))
    values.update(extra or {})
    previews = render_layers(snapshot.prompts.get(role, {}), values)
    return assemble(previews, getattr(task, "prompt_enhancement", ""))

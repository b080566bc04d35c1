"""Prompt rendering figures (PRD §4.5): what the sandbox, the time limit and layering cost.

Run: ``.venv/bin/python bench/prompt_bench.py``. Prints figures only; no assertions.
Needs no database: the built-in templates and team come from the shipped files.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")

import django

django.setup()

from jinja2 import StrictUndefined  # noqa: E402
from jinja2.sandbox import SandboxedEnvironment  # noqa: E402

from capabilities.builtin import read_builtin  # noqa: E402
from prompts.builtin import default_templates  # noqa: E402
from prompts.diff import diff_texts  # noqa: E402
from prompts.render import clear_compiled_cache, render, system_prompt  # noqa: E402
from teamclaw.runtime.config import ConfigSnapshot, LayeredPrompt, PromptSpec, RoleSpec  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median and p95 of ``repeat`` calls, in microseconds."""
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1e6)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def line(label: str, fn, repeat: int) -> None:
    median, p95 = timed(fn, repeat)
    print(f"  {label:<50}: {median:9.1f} / {p95:9.1f}")


def main() -> None:
    team, _cards = read_builtin()
    role = team["roles"][4]  # coderA
    templates = default_templates(role["role"], role["responsibilities"], role["persona"])
    values = {
        "project_name": "Online shop",
        "role_display_name": role["display_name"],
        "emoji": role["emoji"],
        "project_description": "Sells books",
        "tech_stack": "Django",
        "task_description": "Build the cart",
        "capabilities": ["code_generation", "component_development"],
        "tools": ["file_read", "file_write"],
    }
    content, variables = templates["system_prompt"]
    plain = SandboxedEnvironment(undefined=StrictUndefined).from_string(content)

    print("prompt rendering (median / p95, microseconds)")
    line("stock Jinja2 SandboxedEnvironment, system_prompt", lambda: plain.render(values), 2000)
    line("PromptSandbox + time limit, system_prompt", lambda: render(content, variables, values), 2000)

    def cold() -> None:
        clear_compiled_cache()
        render(content, variables, values)

    line("compile + render (cache cleared)", cold, 300)

    prompts = {
        t: LayeredPrompt(
            PromptSpec(t, "1.0.0", c, tuple(v)), PromptSpec(t, "1.0.0", "Project rule for {{ project_name }}.")
        )
        for t, (c, v) in templates.items()
    }
    snapshot = ConfigSnapshot.build(
        version=1,
        roles=[RoleSpec(role["role"], role["display_name"], role["emoji"], capabilities=("code_generation",))],
        cards=[],
        invoke_allowed=[],
        tool_modes={},
        prompts={role["role"]: prompts},
        project_name="Online shop",
    )
    task = SimpleNamespace(description="Build the cart", prompt_enhancement="Use type hints.")
    line("runtime system_prompt: 6 types x 2 layers + task", lambda: system_prompt(snapshot, role["role"], task), 500)

    loop = "{% for i in range(1000) %}{{ i }},{% endfor %}"
    line("a 1,000-iteration loop", lambda: render(loop), 200)
    line("the same loop, stock sandbox", SandboxedEnvironment().from_string(loop).render, 200)

    print("refusals (milliseconds until the error)")
    for label, hostile in [
        ("'a' * 10**9", "{{ 'a' * 1000000000 }}"),
        (
            "nested range(10000) loops (time limit)",
            "{% for a in range(10000) %}{% for b in range(10000) %}{% endfor %}{% endfor %}",
        ),
        ("infinite macro recursion", "{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}"),
    ]:
        started = time.perf_counter()
        try:
            render(hostile)
        except ValueError as exc:
            print(f"  {label:<42}: {(time.perf_counter() - started) * 1000:8.1f}  ({exc})")

    old = "\n".join(f"Line {i}: the agent must answer in Markdown and cite sources." for i in range(800))
    new = old.replace("Markdown", "JSON", 40).replace("cite", "quote", 3)
    median, p95 = timed(lambda: diff_texts(old, new), 20)
    print(f"diff of two {len(old):,}-character versions: {median / 1000:.1f} / {p95 / 1000:.1f} ms (median / p95)")


if __name__ == "__main__":
    main()

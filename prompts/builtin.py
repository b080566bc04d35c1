"""Default prompt templates for every role: the six types of PRD §4.5, version 1.0.0.

The texts are shared across roles and filled with each role's own display name, emoji,
responsibilities and persona, using the §4.5 interpolation variables (``project_name``,
``role_display_name``, ``emoji``, ``project_description``, ``tech_stack``).
"""

from __future__ import annotations

from typing import Any

PROJECT_VARIABLES: list[dict[str, Any]] = [
    {"name": "project_name", "description": "Project name", "required": True},
    {"name": "role_display_name", "description": "The role's display name", "required": True},
    {"name": "emoji", "description": "The role's emoji", "required": False, "default": ""},
    {"name": "project_description", "description": "What the project is", "required": False, "default": ""},
    {"name": "tech_stack", "description": "Technologies in use", "required": False, "default": ""},
]


def default_templates(
    role: str, responsibilities: list[str], persona: str
) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """``template_type -> (content, variables)`` for one role."""
    duties = "\n".join(f"- {item}" for item in responsibilities) or "- Follow the supervisor's instructions"
    return {
        "system_prompt": (
            "You are the {{ role_display_name }} ({{ emoji }}) of the {{ project_name }} project.\n"
            "{% if project_description %}Project description: {{ project_description }}\n{% endif %}"
            "{% if tech_stack %}Tech stack: {{ tech_stack }}\n{% endif %}"
            f"\nYour responsibilities:\n{duties}\n",
            PROJECT_VARIABLES,
        ),
        "persona": (f"{persona}\nBe concise and concrete; say what you would measure.\n", []),
        "context_template": (
            "Current task: {{ task_description | default('(none yet)', true) }}\n"
            "{% if capabilities %}Capabilities you offer: {{ capabilities | join(', ') }}\n{% endif %}",
            [
                {"name": "task_description", "description": "The task in hand", "required": False, "default": ""},
                {
                    "name": "capabilities",
                    "description": "Capability ids this role offers",
                    "required": False,
                    "default": [],
                },
            ],
        ),
        "output_format": (
            "Answer with JSON that matches the output schema of the capability you were invoked for. "
            "Write documents in Markdown.\n",
            [],
        ),
        "tool_instruction": (
            "{% if tools %}Tools you may use (some need operator approval): {{ tools | join(', ') }}.\n"
            "{% else %}You have no tools; work from the context you are given.\n{% endif %}"
            "Use file tools only inside the project directory.\n",
            [{"name": "tools", "description": "Tools this role may use", "required": False, "default": []}],
        ),
        "guardrails": (
            "Never contradict the user's original requirement. Do not invent facts about the project; "
            "ask the supervisor when something is unclear. Stay within your role; invoke other roles only "
            "through your capabilities.\n",
            [],
        ),
    }

"""Default prompt templates for every role: the six types of PRD §4.5, version 1.0.0.

The texts are shared across roles and filled with each role's own display name, emoji,
responsibilities and persona, using the §4.5 interpolation variables (``project_name``,
``role_display_name``, ``emoji``, ``project_description``, ``tech_stack``).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_noop as _noop

from capabilities.models import AgentRole
from prompts.models import TEMPLATE_TYPES, PromptTemplate, PromptVersion

PROJECT_VARIABLES: list[dict[str, Any]] = [
    {"name": "project_name", "description": _noop("Project name"), "required": True},
    {"name": "role_display_name", "description": _noop("The role's display name"), "required": True},
    {"name": "emoji", "description": _noop("The role's emoji"), "required": False, "default": ""},
    {"name": "project_description", "description": _noop("What the project is"), "required": False, "default": ""},
    {"name": "tech_stack", "description": _noop("Technologies in use"), "required": False, "default": ""},
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
                {
                    "name": "task_description",
                    "description": _noop("The task in hand"),
                    "required": False,
                    "default": "",
                },
                {
                    "name": "capabilities",
                    "description": _noop("Capability ids this role offers"),
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
            [{"name": "tools", "description": _noop("Tools this role may use"), "required": False, "default": []}],
        ),
        "guardrails": (
            "Never contradict the user's original requirement. Do not invent facts about the project; "
            "ask the supervisor when something is unclear. Stay within your role; invoke other roles only "
            "through your capabilities.\n",
            [],
        ),
    }


def load_builtin_prompts(roles: list[tuple[AgentRole, dict[str, Any]]]) -> int:
    """Give each built-in role the default templates it lacks, at version 1.0.0 and active;
    ``roles`` pairs each role with its built-in spec (``responsibilities``, ``persona``).
    Returns how many templates were created (call it inside a transaction)."""
    created = 0
    for role, spec in roles:
        for template_type, (content, variables) in default_templates(
            role.role, spec["responsibilities"], spec["persona"]
        ).items():
            template, made = PromptTemplate.objects.get_or_create(role=role, template_type=template_type, project=None)
            if made:
                PromptVersion.objects.create(
                    template=template,
                    version="1.0.0",
                    content=content,
                    variables=variables,
                    is_active=True,
                    note="built-in default",
                )
                created += 1
    return created


def seed_prompts(
    role: AgentRole, *, source: str | None = None, actor: Any = None, skip: Any = ()
) -> dict[str, dict[str, Any]]:
    """Give a new ``role`` its six PRD §4.5 templates at version 1.0.0: copies of ``source``'s
    active global versions where it has them, else the standard templates filled with the
    role's responsibilities. Template types in ``skip`` are left alone. Returns the changes
    (``prompts.<role>.<type>``)."""
    copied: dict[str, PromptVersion] = {}
    if source:
        for version in PromptVersion.objects.filter(
            is_active=True, template__role__role=source, template__project__isnull=True
        ).select_related("template"):
            copied[version.template.template_type] = version
    defaults = default_templates(role.role, role.responsibilities, role.description or role.display_name)
    changes = {}
    for template_type in TEMPLATE_TYPES:
        if template_type in skip:
            continue
        template = PromptTemplate.objects.create(role=role, template_type=template_type, project=None)
        original = copied.get(template_type)
        if original is not None:
            content, variables, language = original.content, original.variables, original.language
            note = f"copied from {source} {template_type} v{original.version}"
        else:
            content, variables = defaults[template_type]
            language, note = "en", "standard template for a new role"
        PromptVersion.objects.create(
            template=template,
            version="1.0.0",
            content=content,
            variables=variables,
            language=language,
            is_active=True,
            note=note,
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
        )
        changes[f"prompts.{role.role}.{template_type}"] = {"old": None, "new": "1.0.0"}
    return changes

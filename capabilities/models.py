"""Configuration models: the source of truth the runtime's ConfigSnapshot is built from.

A row with ``project = NULL`` is the global value; a row with a project overrides it for
that project only (PRD §4.7 "具体权限可在项目级配置中覆盖"). Every saved change bumps
``ConfigState.version`` and writes a ``ConfigChange`` audit row (PRD §4.8).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q

from capabilities.names import in_language
from teamclaw.runtime.config import CATEGORIES, CapabilityType, ToolMode
from teamclaw.runtime.memory import MAX_MEMORY_TOKENS, MIN_MEMORY_TOKENS

ROLE_SLUG = r"^[a-z][A-Za-z0-9_]{1,39}$"
"""US-09 custom role slug: a lowercase letter, then 1-39 letters, digits or '_'."""

CAPABILITY_ID = r"^[a-z][a-z0-9_]{1,63}$"


class Project(models.Model):
    """A project whose agents may run with overridden roles, permissions and prompts, used by
    its ``members`` (issue 31: a project's tasks and knowledge are for its members)."""

    slug = models.SlugField(max_length=64, unique=True, help_text="Stable id used in the API (?project=).")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    tech_stack = models.CharField(max_length=500, blank=True)
    working_directory = models.CharField(
        max_length=1000, blank=True, help_text="Absolute path file tools are confined to; blank = the data folder."
    )
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="teamclaw_projects",
        help_text="Who may start tasks in this project and read its knowledge, besides staff and the users "
        "who may see every task (monitoring.access.can_use_project).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class AgentRole(models.Model):
    """An agent role (PRD §4.1 AgentRoleDefinition): 8 built in, plus custom ones (US-09)."""

    role = models.CharField(max_length=40, unique=True, validators=[RegexValidator(ROLE_SLUG)])
    display_name = models.CharField(max_length=100)
    emoji = models.CharField(max_length=16, blank=True)
    description = models.TextField(blank=True)
    responsibilities = models.JSONField(default=list, blank=True)
    display_name_zh = models.CharField(
        max_length=100, blank=True, help_text="The name in Chinese (blank: the English)."
    )
    description_zh = models.TextField(blank=True, help_text="The description in Chinese (blank: the English).")
    responsibilities_zh = models.JSONField(
        default=list, blank=True, help_text="The responsibilities in Chinese (empty: the English)."
    )
    is_builtin = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    executor = models.CharField(
        max_length=40, blank=True, help_text="Executor kind for every capability of this role (blank = each card's)."
    )
    metadata = models.JSONField(default=dict, blank=True)
    sort_order = models.PositiveIntegerField(default=100)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["sort_order", "role"]

    def __str__(self) -> str:
        return f"{self.emoji} {self.display_name}".strip()

    @property
    def shown_name(self) -> str:
        """The display name in the active language (``capabilities.names``)."""
        return in_language(self.display_name, self.display_name_zh)

    @property
    def shown_description(self) -> str:
        """The description in the active language."""
        return in_language(self.description, self.description_zh)

    @property
    def shown_responsibilities(self) -> list[str]:
        """The responsibilities in the active language."""
        return in_language(self.responsibilities, self.responsibilities_zh)


class Skill(models.Model):
    """A skill package (seed 003 skill-index.yaml); its capabilities are cards with ``skill`` set."""

    skill_id = models.CharField(max_length=128, unique=True)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=64)
    skill_form = models.CharField(max_length=16, default="SCENE")
    status = models.CharField(max_length=16, default="DISCOVERED")
    document = models.JSONField(default=dict)
    error_reason = models.TextField(blank=True)
    source = models.TextField(blank=True, help_text="The skill-index.yaml as uploaded.")
    warnings = models.JSONField(default=list, blank=True, help_text="[{path, line, message}] from import and install.")
    install_config = models.JSONField(default=dict, blank=True, help_text="The {config} given at install.")
    role = models.CharField(max_length=40, blank=True, help_text="Owner role of the cards, set at activation.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["skill_id"]

    def __str__(self) -> str:
        return self.skill_id


class CapabilityCard(models.Model):
    """A capability card (PRD §2.2): schemas, version, owners, tools, timeout (s), tags."""

    capability_id = models.CharField(max_length=64, unique=True, validators=[RegexValidator(CAPABILITY_ID)])
    name = models.CharField(max_length=200)
    description = models.TextField()
    name_zh = models.CharField(max_length=200, blank=True, help_text="The name in Chinese (blank: the English).")
    description_zh = models.TextField(blank=True, help_text="The description in Chinese (blank: the English).")
    category = models.CharField(max_length=20, choices=[(c, c) for c in CATEGORIES])
    input_schema = models.JSONField()
    output_schema = models.JSONField()
    version = models.CharField(max_length=64, default="1.0.0")
    owner_roles = models.ManyToManyField(AgentRole, related_name="capabilities")
    required_tools = models.JSONField(default=list, blank=True)
    timeout_s = models.PositiveIntegerField(default=60, validators=[MinValueValidator(1), MaxValueValidator(3600)])
    tags = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    is_builtin = models.BooleanField(default=False)
    executor = models.CharField(max_length=40, default="offline")
    executor_config = models.JSONField(default=dict, blank=True)
    skill = models.ForeignKey(Skill, null=True, blank=True, on_delete=models.CASCADE, related_name="cards")
    capability_type = models.CharField(
        max_length=10, choices=[(t.value, t.value) for t in CapabilityType], default=CapabilityType.EXPOSED.value
    )
    address = models.CharField(max_length=300, blank=True)
    idempotent = models.BooleanField(
        null=True,
        blank=True,
        default=None,
        help_text="running it twice does no harm, so a failure after the request was sent is retried "
        "(empty: no for http plugins, yes otherwise)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["capability_id"]

    def __str__(self) -> str:
        return self.capability_id

    @property
    def shown_name(self) -> str:
        """The name in the active language (``capabilities.names``)."""
        return in_language(self.name, self.name_zh)

    @property
    def shown_description(self) -> str:
        """The description in the active language."""
        return in_language(self.description, self.description_zh)


def _scoped_unique(name: str, fields: list[str]) -> list[models.BaseConstraint]:
    """One constraint for global rows (project NULL) and one for project rows."""
    return [
        models.UniqueConstraint(fields=fields, condition=Q(project__isnull=True), name=f"{name}_global"),
        models.UniqueConstraint(
            fields=["project", *fields], condition=Q(project__isnull=False), name=f"{name}_project"
        ),
    ]


class InvokePermission(models.Model):
    """One invoke matrix cell (PRD §4.7): may ``caller`` invoke ``target``?"""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    caller = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="+")
    target = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="+")
    allowed = models.BooleanField()

    class Meta:
        constraints = _scoped_unique("invoke_cell", ["caller", "target"])

    def __str__(self) -> str:
        return f"{self.caller.role}->{self.target.role}: {'allow' if self.allowed else 'deny'}"


class ToolPermission(models.Model):
    """One tool matrix cell (PRD §4.7): allow, deny or confirm."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="+")
    tool = models.CharField(
        max_length=160, help_text="one of the six PRD §4.7 tools, or an MCP tool mcp:<source>/<tool> (issue 16)"
    )
    mode = models.CharField(max_length=8, choices=[(m.value, m.value) for m in ToolMode])

    class Meta:
        constraints = _scoped_unique("tool_cell", ["role", "tool"])

    def __str__(self) -> str:
        return f"{self.role.role}/{self.tool}: {self.mode}"


class RoleConstraint(models.Model):
    """A role's constraints (PRD §4.7 约束条件). Global rows set every field; a project row's
    NULL field inherits the global value."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="constraints")
    timeout_s = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(3600)]
    )
    max_retries = models.PositiveIntegerField(null=True, blank=True, validators=[MaxValueValidator(10)])
    file_scope = models.CharField(max_length=500, null=True, blank=True)  # noqa: DJ001 - NULL = inherit global
    token_budget = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(100), MaxValueValidator(10_000_000)]
    )
    max_concurrent_instances = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1), MaxValueValidator(64)]
    )
    memory_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(MIN_MEMORY_TOKENS), MaxValueValidator(MAX_MEMORY_TOKENS)],
        help_text="Estimated tokens of history a model-backed agent replays (seed 003 MemoryContext); "
        "NULL = the process default TEAMCLAW_MEMORY_TOKENS (globally) or the global value (in a project).",
    )

    class Meta:
        constraints = _scoped_unique("role_constraint", ["role"])

    def __str__(self) -> str:
        return f"{self.role.role} constraints ({self.project.slug if self.project else 'global'})"


class RoleExecutor(models.Model):
    """A role's executor choice (docs/architecture.md §8): the executor kind and model options for every
    capability of the role that is not bound to a plugin. ``project = NULL`` is the global
    choice; a project row overrides it field by field (blank = inherit). No key is stored:
    ``endpoint`` names a server configured in the environment (TEAMCLAW_MODEL_ENDPOINTS)."""

    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="executor_choices")
    executor = models.CharField(max_length=40, blank=True, help_text="Executor kind (blank = inherit).")
    model = models.CharField(max_length=200, blank=True, help_text="Model name (blank = inherit).")
    endpoint = models.CharField(max_length=40, blank=True, help_text="Configured endpoint name (blank = inherit).")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = _scoped_unique("role_executor", ["role"])

    def __str__(self) -> str:
        scope = self.project.slug if self.project else "global"
        return f"{self.role.role} executor ({scope}): {self.executor or 'inherit'}"


class ConfigState(models.Model):
    """The single row holding the current config version (PRD §4.8 配置版本号)."""

    version = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"config v{self.version}"


class AppliedChanges(models.Manager["ConfigChange"]):
    """``ConfigChange.objects``: the changes that were applied (refused attempts are audited
    next to them, but no version, stale-save diff or impact count may read one as a change)."""

    def get_queryset(self) -> models.QuerySet[ConfigChange]:
        return super().get_queryset().filter(outcome=ConfigChange.APPLIED)


class ConfigChange(models.Model):
    """Audit record of one config change (PRD §4.8 ConfigChangeEvent plus who and why), or of
    a refused attempt at one (``outcome`` refused: who, when, what was sent, and why it was
    refused in ``refusal``; nothing of it was saved, so it has no version of its own and no
    ``changes``), or of an override for one task alone (``outcome`` override, config_type
    ``fork``: a fork that widens the matrices, ``runs.fork_policy``; nothing saved changed, so
    it has no version of its own, and ``changes`` holds each widened cell ``{old, new}``).
    ``objects`` holds the applied changes only; ``every`` holds all three."""

    APPLIED = "applied"
    REFUSED = "refused"
    OVERRIDE = "override"
    OUTCOMES = [(APPLIED, APPLIED), (REFUSED, REFUSED), (OVERRIDE, OVERRIDE)]

    CONFIG_TYPES = [
        ("prompt", "prompt"),
        ("permission", "permission"),
        ("tool_binding", "tool_binding"),
        ("constraint", "constraint"),
        ("role", "role"),
        ("capability", "capability"),
        ("skill", "skill"),
        ("import", "import"),
        ("builtin", "builtin"),
        ("project", "project"),
        ("fork", "fork"),
    ]
    config_type = models.CharField(max_length=16, choices=CONFIG_TYPES)
    role = models.CharField(max_length=40, blank=True)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL)
    old_version = models.PositiveBigIntegerField()
    new_version = models.PositiveBigIntegerField(db_index=True)
    changed_fields = models.JSONField(default=list)
    changes = models.JSONField(default=dict, help_text="field -> {old, new}")
    note = models.TextField(blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    outcome = models.CharField(max_length=8, choices=OUTCOMES, default=APPLIED, db_index=True)
    refusal = models.JSONField(
        default=dict, blank=True, help_text="a refused attempt: {status, code, detail, errors, method, path}"
    )

    every = models.Manager()
    objects = AppliedChanges()

    class Meta:
        default_manager_name = "objects"
        ordering = ["-new_version", "-id"]
        permissions = [("import_config", "Can import configuration documents (US-10)")]

    def __str__(self) -> str:
        return f"v{self.new_version} {self.config_type} {self.role}".strip()

    def event(self) -> dict[str, object]:
        """The ConfigChangeEvent (PRD §4.8) this change publishes."""
        return {
            "config_type": self.config_type,
            "role": self.role,
            "project_id": self.project.slug if self.project else None,
            "old_version": str(self.old_version),
            "new_version": str(self.new_version),
            "changed_fields": list(self.changed_fields),
        }


class ProjectRoleOverride(models.Model):
    """A project's own enabled/disabled switch for a role (PRD §4.1 角色启用/禁用, 项目级角色配置覆盖).

    No row = the role's global ``enabled`` applies.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="role_overrides")
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="project_overrides")
    enabled = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "role"], name="project_role_override")]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.role.role}: {'enabled' if self.enabled else 'disabled'}"


class ProjectCapabilityOverride(models.Model):
    """A project's own enabled/disabled switch for a capability card (US-06, PRD §4.8 运行时启用/禁用).

    No row = the card's global ``enabled`` applies.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="capability_overrides")
    card = models.ForeignKey(CapabilityCard, on_delete=models.CASCADE, related_name="project_overrides")
    enabled = models.BooleanField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "card"], name="project_capability_override")]

    def __str__(self) -> str:
        return f"{self.project.slug}/{self.card.capability_id}: {'enabled' if self.enabled else 'disabled'}"


class ConfigDocument(models.Model):
    """The edit version of one config document, for optimistic concurrency (issue 5).

    ``name`` is ``invoke_matrix``, ``tool_matrix``, ``constraints:<role>``, ``role:<role>``,
    ``capability:<id>`` or ``project``; ``project`` NULL is the global layer. ``version`` is
    the config version (``ConfigState.version``, PRD §4.8) of the last change that touched
    the document, 0 when it never changed. No row = version 0.
    """

    name = models.CharField(max_length=120)
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    version = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = _scoped_unique("config_document", ["name"])

    def __str__(self) -> str:
        return f"{self.name} ({self.project.slug if self.project else 'global'}) v{self.version}"


# Skill lifecycle history, alert rules and workflows (seed 003) live in their own module.
from capabilities.skill_models import AlertRule, SkillOperation, Workflow  # noqa: E402, F401

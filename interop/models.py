"""Role-bound tokens (issue 16): a bearer secret that makes its holder act as one agent role."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from capabilities.models import AgentRole


class RoleToken(models.Model):
    """A token that lets an MCP or A2A client call *as* ``role``.

    Only a SHA-256 digest of the secret is stored (``digest``); the secret is shown once when
    the token is issued. A revoked token (``revoked_at`` set) authenticates nothing. Calls made
    with it go through the invoke permission matrix, constraints and budgets of ``role``
    (PRD §4.7) exactly as an invoke from that role's agent would."""

    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'Claude Desktop on Ana's laptop'.")
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="tokens")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False, help_text="The secret's first characters.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="When it stops working (OAuth access tokens); blank = never."
    )
    oauth_client = models.ForeignKey(
        "OAuthClient",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="access_tokens",
        help_text="The OAuth client it was issued to through /authorize and /token; blank = issued by hand.",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.role.role})"

    @property
    def active(self) -> bool:
        """True while the token has not been revoked."""
        return self.revoked_at is None


class A2ATask(models.Model):
    """A product task started through A2A (issue 16; ``interop.a2a``): who started it and the
    A2A side of it the product does not hold.

    The A2A task id *is* the product task's id (``task``), so the dashboard and the API show
    the same task. ``document`` is the A2A ``Task`` as the SDK last saved it (JSON form: its
    ``contextId``, message history and metadata); its state and artifacts are always read from
    the product task, which stays the truth (``interop.a2a_tasks.a2a_task``). Only the role
    that started a task (``role``) sees or changes it through A2A."""

    task = models.OneToOneField("monitoring.Task", primary_key=True, on_delete=models.CASCADE, related_name="a2a")
    role = models.CharField(max_length=40, db_index=True, help_text="The role of the token that started the task.")
    token = models.ForeignKey(RoleToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="a2a_tasks")
    context_id = models.CharField(max_length=100, db_index=True)
    document = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "A2A task"

    def __str__(self) -> str:
        return f"A2A {self.task_id} ({self.role})"


class McpToolSource(models.Model):
    """An MCP server whose tools become tools of the tool permission matrix (issue 16, PRD §4.7).

    ``transport`` ``stdio``: ``command`` is a name from ``TEAMCLAW_MCP_STDIO_ALLOWLIST`` and
    ``args`` its arguments; ``http``: ``url`` is a Streamable HTTP endpoint whose host is in
    ``TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS``. ``project`` None is a global source (every
    project sees its tools); otherwise only that project does. ``name`` is unique across
    scopes, so ``mcp:<name>/<tool>`` names one tool everywhere.

    Discovery (``interop.mcp_sources.refresh``) records ``state`` (``new`` before the first
    try, ``connected``, ``error`` with ``error``), ``last_checked_at``, what the server said it
    is (``server_name``, ``server_version``), ``notes`` on tools left out, and ``tools``:
    ``[{name, description, input_schema}]`` as the server listed them (``inputSchema``). A
    failed refresh keeps the tools of the last successful one."""

    TRANSPORTS = [("stdio", "stdio"), ("http", "http")]
    STATES = [("new", "new"), ("connected", "connected"), ("error", "error")]

    name = models.SlugField(max_length=40, unique=True, help_text="tools are named mcp:<name>/<tool>")
    project = models.ForeignKey(
        "capabilities.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="mcp_sources"
    )
    transport = models.CharField(max_length=8, choices=TRANSPORTS)
    command = models.CharField(max_length=200, blank=True)
    args = models.JSONField(default=list, blank=True)
    url = models.CharField(max_length=2000, blank=True)
    state = models.CharField(max_length=12, choices=STATES, default="new")
    error = models.TextField(blank=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    server_name = models.CharField(max_length=200, blank=True)
    server_version = models.CharField(max_length=100, blank=True)
    tools = models.JSONField(default=list, blank=True)
    notes = models.JSONField(default=list, blank=True)
    credentials = models.TextField(
        blank=True, editable=False, help_text="Sealed request headers of an http source (interop.source_credentials)."
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"mcp:{self.name} ({self.transport})"

    @property
    def server(self) -> dict[str, object]:
        """How to reach the server (``ToolSpec.server``): ``{transport, command, args}`` or ``{transport, url}``."""
        if self.transport == "stdio":
            return {"transport": "stdio", "command": self.command, "args": list(self.args)}
        return {"transport": "http", "url": self.url}


class OAuthClient(models.Model):
    """An OAuth 2.1 client registered through ``POST /register`` (RFC 7591; ``interop.mcp_oauth``),
    e.g. a desktop app's remote MCP connector. ``info`` is the SDK's
    ``OAuthClientInformationFull`` as JSON (redirect URIs, name, auth method and, for a
    confidential client, the secret the SDK compares at ``/token``)."""

    client_id = models.CharField(max_length=100, primary_key=True)
    name = models.CharField(max_length=200, blank=True)
    info = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name or self.client_id


class OAuthGrant(models.Model):
    """One authorization request (``GET /authorize``) and what became of it: a signed-in staff
    user approves it for one role on the consent page (an authorization code, stored as a
    digest, good once for ``CODE_TTL_S``) or denies it."""

    id = models.CharField(max_length=64, primary_key=True)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="grants")
    params = models.JSONField(help_text="The SDK's validated AuthorizationParams.")
    created_at = models.DateTimeField(auto_now_add=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    role = models.ForeignKey(AgentRole, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    code_digest = models.CharField(max_length=64, unique=True, null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"grant for {self.client_id} ({'decided' if self.decided_at else 'open'})"


class OAuthRefreshToken(models.Model):
    """A refresh token (digest) for the role an OAuth grant chose; used once (rotated)."""

    digest = models.CharField(max_length=64, unique=True)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="refresh_tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.CASCADE, related_name="+")
    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="+")
    access_token = models.ForeignKey(RoleToken, null=True, on_delete=models.SET_NULL, related_name="+")
    resource = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"refresh token of {self.client_id} for {self.role_id}"

"""Models of seed 003 beyond the ``Skill`` row: lifecycle history, alert rules, workflows.

Imported at the end of ``capabilities.models`` so Django registers them with the app.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SkillStatus(models.TextChoices):
    """Seed 003 ``SkillLifecycleState``."""

    DISCOVERED = "DISCOVERED", "discovered"
    INSTALLING = "INSTALLING", "installing"
    INSTALLED = "INSTALLED", "installed"
    ACTIVATING = "ACTIVATING", "activating"
    ACTIVATED = "ACTIVATED", "activated"
    DEACTIVATING = "DEACTIVATING", "deactivating"
    DEACTIVATED = "DEACTIVATED", "deactivated"
    UNINSTALLING = "UNINSTALLING", "uninstalling"
    UNINSTALLED = "UNINSTALLED", "uninstalled"
    ERROR = "ERROR", "error"


class SkillOperation(models.Model):
    """One lifecycle operation on a skill and its outcome: the skill's history.

    ``id`` is the ``installId`` / ``activationId`` the API returns. ``transitions`` holds
    ``[{from, to, at}]`` (ISO times), ``phases`` the activation phases of seed 003
    ``ActivationPhase`` ``[{phase, at, message}]``. A FAILED operation changed nothing: the
    skill kept ``from_status`` (its transitions were rolled back and are not listed).
    """

    OPERATIONS = [
        ("discover", "discover"),
        ("install", "install"),
        ("activate", "activate"),
        ("deactivate", "deactivate"),
        ("uninstall", "uninstall"),
    ]
    OUTCOMES = [("COMPLETED", "COMPLETED"), ("FAILED", "FAILED")]

    id = models.CharField(max_length=32, primary_key=True)
    skill = models.ForeignKey("capabilities.Skill", on_delete=models.CASCADE, related_name="operations")
    operation = models.CharField(max_length=12, choices=OPERATIONS)
    outcome = models.CharField(max_length=10, choices=OUTCOMES)
    from_status = models.CharField(max_length=16, choices=SkillStatus.choices)
    to_status = models.CharField(max_length=16, choices=SkillStatus.choices)
    transitions = models.JSONField(default=list, blank=True)
    phases = models.JSONField(default=list, blank=True)
    role = models.CharField(max_length=40, blank=True)
    config = models.JSONField(default=dict, blank=True)
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.operation} {self.skill_id}: {self.outcome}"


class AlertRule(models.Model):
    """A seed 003 ``alerting.rules`` entry of a skill: ``condition`` on ``metric`` held for
    ``duration_s`` seconds raises an alert of ``severity`` and runs ``actions``
    (``{notify: str, auto_restart: bool, scale_out: int, failover: bool}``).
    ``capability`` is a capability name of the skill ('' = every capability)."""

    SEVERITIES = [("info", "info"), ("warning", "warning"), ("critical", "critical")]

    skill = models.ForeignKey("capabilities.Skill", on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=200)
    capability = models.CharField(max_length=128, blank=True)
    condition = models.CharField(max_length=200)
    metric = models.CharField(max_length=32)
    op = models.CharField(max_length=2)
    threshold = models.JSONField(help_text="A number (success_rate as a fraction, latencies in ms) or a health state.")
    duration_s = models.FloatField()
    severity = models.CharField(max_length=10, choices=SEVERITIES)
    actions = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["skill", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.condition} for {self.duration_s:g} s)"


class Workflow(models.Model):
    """A seed 003 ``orchestration`` workflow, validated at save (capabilities.workflow_spec).

    ``definition`` is the normalised step list the runtime runs; ``source`` the YAML as
    written; ``version`` counts saves."""

    workflow_id = models.CharField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.TextField()
    definition = models.JSONField()
    warnings = models.JSONField(default=list, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workflow_id"]

    def __str__(self) -> str:
        return self.workflow_id

"""Import a config document (US-10): validate all of it, then apply all of it or nothing.

1. ``safe_yaml.load_document`` reads the text (YAML by the skill loader's rules, no anchors
   or aliases; JSON by the one bounded parser; size and depth limits, no duplicate keys);
2. the document is validated against the published JSON Schema (``config_schema``), then
   its references are checked against the database and the document itself (roles named
   in matrices exist, cards are valid under the registry's own ``validate_card``, prompt
   templates parse, versions do not clash...). Every problem is reported with its JSON
   pointer, and nothing is changed;
3. the changes are applied in one transaction, audited as one ``import`` change (one
   config version, one ConfigChangeEvent after commit, PRD §4.8).

``dry_run=True`` runs step 3 and rolls it back: the change list it returns is exactly what a
real import would do. An import changes only what differs, so exporting and re-importing a
document changes nothing (no version bump). Missing items are left alone (an import never
deletes); in a project document ``null`` resets a value to the global one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from capabilities.audit import change_document
from capabilities.config import current_version
from capabilities.errors import ConfigInvalid, Problems, StaleVersion
from capabilities.matrices import INVOKE, TOOL, SelfInvocationConflict, apply_cells, self_invocation_conflicts
from capabilities.models import (
    AgentRole,
    CapabilityCard,
    ConfigChange,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
)
from capabilities.projects import check_fields
from capabilities.registry import card_document
from capabilities.role_constraints import apply_values, file_scope_problem
from capabilities.roles import RESERVED_SLUGS
from capabilities.switches import set_enabled_override
from capabilities.versions import commit_change, documents_for, lock_config
from prompts.actions import LANGUAGE
from prompts.builtin import seed_prompts
from prompts.models import PromptTemplate, PromptVersion
from prompts.render import PromptRenderError, parse, validate_variables
from prompts.versions import VersionError, next_version
from prompts.versions import parse as parse_version
from team.config_schema import pointer, schema_errors
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.schemas import validate_card

CARD_FIELDS = (
    "name",
    "description",
    "category",
    "input_schema",
    "output_schema",
    "version",
    "required_tools",
    "tags",
    "idempotent",
)
ROLE_FIELDS = ("display_name", "emoji", "description", "responsibilities", "enabled")
NEW_CARD_EXECUTOR = "offline"


@dataclass
class ImportResult:
    """What an import did or, with ``dry_run``, would do.

    ``changes`` is ``[{field, old, new}]`` in the order applied (``field`` is the audit key,
    e.g. ``invoke_matrix.pm.dba``); ``config_version`` is the version after the import.
    """

    dry_run: bool
    applied: bool
    scope: str
    project: str | None
    config_version: int
    changes: list[dict[str, Any]] = field(default_factory=list)
    change_id: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "applied": self.applied,
            "scope": self.scope,
            "project": self.project,
            "config_version": self.config_version,
            "count": len(self.changes),
            "changes": self.changes,
            "change_id": self.change_id,
        }


def _prompt_key(spec: dict[str, Any]) -> tuple[str, list[Any], str]:
    return spec["content"], list(spec.get("variables") or []), spec.get("language") or "en"


class _Importer:
    """Checks and applies one schema-valid document inside the import transaction."""

    def __init__(self, data: dict[str, Any], actor: Any) -> None:
        self.data = data
        self.scope = data.get("scope") or "global"
        self.actor = actor
        self.problems = Problems()
        self.changes: dict[str, dict[str, Any]] = {}
        self.roles = {r.role: r for r in AgentRole.objects.all()}
        self.cards = {c.capability_id: c for c in CapabilityCard.objects.select_related("skill")}
        self.project: Project | None = None
        self.new_roles: list[str] = []

    def add(self, parts: list[Any], reason: str) -> None:
        self.problems.add(pointer(parts), reason)

    # ------------------------------------------------------------------ checks
    def check(self) -> None:
        """Every reference and rule the schema cannot express; raises ConfigInvalid."""
        doc = self.data
        known = set(self.roles)
        if self.scope == "global":
            if "project" in doc:
                self.add(["project"], "only a project document (scope: project) has a project block")
            self._check_new_roles()
            known |= set(doc.get("roles") or {})
            self._check_cards(known)
        else:
            self._check_project_block()
            self._check_project_references()
        self._check_role_references(known)
        self._check_plain_names()
        self._check_prompts()
        self.problems.raise_if_any()

    def _check_plain_names(self) -> None:
        """Role and card names and descriptions are plain text (teamclaw.plain_text): no
        control or bidirectional control characters, which would disguise them in lists."""
        for section, fields in (("roles", ("display_name", "emoji", "description")), ("capabilities", ("name",))):
            for key, spec in (self.data.get(section) or {}).items():
                for name in fields:
                    value = spec.get(name) if isinstance(spec, dict) else None
                    if isinstance(value, str) and (reason := hidden_character_problem(value)):
                        self.add([section, key, name], reason)
            if section == "roles":
                for key, spec in (self.data.get(section) or {}).items():
                    items = spec.get("responsibilities") if isinstance(spec, dict) else None
                    for index, item in enumerate(items if isinstance(items, list) else []):
                        if isinstance(item, str) and (reason := hidden_character_problem(item)):
                            self.add([section, key, "responsibilities", index], reason)

    def _check_new_roles(self) -> None:
        """Roles a global document adds: not reserved, no case-only clash, a display name."""
        for slug, spec in (self.data.get("roles") or {}).items():
            if slug in self.roles:
                continue
            if slug in RESERVED_SLUGS:
                self.add(["roles", slug], f"{slug!r} is reserved")
            clash = next((r for r in self.roles if r.lower() == slug.lower()), None)
            if clash:
                self.add(["roles", slug], f"role {clash!r} exists; slugs may not differ only in case")
            if "display_name" not in spec:
                self.add(["roles", slug, "display_name"], "a new role needs a display_name")

    def _check_project_references(self) -> None:
        """A project document switches existing roles and cards only (not a skill's cards)."""
        for slug in self.data.get("roles") or {}:
            if slug not in self.roles:
                self.add(["roles", slug], f"unknown role {slug!r}")
        for capability_id in self.data.get("capabilities") or {}:
            card = self.cards.get(capability_id)
            if card is None:
                self.add(["capabilities", capability_id], f"unknown capability {capability_id!r}")
            elif card.skill_id:
                self.add(["capabilities", capability_id], "belongs to a skill; its skill's lifecycle governs it")

    def _check_role_references(self, known: set[str]) -> None:
        """Matrix, constraint and prompt rows (and invoke columns) name known roles; file
        scopes stay inside the project folder."""
        doc = self.data
        for section in ("invoke_matrix", "tool_matrix", "constraints", "prompts"):
            for row, values in (doc.get(section) or {}).items():
                if row not in known:
                    self.add([section, row], f"unknown role {row!r}")
                if section == "invoke_matrix":
                    for col in values:
                        if col not in known:
                            self.add([section, row, col], f"unknown role {col!r}")
        for role, values in (doc.get("constraints") or {}).items():
            scope_value = values.get("file_scope")
            if isinstance(scope_value, str) and (reason := file_scope_problem(scope_value)):
                self.add(["constraints", role, "file_scope"], reason)

    def _check_project_block(self) -> None:
        block = dict(self.data["project"])
        slug = block.pop("slug")
        self.project = Project.objects.filter(slug=slug).first()
        try:
            if self.project is None:
                check_fields({"slug": slug, **block}, creating=True)
            else:
                check_fields(block, creating=False)
        except ConfigInvalid as exc:
            for name, reasons in exc.errors.items():
                for reason in reasons:
                    self.add(["project", name], reason)

    def _check_cards(self, known: set[str]) -> None:
        for capability_id, spec in (self.data.get("capabilities") or {}).items():
            card = self.cards.get(capability_id)
            path = ["capabilities", capability_id]
            if card is not None and card.skill is not None:
                self.add(path, f"belongs to skill {card.skill.skill_id}; import the skill package instead")
                continue
            executor = spec.get("executor")
            if card is not None and executor is not None and executor != card.executor:
                self.add([*path, "executor"], f"is {card.executor!r}; an import cannot change a card's executor")
            if card is None and executor not in (None, NEW_CARD_EXECUTOR):
                self.add(
                    [*path, "executor"],
                    f"a new card can only use the {NEW_CARD_EXECUTOR!r} executor; register plugins through "
                    "POST /api/v1/capabilities (their settings are never in an export)",
                )
            base = card_document(card) if card is not None else {"id": capability_id}
            merged = {**base, **{k: v for k, v in spec.items() if k != "executor"}, "id": capability_id}
            merged.setdefault("version", "1.0.0")
            for name, reasons in validate_card(merged, known).items():
                for reason in reasons:
                    self.add([*path, name], reason)

    def _check_prompts(self) -> None:
        """The prompts app's own rules (PRD §4.5): SemVer versions, templates that compile in
        the sandbox, well-formed variable declarations, language codes."""

        for role, templates in (self.data.get("prompts") or {}).items():
            for template_type, spec in templates.items():
                path = ["prompts", role, template_type]
                entries = [(path, spec)] + [
                    ([*path, "history", i], item) for i, item in enumerate(spec.get("history") or [])
                ]
                seen: dict[str, tuple[str, list[Any], str]] = {}
                for where, entry in entries:
                    try:
                        parse_version(entry["version"])
                    except VersionError as exc:
                        self.add([*where, "version"], str(exc))
                    if "\x00" in entry["content"]:
                        self.add([*where, "content"], "contains a NUL character")
                    else:
                        try:
                            parse(entry["content"])
                        except PromptRenderError as exc:
                            self.add([*where, "content"], exc.message)
                    try:
                        if validate_variables(entry.get("variables") or []) != list(entry.get("variables") or []):
                            self.add([*where, "variables"], "each variable is {name, description, required, default}")
                    except PromptRenderError as exc:
                        self.add([*where, "variables"], exc.message)
                    if "language" in entry and not LANGUAGE.match(entry["language"]):
                        self.add([*where, "language"], "must be a language code such as en, zh or pt-BR")
                    key = _prompt_key(entry)
                    if entry["version"] in seen and seen[entry["version"]] != key:
                        self.add(where, f"version {entry['version']} appears twice with different content")
                    seen[entry["version"]] = key

    # ------------------------------------------------------------------ apply
    def change(self, key: str, old: Any, new: Any) -> None:
        self.changes[key] = {"old": old, "new": new}

    def apply(self) -> dict[str, dict[str, Any]]:
        """Apply the checked document; returns the changes. Raises ConfigInvalid on a clash
        found while applying (the caller's transaction then rolls everything back)."""
        doc = self.data
        if self.scope == "project":
            self._apply_project_block()
            self._apply_switches()
        else:
            self._apply_roles()
            self._apply_cards()
        before = self_invocation_conflicts(self._self_invocation_roles(), self.project)
        for kind in (INVOKE, TOOL):
            cells = {
                (row, col): value for row, values in (doc.get(kind.name) or {}).items() for col, value in values.items()
            }
            if cells:
                self.changes.update(apply_cells(kind, self.project, cells, self.roles))
        for role, values in (doc.get("constraints") or {}).items():
            clean = {name: (value.strip() if isinstance(value, str) else value) for name, value in values.items()}
            self.changes.update(apply_values(self.roles[role], self.project, clean))
        self._check_self_invocation(before)
        self._apply_prompts()
        for slug in self.new_roles:
            given = set((doc.get("prompts") or {}).get(slug, {}))
            self.changes.update(seed_prompts(self.roles[slug], actor=self.actor, skip=given))
        self.problems.raise_if_any()
        return self.changes

    def _self_invocation_roles(self) -> set[str]:
        """Roles the document may let invoke themselves (their own invoke cell set to true,
        or to null: inherit, in a project) or whose instance limit it sets."""
        doc = self.data
        allowing = {
            role for role, values in (doc.get("invoke_matrix") or {}).items() if values.get(role, False) is not False
        }
        limiting = {
            role for role, values in (doc.get("constraints") or {}).items() if "max_concurrent_instances" in values
        }
        return allowing | limiting

    def _check_self_invocation(self, before: list[SelfInvocationConflict]) -> None:
        """A role that may invoke itself needs two instances (``matrices.
        self_invocation_conflicts``); each conflict this import introduces is named where the
        document caused it: the role's own invoke cell, its limit, or both."""
        doc = self.data
        for conflict in self_invocation_conflicts(self._self_invocation_roles(), self.project, excluding=before):
            role = conflict.role
            cells = (doc.get("invoke_matrix") or {}).get(role) or {}
            if role in cells and cells[role] is not False:
                self.add(["invoke_matrix", role, role], conflict.reason())
            if "max_concurrent_instances" in ((doc.get("constraints") or {}).get(role) or {}):
                self.add(["constraints", role, "max_concurrent_instances"], conflict.reason())

    def _apply_project_block(self) -> None:
        block = dict(self.data["project"])
        slug = block.pop("slug")
        if self.project is None:
            self.project = Project.objects.create(slug=slug, **{k: v.strip() for k, v in block.items()})
            self.change(f"projects.{slug}.created", None, self.project.name)
            return
        dirty = False
        for name, value in block.items():
            value = value.strip()
            if getattr(self.project, name) != value:
                self.change(f"projects.{slug}.{name}", getattr(self.project, name), value)
                setattr(self.project, name, value)
                dirty = True
        if dirty:
            self.project.save()

    def _apply_switches(self) -> None:
        assert self.project is not None
        for slug, spec in (self.data.get("roles") or {}).items():
            role = self.roles[slug]
            switched = set_enabled_override(
                ProjectRoleOverride, self.project, "role", role, role.enabled, spec["enabled"]
            )
            if switched:
                self.changes[f"roles.{slug}.enabled"] = switched
        for capability_id, spec in (self.data.get("capabilities") or {}).items():
            card = self.cards[capability_id]
            switched = set_enabled_override(
                ProjectCapabilityOverride, self.project, "card", card, card.enabled, spec["enabled"]
            )
            if switched:
                self.changes[f"capabilities.{capability_id}.enabled"] = switched

    def _apply_roles(self) -> None:
        order = AgentRole.objects.aggregate(top=Max("sort_order"))["top"] or 0
        for slug, spec in (self.data.get("roles") or {}).items():
            role = self.roles.get(slug)
            if role is None:
                order += 1
                role = AgentRole.objects.create(
                    role=slug,
                    display_name=spec["display_name"].strip(),
                    emoji=spec.get("emoji", ""),
                    description=spec.get("description", ""),
                    responsibilities=spec.get("responsibilities", []),
                    enabled=spec.get("enabled", True),
                    is_builtin=False,
                    sort_order=order,
                    metadata={"source": "imported (US-10)"},
                )
                self.roles[slug] = role
                self.new_roles.append(slug)
                self.change(f"roles.{slug}.created", None, role.display_name)
                continue
            dirty = False
            for name in ROLE_FIELDS:
                if name in spec and getattr(role, name) != spec[name]:
                    self.change(f"roles.{slug}.{name}", getattr(role, name), spec[name])
                    setattr(role, name, spec[name])
                    dirty = True
            if dirty:
                role.save()

    def _apply_cards(self) -> None:
        for capability_id, spec in (self.data.get("capabilities") or {}).items():
            card = self.cards.get(capability_id)
            owners = sorted(spec["owner_roles"]) if "owner_roles" in spec else None
            values = {name: spec[name] for name in CARD_FIELDS if name in spec}
            if "timeout" in spec:
                values["timeout_s"] = spec["timeout"]
            if "enabled" in spec:
                values["enabled"] = spec["enabled"]
            prefix = f"capabilities.{capability_id}"
            if card is None:
                card = CapabilityCard.objects.create(
                    capability_id=capability_id, executor=NEW_CARD_EXECUTOR, is_builtin=False, **values
                )
                card.owner_roles.set([self.roles[r] for r in owners or []])
                self.cards[capability_id] = card
                self.change(f"{prefix}.created", None, card.name)
                continue
            dirty = False
            for name, value in values.items():
                if getattr(card, name) != value:
                    self.change(f"{prefix}.{'timeout' if name == 'timeout_s' else name}", getattr(card, name), value)
                    setattr(card, name, value)
                    dirty = True
            if dirty:
                card.save()
            if owners is not None:
                current = sorted(card.owner_roles.values_list("role", flat=True))
                if current != owners:
                    card.owner_roles.set([self.roles[r] for r in owners])
                    self.change(f"{prefix}.owner_roles", current, owners)

    def _apply_prompts(self) -> None:
        user = self.actor if getattr(self.actor, "is_authenticated", False) else None
        for slug, templates in (self.data.get("prompts") or {}).items():
            role = self.roles[slug]
            for template_type, spec in templates.items():
                key = f"prompts.{slug}.{template_type}"
                template, _ = PromptTemplate.objects.get_or_create(
                    role=role, template_type=template_type, project=self.project
                )
                versions = {v.version: v for v in template.versions.all()}
                added = []
                for index, item in enumerate([*(spec.get("history") or []), spec]):
                    existing = versions.get(item["version"])
                    if existing is not None:
                        if _prompt_key(item) != (existing.content, list(existing.variables or []), existing.language):
                            where = ["prompts", slug, template_type]
                            if index < len(spec.get("history") or []):
                                where += ["history", index]
                            self.add(
                                where,
                                f"version {item['version']} already exists with different content; "
                                "give changed content a new version",
                            )
                        continue
                    versions[item["version"]] = PromptVersion.objects.create(
                        template=template,
                        version=item["version"],
                        content=item["content"],
                        variables=list(item.get("variables") or []),
                        language=item.get("language") or "en",
                        is_active=False,
                        note="imported (US-10)",
                        created_by=user,
                    )
                    added.append(item["version"])
                if spec["version"] in added:
                    earlier = [v for v in versions if v not in added]
                    try:
                        next_version(earlier, explicit=spec["version"])
                    except VersionError as exc:
                        self.add(
                            ["prompts", slug, template_type, "version"],
                            f"{exc} (prompt history only moves forward; to go back, name that existing version)",
                        )
                        continue
                current = next((v for v in versions.values() if v.is_active), None)
                wanted = versions[spec["version"]]
                if current is None or current.pk != wanted.pk:
                    if current is not None:
                        current.is_active = False
                        current.save(update_fields=["is_active"])
                    wanted.is_active = True
                    wanted.save(update_fields=["is_active"])
                    self.change(key, current.version if current else None, wanted.version)
                history = [v for v in added if v != spec["version"]]
                if history:
                    self.change(f"{key}.history", None, history)


def _recent(version: int) -> list[dict[str, Any]]:
    rows = ConfigChange.objects.filter(new_version__gt=version).select_related("actor", "project")[:50]
    return [change_document(c) for c in reversed(list(rows))]


def import_config(
    data: dict[str, Any],
    *,
    dry_run: bool,
    expected_version: int | None = None,
    note: str = "",
    actor: Any = None,
) -> ImportResult:
    """Validate and apply (or, with ``dry_run``, rehearse) a config document.

    ``expected_version`` (optional) is the config version the operator reviewed a dry run
    at: a different current version raises StaleVersion, so what was reviewed is what is
    applied. Raises ConfigInvalid with ``{json pointer: [reasons]}`` for every problem;
    nothing is changed then.
    """
    errors = schema_errors(data)
    if errors:
        count = sum(len(v) for v in errors.values())
        raise ConfigInvalid(errors, f"the document does not match the schema ({count} problem{'s' * (count != 1)})")
    try:
        return _import(data, dry_run=dry_run, expected_version=expected_version, note=note, actor=actor)
    except IntegrityError:
        raise StaleVersion(
            "the configuration",
            expected_version or 0,
            current_version(),
            [],
        ) from None


def _import(
    data: dict[str, Any], *, dry_run: bool, expected_version: int | None, note: str, actor: Any
) -> ImportResult:
    with transaction.atomic():
        # Prompt saves lock their role's row, then the config row (prompts.actions); take the
        # same locks in the same order so the two never deadlock on PostgreSQL.
        prompt_roles = sorted(data.get("prompts") or {})
        list(AgentRole.objects.select_for_update().filter(role__in=prompt_roles).order_by("pk"))
        state = lock_config()
        if expected_version is not None and state.version != expected_version:
            raise StaleVersion("the configuration", expected_version, state.version, _recent(expected_version))
        importer = _Importer(data, actor)
        importer.check()
        changes = importer.apply()
        listed = [{"field": key, **value} for key, value in changes.items()]
        project = importer.project.slug if importer.project else (data.get("project") or {}).get("slug")
        if dry_run:
            transaction.set_rollback(True)
            return ImportResult(True, False, importer.scope, project, state.version, listed)
        change = commit_change(
            "import",
            documents=documents_for(changes),
            changes=changes,
            project=importer.project,
            note=note or "configuration imported",
            actor=actor,
        )
    return ImportResult(
        False,
        change is not None,
        importer.scope,
        project,
        change.new_version if change else state.version,
        listed,
        change.pk if change else None,
    )

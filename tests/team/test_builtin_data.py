"""The built-in team equals the PRD tables cell by cell (seed 000 §4.1, §4.2, §4.5, §4.7).

The expected tables below are transcribed from the PRD text, independently of
capabilities/builtin/*.yaml, so a typo in either shows up here.
"""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from capabilities.models import AgentRole, CapabilityCard, InvokePermission, RoleConstraint, ToolPermission
from prompts.models import PromptTemplate, PromptVersion
from team.builtin import load_builtin
from teamclaw.runtime.config import CATEGORIES

pytestmark = pytest.mark.django_db

# PRD §4.1 内置角色定义: 标识 -> 核心能力
PRD_ROLES = {
    "main": ["task_orchestration", "question_aggregation", "progress_monitoring"],
    "pm": ["requirement_analysis", "prd_writing", "user_story_generation"],
    "designer": ["ui_design", "prototype_generation", "style_guide_creation"],
    "architect": ["architecture_design", "api_design", "tech_stack_selection"],
    "coderA": ["code_generation", "component_development", "frontend_testing"],
    "coderB": ["code_generation", "api_implementation", "backend_testing"],
    "dba": ["schema_design", "migration_creation", "query_optimization"],
    "devops": ["deployment_config", "cicd_setup", "environment_management"],
}
ORDER = ["main", "pm", "designer", "architect", "coderA", "coderB", "dba", "devops"]

# PRD §4.7 权限矩阵, rows = caller, columns in ORDER; ✅ = 1, ❌ = 0
PRD_INVOKE = """
main      1 1 1 1 1 1 1 1
pm        0 0 1 1 0 0 0 0
designer  0 0 0 1 0 0 0 0
architect 0 0 0 0 0 0 1 0
coderA    0 0 1 0 0 0 1 0
coderB    0 0 0 1 0 0 1 1
dba       0 0 0 0 0 0 0 0
devops    0 0 0 0 0 0 0 0
"""

# PRD §4.7 工具权限矩阵, rows = tool, columns in ORDER; A ✅ allow, D ❌ deny, C ⚠️ confirm
PRD_TOOLS = """
file_read      A A A A A A A A
file_write     A A A A A A A A
code_execution C D D D C C C C
database       D D D D D D A C
deployment     C D D D D D D A
network        C D D D C C D C
"""
MODES = {"A": "allow", "D": "deny", "C": "confirm"}


@pytest.fixture
def team(builtin):
    return builtin


def test_the_eight_builtin_roles_have_the_prd_slugs_and_core_capabilities(team):
    builtin_roles = AgentRole.objects.filter(is_builtin=True)
    assert sorted(r.role for r in builtin_roles) == sorted(PRD_ROLES)
    for role in builtin_roles:
        assert role.metadata["core_capabilities"] == PRD_ROLES[role.role]
        owned = set(role.capabilities.values_list("capability_id", flat=True))
        assert set(PRD_ROLES[role.role]) <= owned, role.role
        assert role.display_name
        assert role.emoji
        assert role.description
        assert role.responsibilities


def test_dba_also_offers_schema_query_and_code_review_exists(team):
    assert CapabilityCard.objects.get(capability_id="schema_query").owner_roles.filter(role="dba").exists()
    schema = CapabilityCard.objects.get(capability_id="schema_query")
    assert schema.input_schema["required"] == ["table"]
    assert "columns" in schema.output_schema["required"]
    assert CapabilityCard.objects.filter(capability_id="code_review").exists()


def test_invoke_matrix_equals_prd_cell_by_cell(team):
    for row in PRD_INVOKE.strip().splitlines():
        caller, *cells = row.split()
        for target, cell in zip(ORDER, cells, strict=True):
            permission = InvokePermission.objects.get(project=None, caller__role=caller, target__role=target)
            assert permission.allowed is (cell == "1"), f"{caller} -> {target}"


def test_tool_matrix_equals_prd_cell_by_cell(team):
    for row in PRD_TOOLS.strip().splitlines():
        tool, *cells = row.split()
        for role, cell in zip(ORDER, cells, strict=True):
            permission = ToolPermission.objects.get(project=None, role__role=role, tool=tool)
            assert permission.mode == MODES[cell], f"{role}/{tool}"


def test_constraint_defaults_are_the_prd_values(team):
    for constraint in RoleConstraint.objects.filter(project=None):
        assert (
            constraint.timeout_s,
            constraint.max_retries,
            constraint.token_budget,
            constraint.max_concurrent_instances,
            constraint.file_scope,
        ) == (60, 3, 50_000, 4, ".")
    assert RoleConstraint.objects.filter(project=None).count() == AgentRole.objects.count()


def test_every_prd_capability_has_a_real_card(team):
    every = {cap for caps in PRD_ROLES.values() for cap in caps} | {"schema_query", "code_review"}
    cards = {c.capability_id: c for c in CapabilityCard.objects.all()}
    assert every <= set(cards)
    for card in cards.values():
        assert card.category in CATEGORIES
        assert card.version == "1.0.0"
        assert card.owner_roles.exists()
        for schema in (card.input_schema, card.output_schema):
            Draft202012Validator.check_schema(schema)
            assert schema["type"] == "object", card.capability_id
            assert schema["properties"], card.capability_id
            assert schema["required"], card.capability_id


def test_reviewer_custom_roles_exist_and_main_may_invoke_them(team):
    for slug in ("ai_expert", "domain_expert", "consolidator"):
        role = AgentRole.objects.get(role=slug)
        assert not role.is_builtin
        assert InvokePermission.objects.get(project=None, caller__role="main", target__role=slug).allowed
        assert not InvokePermission.objects.filter(project=None, caller__role=slug, allowed=True).exists()


def test_every_role_has_the_six_prompt_templates_at_1_0_0(team):
    types = {"system_prompt", "persona", "context_template", "output_format", "tool_instruction", "guardrails"}
    for role in AgentRole.objects.all():
        templates = PromptTemplate.objects.filter(role=role, project=None)
        assert {t.template_type for t in templates} == types
        for template in templates:
            active = PromptVersion.objects.get(template=template, is_active=True)
            assert active.version == "1.0.0"
    system = PromptVersion.objects.get(template__role__role="coderA", template__template_type="system_prompt")
    names = {v["name"] for v in system.variables}
    assert {"project_name", "role_display_name", "emoji", "project_description", "tech_stack"} <= names


def test_reloading_never_overwrites_an_operators_edits(team):
    role = AgentRole.objects.get(role="pm")
    role.display_name = "Product Owner"
    role.save()
    InvokePermission.objects.filter(project=None, caller__role="pm", target__role="designer").update(allowed=False)
    ToolPermission.objects.filter(project=None, role__role="dba", tool="database").update(mode="confirm")
    created = load_builtin()
    assert not any(created.values())
    assert AgentRole.objects.get(role="pm").display_name == "Product Owner"
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="designer").allowed
    assert ToolPermission.objects.get(project=None, role__role="dba", tool="database").mode == "confirm"


def test_a_deleted_builtin_row_comes_back_on_reload(team):
    ToolPermission.objects.filter(project=None, role__role="devops", tool="network").delete()
    created = load_builtin()
    assert created["tool_cells"] == 1
    assert ToolPermission.objects.get(project=None, role__role="devops", tool="network").mode == "confirm"

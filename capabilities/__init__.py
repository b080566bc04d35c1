"""Roles, capability cards, registry queries, invoke/tool permissions, constraints, projects,
config versions and the built-in TeamClaw team (PRD §4.1, §4.2, §4.7, §4.8)."""

"""Prompt templates: six types per role, SemVer versions, diff, rollback and layered,
sandboxed rendering (PRD §4.5)."""

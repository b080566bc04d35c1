"""The field's protocols (issue 16): an MCP server over the registry, MCP tool sources, an A2A
agent card with its JSON-RPC binding, and role-bound tokens that authenticate their callers.

Every call that arrives through a protocol is an ordinary invoke or task, so the PRD's matrices,
constraints, budgets and recording apply unchanged (docs/architecture.md, Interfaces)."""

"""Knowledge (seed 003 KnowledgeContext): documents attached to a role or a project, cut into
chunks, indexed for full-text search (SQLite FTS5, trigram) and retrieved into the prompts of
model-backed agents (``knowledge.retrieval``)."""

"""The team's configuration as a whole: what spans the capabilities app (roles, cards,
permissions, constraints, projects) and the prompts app. The snapshot a task runs on, the
built-in team, the configuration as one document (export, import, its JSON Schema), roles
created and shown with their prompts, projects with every override they hold, and the
layered prompt preview (docs/architecture.md)."""

"""Runs: making the team work. The runtime host of this process, starting tasks and workflow
runs, commands to running agents (instructions, snapshots, tool confirmations), capability
health as the runtime sees it, and the alert rules' loop (docs/architecture.md)."""

from django.apps import AppConfig


class InteropConfig(AppConfig):
    name = "interop"
    verbose_name = "Interoperability (MCP, A2A)"

    def ready(self) -> None:
        """The MCP tool sources' tools join the tool permission matrix (issue 16, PRD §4.7)."""
        from capabilities.tool_catalogue import add_catalogue
        from interop.mcp_sources import catalogue

        add_catalogue(catalogue)

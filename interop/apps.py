from django.apps import AppConfig


class InteropConfig(AppConfig):
    name = "interop"
    verbose_name = "Interoperability (MCP, A2A)"

    def ready(self) -> None:
        """The MCP tool sources' tools join the tool permission matrix (issue 16, PRD §4.7), and
        the runtime reads their credentials from here (issue 29)."""
        from capabilities.tool_catalogue import add_catalogue, set_source_headers
        from interop.mcp_sources import catalogue, source_headers

        add_catalogue(catalogue)
        set_source_headers(source_headers)

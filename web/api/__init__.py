"""The REST API under ``/api/v1/``: one module per object; errors in the one API error shape
(``teamclaw.api_errors``)."""

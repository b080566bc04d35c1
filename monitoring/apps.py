from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """The ``monitoring`` app: the record of every run (tasks, contexts, messages, snapshots,
    alerts), the recorder that writes it, its live stream, its OpenTelemetry traces and the
    queries that read it."""

    name = "monitoring"
    verbose_name = "Runs and monitoring"

    def ready(self) -> None:
        """Refuse a bad OTLP endpoint at start-up, as settings refuse a bad value (every
        ``manage.py`` command and the server stop with the variable named), instead of when
        the first runtime host starts. Raises ImproperlyConfigured."""
        from monitoring.tracing import traces_endpoint

        traces_endpoint()

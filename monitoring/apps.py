from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    """The ``monitoring`` app: the record of every run (tasks, contexts, messages, snapshots,
    alerts), the recorder that writes it, its live stream and the queries that read it."""

    name = "monitoring"
    verbose_name = "Runs and monitoring"

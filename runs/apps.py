from django.apps import AppConfig


class RunsConfig(AppConfig):
    """The ``runs`` app: it has no models; what runs record is in ``monitoring``."""

    name = "runs"
    verbose_name = "Runs"

from django.apps import AppConfig


class RunsConfig(AppConfig):
    """The ``runs`` app: runtime workers and their commands; what runs record is in ``monitoring``."""

    name = "runs"
    verbose_name = "Runs"

    def ready(self) -> None:
        from runs import checks  # noqa: F401 (registers the review rule-file check)

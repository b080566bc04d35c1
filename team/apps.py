from django.apps import AppConfig


class TeamConfig(AppConfig):
    """The ``team`` app: no models of its own; it combines capabilities and prompts."""

    name = "team"
    verbose_name = "Team configuration"

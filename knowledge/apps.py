from django.apps import AppConfig
from django.db.models.signals import post_save


class KnowledgeConfig(AppConfig):
    name = "knowledge"
    verbose_name = "Knowledge"

    def ready(self) -> None:
        from knowledge.models import KnowledgeSource
        from knowledge.retrieval import SOURCE_PRESENCE

        # A source saved here is retrieved from the next call on (knowledge.retrieval).
        post_save.connect(SOURCE_PRESENCE.source_added, sender=KnowledgeSource, weak=False)

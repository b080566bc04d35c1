"""``python manage.py index_knowledge_words``: cut again the search words of every knowledge
chunk stored by an older version of ``knowledge.words`` (``knowledge.sources.refresh_words``),
so the index matches the queries' cutting. ``make run`` runs it; with nothing stale it is one
count query. Prints how many chunks it cut."""

from django.core.management.base import BaseCommand, CommandError

from knowledge.sources import refresh_words


class Command(BaseCommand):
    help = "Re-cut the search words of knowledge chunks indexed by an older word cutting."

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=500, help="Chunks per transaction (default 500).")

    def handle(self, *args, **options):
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")

        def progress(done: int, total: int) -> None:
            self.stdout.write(f"{done}/{total} chunks cut again")

        done = refresh_words(options["batch"], progress)
        self.stdout.write(f"{done} knowledge chunks re-indexed by word.")

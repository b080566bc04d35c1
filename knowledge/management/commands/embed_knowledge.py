"""``python manage.py embed_knowledge``: give every knowledge chunk without a vector one
(``knowledge.sources.fill_vectors``), e.g. after installing the ``embeddings`` extra over an
existing database; re-indexing a source does the same for that source. Prints progress;
exit status 1 (with the reason) when embeddings are not active. Running it again only
embeds what is still missing."""

from django.core.management.base import BaseCommand, CommandError

from knowledge.sources import fill_vectors
from teamclaw.errors import InvalidField


class Command(BaseCommand):
    help = "Embed the knowledge chunks that have no vector yet (needs the embeddings extra)."

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=64, help="Chunks embedded at a time (default 64).")

    def handle(self, *args, **options):
        if options["batch"] < 1:
            raise CommandError("--batch must be at least 1")

        def progress(done: int, total: int) -> None:
            self.stdout.write(f"{done}/{total} chunks embedded")

        try:
            done = fill_vectors(options["batch"], progress)
        except InvalidField as refused:
            raise CommandError(f"{refused.field}: {refused.reason}") from None
        self.stdout.write(self.style.SUCCESS(f"{done} chunks got a vector."))

"""``python manage.py load_demo_knowledge``: add the demo knowledge documents their roles lack
(``knowledge.demo_knowledge``; ``make run`` runs it after ``load_builtin``)."""

from django.core.management.base import BaseCommand

from knowledge.demo_knowledge import load_demo_knowledge


class Command(BaseCommand):
    help = "Add the demo knowledge documents (database conventions for dba, a runbook for devops) if missing."

    def handle(self, *args, **options):
        added = load_demo_knowledge()
        if added:
            names = ", ".join(f"{s.name} ({s.chunk_count} chunks)" for s in added)
            self.stdout.write(self.style.SUCCESS(f"Demo knowledge added: {names}."))
        else:
            self.stdout.write("Demo knowledge already present; nothing changed.")

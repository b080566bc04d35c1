"""``python manage.py load_builtin``: create the built-in team's missing rows (idempotent)."""

from django.core.management.base import BaseCommand

from team.builtin import load_builtin


class Command(BaseCommand):
    help = "Load the built-in TeamClaw roles, cards, matrices, constraints and prompts (never overwrites edits)."

    def handle(self, *args, **options):
        created = load_builtin()
        if any(created.values()):
            summary = ", ".join(f"{count} {kind}" for kind, count in created.items() if count)
            self.stdout.write(self.style.SUCCESS(f"Built-in team loaded: {summary}."))
        else:
            self.stdout.write("Built-in team already present; nothing changed.")

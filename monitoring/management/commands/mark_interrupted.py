"""``python manage.py mark_interrupted``: close what a stopped server left open.

A server that stops (or crashes) leaves tasks ``running``, contexts executing, instances
alive and confirmations pending in the database. Run before the server starts (``make run``
does). Workflow runs resume: the server's runtime worker takes them over once their lease
expires (10 s), with their confirmations still waiting. What cannot resume (a standalone
invoke's short task) becomes ``failed`` with the reason, its contexts ``terminated`` and
confirmations ``expired``; instances ``terminated``. Recorded history is otherwise untouched.
"""

from django.conf import settings
from django.core.management.base import BaseCommand

from monitoring.recovery import mark_interrupted


class Command(BaseCommand):
    help = "Mark tasks, contexts, instances and confirmations left open by a stopped server as ended."

    def handle(self, *args, **options):
        counts = mark_interrupted()
        # Work cut short is news for the operator; idle instances of the last run are not.
        work = {kind: n for kind, n in counts.items() if n and kind not in ("instances", "resumable")}
        if work:
            self.stdout.write(", ".join(f"{n} {kind}" for kind, n in work.items()) + " marked as interrupted.")
        if counts["resumable"]:
            n = counts["resumable"]
            self.stdout.write(
                f"{n} unfinished task{'s' if n != 1 else ''}: each resumes where it stopped once its worker's "
                f"lease has expired (at most {settings.TEAMCLAW['LEASE_S']} s), unless that worker is still running it."
            )
        if counts["instances"]:
            self.stdout.write(f"Closed {counts['instances']} agent instances of the previous run.")

"""``python manage.py ensure_admin``: make sure the ``admin`` superuser exists.

The password is ``$TEAMCLAW_ADMIN_PASSWORD`` when set; otherwise one is generated on the
first run, printed once and kept in ``<data>/admin_password`` (mode 600). An existing admin
is never changed, so re-running never resets anything.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from capabilities.admin_password import ENVIRONMENT_VARIABLE, admin_password_file


class Command(BaseCommand):
    help = "Create the 'admin' superuser if it does not exist (password from TEAMCLAW_ADMIN_PASSWORD or generated)."

    def handle(self, *args, **options):
        users = get_user_model()
        if users.objects.filter(username="admin").exists():
            self.stdout.write("The admin user exists; its password is unchanged.")
            return
        password = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
        source = ENVIRONMENT_VARIABLE
        if not password:
            password = secrets.token_urlsafe(12)
            path = admin_password_file()
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(password + "\n")
            source = str(path)
            self.stdout.write(self.style.WARNING(f"Created user 'admin' with password: {password}"))
            self.stdout.write(f"(shown once; it is also kept in {path})")
        users.objects.create_superuser("admin", "", password)
        if source == ENVIRONMENT_VARIABLE:
            self.stdout.write(
                self.style.SUCCESS("Created user 'admin' with the password from TEAMCLAW_ADMIN_PASSWORD.")
            )

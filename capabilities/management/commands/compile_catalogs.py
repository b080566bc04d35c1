"""``python manage.py compile_catalogs [--check]``: write every ``locale/*/LC_MESSAGES/*.mo``
from its ``.po`` in pure Python (``teamclaw.message_catalogs``), so no GNU gettext is needed.

``--check`` writes nothing and fails (exit 1) when a committed ``.mo`` is missing or holds other
messages than its ``.po`` (the header aside: ``msgfmt`` rewrites it), see docs/architecture.md
"Translations".
"""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from teamclaw.message_catalogs import CatalogError, compile_catalog, compiled_messages, read_mo, read_po


def is_stale(po_path: Path) -> bool:
    """True when the ``.mo`` beside ``po_path`` is missing, unreadable or says something else."""
    mo_path = po_path.with_suffix(".mo")
    try:
        compiled = read_mo(mo_path)
    except (OSError, CatalogError):
        return True
    wanted = compiled_messages(read_po(po_path))
    compiled.pop("", None)
    wanted.pop("", None)
    return compiled != wanted


class Command(BaseCommand):
    help = "Compile the translation catalogs (locale/*/LC_MESSAGES/*.po -> .mo) without GNU gettext."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Only check that every .mo matches its .po.")

    def handle(self, *args, **options):
        stale = []
        for locale_dir in settings.LOCALE_PATHS:
            for po_path in sorted(Path(locale_dir).glob("*/LC_MESSAGES/*.po")):
                if not options["check"]:
                    self.stdout.write(f"compiled {compile_catalog(po_path)}")
                elif is_stale(po_path):
                    stale.append(str(po_path.with_suffix(".mo")))
        if stale:
            raise CommandError(f"stale: {', '.join(stale)}; run python manage.py compile_catalogs")

"""``manage.py uns_ui_schema [--check]``: write the /ui OpenAPI document and the generated limits
(``console.schemas.rendered``) under ``frontend/src/generated/``; with ``--check``, write
nothing and exit 1 naming each file that differs from what the models give (a /ui payload
changed without regenerating). ``scripts/gen_ui_types.sh`` runs it, then openapi-typescript."""
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from notifications.management.base import OperationalCommand
from console import schemas


def drifted(base: Path) -> list[str]:
    """The generated files under ``base`` whose committed text differs from the models'."""
    out = []
    for rel, text in schemas.rendered().items():
        path = base / rel
        if not path.is_file() or path.read_text() != text:
            out.append(rel)
    return out


class Command(OperationalCommand):
    help = "Write (or --check) the /ui OpenAPI document and limits under frontend/src/generated/."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Fail if a generated file is out of date.")

    def handle(self, *args, check=False, **options):
        base = Path(settings.BASE_DIR)
        if check:
            stale = drifted(base)
            if stale:
                raise CommandError("out of date (run scripts/gen_ui_types.sh and commit): " + ", ".join(stale))
            self.stdout.write("generated /ui files are up to date")
            return
        for rel, text in schemas.rendered().items():
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            self.stdout.write(f"wrote {rel}")

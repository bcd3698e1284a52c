"""The project's settings, with the bench's URLconf (``floor_site.urls``: the project's routes plus
the floor ladder's test-only endpoints). Used only by ``bench/floor.py``."""
from uns_project.settings import *  # noqa: F401,F403

ROOT_URLCONF = "floor_site.urls"

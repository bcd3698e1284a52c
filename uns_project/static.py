"""Static files in every mode: WhiteNoise serves ``/static/`` (the admin's, the
Swagger sidecar's) and the console's built assets at ``/console/`` from every web process.

``manage.py collectstatic`` (``make run`` and the scaled recipe run it) copies the app
directories and ``frontend/dist`` (as ``console/``) into ``STATIC_ROOT``, with content-hashed
names and gzip and Brotli siblings. From there WhiteNoise answers with the encoding the client
accepts (``Vary: Accept-Encoding``), hashed files and ``/console/assets/*`` (Vite hashes those
names itself) with ``max-age`` of a year and ``immutable``, the rest with 60 s.

Nothing collected (a bare ``uns_serve``, the test suite) still works, uncompressed:
``WHITENOISE_USE_FINDERS`` serves the app directories as they are, templates get the plain
names (``StaticFilesStorage``), and ``console.spa`` serves ``frontend/dist`` itself.
``index.html`` is never served from here: ``console.spa`` answers it, with its
Content-Security-Policy and ``Cache-Control: no-cache``, for every client-side route.
"""
import os
from pathlib import Path, PurePosixPath

from django.conf import settings
from whitenoise.compress import Compressor
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

try:
    import brotli
except ImportError:  # whitenoise[brotli] not installed: gzip only
    brotli = None

CONSOLE_PREFIX = "/console/"
# Brotli quality: 5 makes the console bundle 75 kB (gzip -9: 78 kB, Brotli's default 11: 73 kB)
# and keeps collectstatic at seconds; 11 took 90 s of CPU over the admin's and Swagger's files.
BROTLI_QUALITY = 5
CONSOLE_ASSETS = "/console/assets/"


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    """Hashed names from collectstatic's manifest; the plain name for anything it lacks (nothing
    collected yet, or a directory such as the Swagger sidecar's ``swagger-ui-dist``), which
    WhiteNoise then serves unhashed (from the app directories when nothing was collected), so a
    template never fails over a missing manifest entry."""

    manifest_strict = False

    def stored_name(self, name):
        try:
            return super().stored_name(name)
        except ValueError:  # not in the manifest and not in STATIC_ROOT
            return name

    def create_compressor(self, extensions=None, **kwargs):
        # Source maps are only fetched by developer tools: not worth compressing (14 MB of them).
        skip = tuple(extensions or Compressor.SKIP_COMPRESS_EXTENSIONS) + ("map",)
        return _Compressor(extensions=skip, **kwargs)


class _Compressor(Compressor):
    @staticmethod
    def compress_brotli(data):
        return brotli.compress(data, quality=BROTLI_QUALITY)


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, plus the collected console (``STATIC_ROOT/console``) served at ``/console/``
    instead of ``/static/console/`` (so the app only ever runs under its CSP), without
    ``index.html``."""

    def __init__(self, get_response=None, settings=settings):
        super().__init__(get_response, settings)
        for url in [u for u in self.files if u.startswith(f"{self.static_prefix}console/")]:
            del self.files[url]
        if self.static_root:
            self.add_files(Path(self.static_root) / "console", prefix=CONSOLE_PREFIX)
        for url in [u for u in self.files if u.startswith(CONSOLE_PREFIX) and _is_index(u)]:
            del self.files[url]

    def add_files(self, root, prefix=None):
        # Quietly nothing when not collected (WhiteNoise would warn on every start).
        if os.path.isdir(root):
            super().add_files(root, prefix)

    def immutable_file_test(self, path, url):
        if url.startswith(CONSOLE_ASSETS):  # Vite names each asset by its content hash
            return True
        return super().immutable_file_test(path, url)


def _is_index(url: str) -> bool:
    name = PurePosixPath(url).name
    return name.startswith("index.") and name.endswith(".html")  # index.html and its hashed copy

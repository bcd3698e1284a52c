"""Serves the built React app (``frontend/dist``) at ``/`` and ``/console/``.

``/console/<file>`` answers the built file when it exists (hashed assets, cached for a year) and
``index.html`` otherwise (client-side routes). ``index.html`` carries a Content-Security-Policy
that allows only this origin's scripts and connections, because the app holds its token in
memory and must not run anything injected.

After ``collectstatic``, WhiteNoise (uns_project/static.py) answers the collected, compressed
copies of the built files before this view is reached; this view still answers ``index.html``
and every client-side route, and any built file not collected (uncompressed).
"""
import mimetypes
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, HttpResponseNotAllowed

FRONTEND_DIST = Path(getattr(settings, "UNS_FRONTEND_DIST", settings.BASE_DIR / "frontend" / "dist"))

NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>UNS console not built</title>
<p>The console has not been built. Run <code>make run</code> (or <code>npm install &amp;&amp;
npx --no vite build</code> in <code>frontend/</code>).</p>"""


def _csp(request) -> str:
    host = request.get_host()
    return ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self' ws://{host} wss://{host}; object-src 'none'; base-uri 'none'; "
            "frame-ancestors 'none'; form-action 'self'")


def _index(request):
    index = FRONTEND_DIST / "index.html"
    if not index.is_file():
        return HttpResponse(NOT_BUILT, status=503, content_type="text/html; charset=utf-8")
    response = HttpResponse(index.read_bytes(), content_type="text/html; charset=utf-8")
    response["Content-Security-Policy"] = _csp(request)
    response["Cache-Control"] = "no-cache"
    response["Referrer-Policy"] = "no-referrer"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def app(request, path: str = ""):
    """``GET /``, ``/console/`` and ``/console/<path>``."""
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    if path:
        root = FRONTEND_DIST.resolve()
        candidate = (root / path).resolve()
        if candidate.is_file() and candidate.is_relative_to(root) and candidate.name != "index.html":
            content_type = mimetypes.guess_type(candidate.name)[0] or "application/octet-stream"
            # Read whole (the built files are small): a streamed file makes Django's ASGI handler
            # warn about consuming a synchronous iterator.
            response = HttpResponse(candidate.read_bytes(), content_type=content_type)
            if path.startswith("assets/"):
                response["Cache-Control"] = "public, max-age=31536000, immutable"
            response["X-Content-Type-Options"] = "nosniff"
            return response
    return _index(request)

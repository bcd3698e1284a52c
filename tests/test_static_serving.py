"""Static files in every mode (uns_project/static.py): WhiteNoise serves the admin's
files and the console bundle, compressed and with far-future caching for hashed names after
``collectstatic``; uncompressed (app directories, ``frontend/dist``) when nothing was collected."""
import gzip
import re

import brotli
import pytest
from django.conf import settings
from django.contrib.staticfiles.storage import staticfiles_storage
from django.core.management import call_command
from django.test import Client, override_settings

YEAR = 365 * 24 * 3600
DIST = settings.UNS_FRONTEND_DIST


def bundle_url() -> str:
    if not (DIST / "index.html").is_file():
        pytest.fail("the console is not built: run `npm install && npx --no vite build` in frontend/")
    return re.search(r'src="(/console/assets/[^"]+\.js)"', (DIST / "index.html").read_text()).group(1)


def max_age(response) -> int:
    return int(re.search(r"max-age=(\d+)", response["Cache-Control"]).group(1))


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """``collectstatic`` into a temporary STATIC_ROOT, as ``make run`` does into var/static."""
    root = tmp_path_factory.mktemp("static")
    with override_settings(STATIC_ROOT=root, WHITENOISE_USE_FINDERS=False):
        call_command("collectstatic", interactive=False, verbosity=0)
        yield root


def test_the_admin_stylesheet_is_hashed_and_cached_for_a_year(collected):
    hashed = staticfiles_storage.url("admin/css/base.css")
    assert re.fullmatch(r"/static/admin/css/base\.[0-9a-f]{12}\.css", hashed)
    response = Client().get(hashed)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/css")
    assert max_age(response) >= YEAR and "immutable" in response["Cache-Control"]
    plain = Client().get("/static/admin/css/base.css")  # the unhashed name: served, briefly cached
    assert plain.status_code == 200 and max_age(plain) <= 60


def test_the_admin_pages_link_the_hashed_stylesheet(collected, admin_client):
    page = admin_client.get("/admin/")
    assert page.status_code == 200
    assert staticfiles_storage.url("admin/css/base.css").encode() in page.content


@pytest.mark.parametrize("encoding,decode", [("gzip", gzip.decompress), ("br", brotli.decompress)])
def test_the_console_bundle_is_served_compressed_and_cached_forever(collected, encoding, decode):
    url = bundle_url()
    raw = (DIST / url.removeprefix("/console/")).read_bytes()
    response = Client().get(url, HTTP_ACCEPT_ENCODING=f"{encoding}, identity")
    assert response.status_code == 200
    assert response["Content-Encoding"] == encoding and "Accept-Encoding" in response["Vary"]
    content = body(response)
    assert len(content) < len(raw) / 2 and decode(content) == raw
    assert max_age(response) >= YEAR and "immutable" in response["Cache-Control"]
    identity = Client().get(url)
    assert "Content-Encoding" not in identity and body(identity) == raw


def test_index_html_and_client_routes_stay_with_the_spa_view_and_are_not_cached(collected):
    for path in ("/", "/console/", "/console/dlq/some-id", "/console/index.html"):
        response = Client().get(path, HTTP_ACCEPT_ENCODING="gzip")
        assert response.status_code == 200, path
        assert response["Cache-Control"] == "no-cache", path
        assert "script-src 'self'" in response["Content-Security-Policy"], path
        assert b'<div id="root">' in response.content, path
    # The collected copy is not reachable under /static/, where it would run without its CSP.
    assert Client().get("/static/console/index.html").status_code == 404
    assert Client().get("/static" + bundle_url()).status_code == 404


@override_settings(WHITENOISE_USE_FINDERS=True)
def test_nothing_collected_still_serves_the_admin_css_and_the_console(tmp_path):
    with override_settings(STATIC_ROOT=tmp_path / "empty"):
        assert staticfiles_storage.url("admin/css/base.css") == "/static/admin/css/base.css"
        css = Client().get("/static/admin/css/base.css")
        assert css.status_code == 200 and b"body" in body(css)
        bundle = Client().get(bundle_url(), HTTP_ACCEPT_ENCODING="gzip")
        assert bundle.status_code == 200 and "immutable" in bundle["Cache-Control"]

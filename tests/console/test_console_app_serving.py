"""The console app serves the built React app at / and /console/ (index.html fallback for
client routes, hashed assets from frontend/dist) with a Content-Security-Policy."""
import pytest
from django.test import Client

from console import spa


@pytest.fixture
def dist(tmp_path, monkeypatch):
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>UNS console</title>")
    (tmp_path / "assets" / "index-abc.js").write_text("console.log(1)")
    (tmp_path.parent / "outside.txt").write_text("not served")
    monkeypatch.setattr(spa, "FRONTEND_DIST", tmp_path)
    return tmp_path


@pytest.mark.parametrize("path", ["/", "/console/", "/console/dlq", "/console/notifications/x"])
def test_index_and_client_routes_answer_index_html_with_a_csp(dist, path):
    response = Client().get(path)
    assert response.status_code == 200
    assert b"UNS console" in response.content
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe" not in csp
    assert "connect-src 'self' ws://testserver wss://testserver" in csp


def test_assets_are_served_and_cached(dist):
    response = Client().get("/console/assets/index-abc.js")
    assert response.status_code == 200
    assert response.content == b"console.log(1)"
    assert "javascript" in response["Content-Type"]
    assert "immutable" in response["Cache-Control"]


def test_no_path_escapes_dist(dist):
    for path in ("/console/../outside.txt", "/console/%2e%2e/outside.txt", "/console/assets/../../outside.txt"):
        response = Client().get(path)
        assert b"not served" not in response.content


def test_writes_are_refused(dist):
    assert Client().post("/console/").status_code == 405


def test_unbuilt_app_says_how_to_build_it(tmp_path, monkeypatch):
    monkeypatch.setattr(spa, "FRONTEND_DIST", tmp_path / "missing")
    response = Client().get("/")
    assert response.status_code == 503 and b"make run" in response.content

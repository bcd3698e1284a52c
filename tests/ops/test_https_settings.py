"""The production HTTPS settings (docs/how-to/production-settings.md): UNS_SSL_REDIRECT redirects
plain HTTP except the probe and scrape endpoints, HSTS goes out on HTTPS responses only, and the
embedded mode's defaults do neither. ``scripts/check_deploy.sh`` checks that the documented
environment leaves ``check --deploy`` silent; these check what the settings do."""
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = dict(SECURE_SSL_REDIRECT=True, SECURE_HSTS_SECONDS=31536000, SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
                  SECURE_HSTS_PRELOAD=True)


def test_the_defaults_neither_redirect_nor_send_hsts(client):
    assert settings.SECURE_SSL_REDIRECT is False and settings.SECURE_HSTS_SECONDS == 0
    response = client.get("/api/v1/notifications")
    assert response.status_code == 401  # answered over plain HTTP, not redirected
    assert "Strict-Transport-Security" not in response.headers


@override_settings(**PRODUCTION)
def test_plain_http_is_redirected_to_https_but_probes_and_metrics_are_not(client):
    response = client.get("/api/v1/notifications?limit=1")
    assert response.status_code == 301
    assert response.headers["Location"] == "https://testserver/api/v1/notifications?limit=1"
    for path in ("/healthz", "/readyz", "/metrics"):
        assert client.get(path).status_code != 301, path


@override_settings(**PRODUCTION)
def test_https_responses_carry_hsts(client):
    response = client.get("/api/v1/notifications", secure=True)
    assert response.status_code == 401
    assert response.headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"


def test_the_environment_variables_set_the_django_settings():
    env = {"PATH": "/usr/bin:/bin", "UNS_SSL_REDIRECT": "true", "UNS_HSTS_SECONDS": "600",
           "UNS_HSTS_INCLUDE_SUBDOMAINS": "true", "UNS_HSTS_PRELOAD": "false", "UNS_SECURE_COOKIES": "true",
           "DJANGO_SETTINGS_MODULE": "uns_project.settings"}
    code = ("from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS, "
            "s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["True", "600", "True", "False", "True", "True"]

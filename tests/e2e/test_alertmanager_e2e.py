"""End to end with a real Prometheus Alertmanager (Debian's ``prometheus-alertmanager``).

An Alertmanager process is configured with a webhook receiver pointing at UNS (Bearer token in
``http_config``, ``send_resolved: true``). An alert posted to Alertmanager's own API arrives as
one UNS notification (fingerprint as dedup key); once delivered, resolving the alert in
Alertmanager acknowledges it. Skipped when the binary is not installed (``scripts/test.sh``
installs it).
"""
import shutil
import socket
import subprocess
import time
from datetime import datetime, timedelta, timezone

import httpx
import pytest

from notifications.models import Notification

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


@pytest.fixture
def alertmanager(tmp_path, live_server, make_principal):
    """A running Alertmanager whose only receiver is UNS; yields its base URL."""
    if BINARY is None:
        pytest.skip("prometheus-alertmanager is not installed (apt-get install prometheus-alertmanager)")
    _, token = make_principal("alertmanager-e2e", ("producer", "responder"))
    config = tmp_path / "alertmanager.yml"
    config.write_text(f"""
route:
  receiver: uns
  group_by: ['alertname']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: uns
    webhook_configs:
      - url: {live_server.url}/api/v1/integrations/alertmanager
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials: {token}
""")
    port = _free_port()
    log = (tmp_path / "alertmanager.log").open("wb")
    process = subprocess.Popen(
        [BINARY, f"--config.file={config}", f"--storage.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=debug"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        def ready():
            try:
                return httpx.get(f"{base}/-/ready", timeout=1).status_code == 200
            except httpx.HTTPError:
                return process.poll() is not None  # exited: stop waiting, fail below
        _wait(ready, 20, "Alertmanager to become ready")
        assert process.poll() is None, (tmp_path / "alertmanager.log").read_text()
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _post_alert(base: str, *, ends_at: datetime | None = None):
    alert = {
        "labels": {"alertname": "UnsE2EHighLatency", "job": "api", "instance": "api-1:9090", "severity": "critical"},
        "annotations": {"summary": "High request latency on api-1", "description": "p99 above 1s for 10m"},
        "generatorURL": "http://prometheus.example/graph?g0.expr=latency",
    }
    if ends_at is not None:
        alert["endsAt"] = ends_at.isoformat().replace("+00:00", "Z")
    response = httpx.post(f"{base}/api/v2/alerts", json=[alert], timeout=5)
    assert response.status_code == 200, response.text


def test_alertmanager_fires_and_resolves_through_uns(alertmanager):
    from notifications.runtime import Runtime

    _post_alert(alertmanager)
    row = _wait(lambda: Notification.objects.filter(principal="alertmanager-e2e").first(), 30,
                "the firing alert to reach UNS")
    n = row.notification
    assert (n["source"], n["title"], n["severity"]) == ("api/api-1:9090", "High request latency on api-1", "critical")
    assert n["body"] == "p99 above 1s for 10m" and n["require_ack"] is True
    assert n["dedup_key"] == n["metadata"]["alertmanager"]["fingerprint"] and len(n["dedup_key"]) == 16

    Runtime().dispatch()  # deliver it (console channel): it now awaits an ACK
    assert Notification.objects.get(id=row.id).ack_status == "PENDING"

    _post_alert(alertmanager, ends_at=datetime.now(timezone.utc) - timedelta(seconds=1))
    settled = _wait(lambda: Notification.objects.filter(id=row.id, ack_status="ACKED").first(), 30,
                    "the resolved alert to acknowledge the notification")
    assert settled.actor == "alertmanager-e2e"
    assert settled.response_metadata["via"] == "alertmanager"
    # Alertmanager's repeats never made a second notification for the same alert instance
    assert Notification.objects.filter(principal="alertmanager-e2e").count() == 1

"""The Grafana dashboard of the console's series (docs/how-to/grafana/uns-dashboard.json): it
parses, every panel reads the ``${datasource}`` Prometheus variable, and every PromQL expression
names only metrics (and labels of them) that ``/metrics`` actually exports: the exposition is
scraped after a delivered, a retried and a dead-lettered notification, so the labelled counters
and the attempt histogram have samples."""
import json
import re
from pathlib import Path

import pytest
from django.conf import settings

from notifications.adapters.base import DeliveryResult
from notifications.metrics_http import exposition

pytestmark = pytest.mark.django_db

DASHBOARD = Path(settings.BASE_DIR) / "docs" / "how-to" / "grafana" / "uns-dashboard.json"
SAMPLE = re.compile(r"^(uns_\w+)(?:\{([^}]*)\})? ", re.M)
# PromQL words that are not metric names in these expressions.
PROMQL = {"sum", "max", "min", "avg", "rate", "increase", "by", "without", "histogram_quantile", "le"}


def exported() -> dict[str, set[str]]:
    """metric sample name -> the label names it is exported with."""
    out: dict[str, set[str]] = {}
    for name, labels in SAMPLE.findall(exposition().decode()):
        out.setdefault(name, set()).update(re.findall(r"(\w+)=", labels or ""))
    return out


def expressions(dashboard: dict) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def problems(expr: str, metrics: dict[str, set[str]]) -> tuple[set[str], list[str]]:
    """``(metric names, what is wrong)`` of one PromQL expression against the exported ``metrics``."""
    without_strings = re.sub(r'"[^"]*"', '""', expr)
    words = set(re.findall(r"\b[a-zA-Z_:][\w:]*\b", re.sub(r"\[[^\]]*\]", "", without_strings)))
    names = {w for w in words if w.startswith("uns_")}
    labels = set(re.findall(r"(\w+)\s*=~?", without_strings)) | {
        label for group in re.findall(r"\bby \(([^)]*)\)", expr) for label in re.findall(r"\w+", group)}
    wrong = [] if names else ["names no uns_ metric"]
    wrong += [f"unknown word {w!r}" for w in sorted(words - names - labels - PROMQL)]
    for name in sorted(names):
        if name not in metrics:
            wrong.append(f"{name} is not exported by /metrics")
        elif not labels - {"le"} <= metrics[name]:
            wrong.append(f"{name} has no label(s) {sorted(labels - {'le'} - metrics[name])}")
    return names, wrong


def test_every_expression_names_an_exported_metric_and_its_labels(rt, channel, webhook,
                                                                   django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        webhook.script.extend([DeliveryResult(True, message_id="ok"), DeliveryResult(False, retryable=True,
                                                                                     error="HTTP 503"),
                               DeliveryResult(False, retryable=False, error="HTTP 410")])
        for title in ("ok", "retry", "dead"):
            rt.accept("alice", {"source": "s", "title": title, "channels": ["ops-hook"], "require_ack": True})
        rt.dispatch()
    metrics = exported()
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["panels"] and dashboard["schemaVersion"] >= 36
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["datasource"]
    checked = set()
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            names, wrong = problems(target["expr"], metrics)
            assert wrong == [], (panel["title"], target["expr"], wrong)
            checked |= names
    assert {"uns_notifications_accepted_total", "uns_dead_lettered_total", "uns_retries_total", "uns_dead_letters",
            "uns_ack_pending", "uns_channel_deliveries_total", "uns_channel_attempt_seconds_bucket"} <= checked


def test_the_check_refuses_a_metric_or_label_that_is_not_exported(db):
    metrics = exported()
    assert problems("max(uns_dead_letter)", metrics)[1] == ["uns_dead_letter is not exported by /metrics"]
    assert problems('sum(uns_dead_letters{channel="x"})', metrics)[1] == ["uns_dead_letters has no label(s) ['channel']"]
    assert problems("sum(up)", metrics)[1] == ["names no uns_ metric", "unknown word 'up'"]

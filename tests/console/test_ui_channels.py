"""``GET /ui/channels``: per channel its kind, enabled flag, last success, last failure with its
masked reason and the last hour's failure rate, from CHANNEL_ATTEMPT_RESULT rows read through
``ix_uns_channel_results`` (never a scan of the timeline)."""
import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from console import selectors
from notifications.adapters.base import DeliveryResult
from notifications.models import Channel, Event, ResultChannel, ResultSuccess
from notifications.runtime import timeline

pytestmark = pytest.mark.django_db

SECRET = "s3cret-signing-key"  # the ``channel`` fixture's


def send(rt, *results):
    """One notification to ops-hook per result, dispatched (each settles one attempt)."""
    for result in results:
        rt.webhook_script.append(result)
        rt.accept("svc", {"source": "s", "title": "t", "channels": ["ops-hook"]})
        rt.dispatch()


@pytest.fixture
def hook_rt(rt, webhook, channel):
    rt.webhook_script = webhook.script
    return rt


def by_name(body):
    return {item["name"]: item for item in body["items"]}


def test_health_of_each_channel(ui, hook_rt, clock):
    send(hook_rt, DeliveryResult(True, message_id="m1"))
    clock.advance(2 * 3600)  # that success is older than the last hour
    send(hook_rt, DeliveryResult(True, message_id="m2"))
    clock.advance(10)
    last_success = clock()
    send(hook_rt, DeliveryResult(True, message_id="m3"))
    clock.advance(10)
    failed_at = clock()
    send(hook_rt, DeliveryResult(False, retryable=False, error=f"HTTP 401 key {SECRET} rejected by https://u:pw9876@x/h"))
    response = ui().get("/ui/channels")
    assert response.status_code == 200
    items = by_name(response.json())
    hook = items["ops-hook"]
    assert (hook["kind"], hook["enabled"]) == ("webhook", True)
    assert hook["last_success_at"] == last_success
    assert hook["last_failure"]["at"] == failed_at and hook["last_failure"]["retryable"] is False
    assert hook["last_failure"]["error"] == "HTTP 401 key *** rejected by https://***@x/h"
    assert hook["last_hour"] == {"successes": 2, "failures": 1, "failure_rate": pytest.approx(1 / 3)}
    assert SECRET not in response.content.decode() and "pw9876" not in response.content.decode()
    console = items["console"]
    assert console["last_success_at"] is None and console["last_failure"] is None
    assert console["last_hour"] == {"successes": 0, "failures": 0, "failure_rate": None}


def test_two_queries_whatever_the_number_of_channels_or_results(hook_rt, clock):
    send(hook_rt, DeliveryResult(True), DeliveryResult(False, retryable=False, error="HTTP 410"))
    with CaptureQueriesContext(connection) as few:
        selectors.channel_health(clock())
    for i in range(5):
        Channel.objects.create(name=f"more-{i}", kind="webhook", config={"url": "http://127.0.0.1:9/x"})
    send(hook_rt, *[DeliveryResult(False, retryable=False, error="HTTP 410")] * 5)
    with CaptureQueriesContext(connection) as many:
        body = selectors.channel_health(clock())
    assert len(few.captured_queries) == len(many.captured_queries) == 2
    assert len(body["items"]) == 7


def _plan(qs) -> str:
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # tiny test tables: make the planner show its index path
                cursor.execute("SET LOCAL enable_seqscan = off")
        return qs.explain()


@pytest.mark.parametrize("ok", ["true", "false"])
def test_the_reads_use_the_channel_results_index(ok, clock):
    results = (Event.objects.filter(kind=timeline.CHANNEL_ATTEMPT_RESULT)
               .annotate(result_channel=ResultChannel(), result_success=ResultSuccess())
               .filter(result_channel="ops-hook", result_success=ok))
    assert "ix_uns_channel_results" in _plan(results.order_by("-at").values("at")[:1])
    assert "ix_uns_channel_results" in _plan(results.filter(at__gte=clock() - 3600).values("id"))


def test_success_is_read_the_same_on_every_database(hook_rt):
    send(hook_rt, DeliveryResult(True), DeliveryResult(False, retryable=True, error="HTTP 503"))
    seen = sorted(Event.objects.filter(kind=timeline.CHANNEL_ATTEMPT_RESULT)
                  .annotate(c=ResultChannel(), ok=ResultSuccess()).values_list("c", "ok"))
    assert seen == [("ops-hook", "false"), ("ops-hook", "true")]

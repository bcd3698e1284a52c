"""Shared fixtures: a fake clock, a runtime wired to fake adapters, principals with tokens.

PostgreSQL-only tests carry ``@pytest.mark.postgres``, SQLite-only ones (the embedded mode's own
machinery) ``@pytest.mark.sqlite``. On the other database they are skipped and the run says so
loudly at the end; with ``UNS_REQUIRE_POSTGRES=1`` (the PostgreSQL leg of CI) a run that
is not on PostgreSQL fails instead of skipping.

``@pytest.mark.e2e`` marks tests that start real processes: everything under ``tests/e2e/``
(cross-process, Alertmanager and browser suites; marked here, so no module can forget it) and the
MCP server-process modules in ``tests/mcp/``. ``scripts/test.sh`` runs them in the PostgreSQL
leg only (``-m "not e2e"`` on SQLite).

CI mode (``UNS_CI=1``, set by ``scripts/test.sh``, or ``CI=true``): a skipped test is a failure
unless it is a PostgreSQL-only test on a run that is not on PostgreSQL, or a SQLite-only test on
a PostgreSQL run. A missing service or tool
(Redis, Chromium, Alertmanager, ...) therefore fails the leg instead of skipping silently.
"""
import os
from collections import Counter
from concurrent.futures import Future
from pathlib import Path

import pytest
from django.conf import settings

from notifications.adapters.base import DeliveryResult
from notifications.adapters.fake import FakeAdapter

ON_POSTGRES = settings.IS_POSTGRES
DB_NAME = "PostgreSQL" if ON_POSTGRES else "SQLite"
CI = os.environ.get("UNS_CI") == "1" or os.environ.get("CI", "").lower() in ("1", "true")
NEEDS_POSTGRES = "needs PostgreSQL"  # the reason of every skip that is expected on SQLite
NEEDS_SQLITE = "SQLite-only"  # the reason of every skip that is expected on PostgreSQL
E2E_DIR = Path(__file__).parent / "e2e"
T0 = 1_800_000_000.0


class FakeClock:
    """A clock for ``Runtime(clock=...)``: float epoch seconds that move only when told."""

    def __init__(self, start: float = T0):
        self.now = float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def pytest_configure(config):
    if os.environ.get("UNS_REQUIRE_POSTGRES") == "1" and not ON_POSTGRES:
        raise pytest.UsageError("UNS_REQUIRE_POSTGRES=1 but DATABASE_URL is not PostgreSQL")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects, so ``-m "not e2e"`` sees the marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        if E2E_DIR in Path(item.path).parents:
            item.add_marker(pytest.mark.e2e)
    if ON_POSTGRES:
        skip = pytest.mark.skip(reason=f"{NEEDS_SQLITE} (the embedded mode's machinery; the SQLite leg runs it)")
        marker = "sqlite"
    else:
        skip = pytest.mark.skip(reason=f"{NEEDS_POSTGRES} (set DATABASE_URL=postgres://...)")
        marker = "postgres"
    for item in items:
        if marker in item.keywords:
            item.add_marker(skip)


def skip_reason(report) -> str:
    """The reason of a skipped test report (``longrepr`` is ``(path, lineno, "Skipped: ...")``)."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")


def expected_skip(reason: str) -> bool:
    """A skip CI accepts: a PostgreSQL-only test on a run that is not on PostgreSQL, a SQLite-only
    test on a PostgreSQL run."""
    return (NEEDS_POSTGRES in reason and not ON_POSTGRES) or (NEEDS_SQLITE in reason and ON_POSTGRES)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = skip_reason(report)
        if not expected_skip(reason):
            report.outcome = "failed"
            report.longrepr = (f"SKIPPED IN CI -> FAILED ({DB_NAME} run, UNS_CI/CI set): {reason}\n"
                               "CI must run this test: install or start what it needs (scripts/test.sh does).")
    return report


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One loud line per kind of skip, saying which database the run was on and why."""
    reasons = Counter()
    for report in terminalreporter.stats.get("skipped", []):
        reason = skip_reason(report)
        reasons["other-database-only" if expected_skip(reason) else reason] += 1
    for reason, count in sorted(reasons.items()):
        if reason == "other-database-only":
            other = "SQLite" if ON_POSTGRES else "PostgreSQL"
            text = (f"{count} {other}-only test(s) SKIPPED: this run was on {DB_NAME} "
                    f"(the {other} leg of scripts/test.sh runs them)")
        else:
            text = f"{count} test(s) SKIPPED on {DB_NAME}: {reason}"
        terminalreporter.write_sep("!", text, red=True, bold=True)
    deselected = len(terminalreporter.stats.get("deselected", []))
    if deselected:
        terminalreporter.write_sep("=", f"{deselected} test(s) deselected on {DB_NAME} by -m "
                                        f"{config.option.markexpr!r}", yellow=True, bold=True)


class InlineAdapterCalls:
    """``dispatch.window.AdapterThreads`` for a test that runs in a transaction rolled back at its
    end: each adapter call runs at once on the pass's own thread and connection, because another
    connection sees none of the test's uncommitted rows (and on SQLite finds its tables locked).
    The window schedules, checks leases and settles exactly as in production; only its adapter
    calls are not on threads of their own. Tests with ``transaction=True`` run the real threads."""

    def __init__(self, width: int):
        self.width = width

    def submit(self, fn, *args) -> Future:
        future = Future()
        try:
            future.set_result(fn(*args))
        except Exception as exc:
            future.set_exception(exc)
        return future

    def shutdown(self) -> None:
        pass


def _rolled_back(request) -> bool:
    """The test runs in a transaction rolled back at its end (pytest-django's ``db``)."""
    marker = request.node.get_closest_marker("django_db")
    if marker is not None and (marker.kwargs.get("transaction") or (marker.args and marker.args[0])):
        return False
    return not {"transactional_db", "live_server", "django_db_serialized_rollback"} & set(request.fixturenames)


@pytest.fixture(autouse=True)
def _adapter_calls_on_the_test_connection(request, monkeypatch):
    """In a rolled-back test the dispatch window runs its adapter calls inline (``InlineAdapterCalls``)."""
    if _rolled_back(request):
        from notifications.runtime.dispatch import window

        monkeypatch.setattr(window, "AdapterThreads", InlineAdapterCalls)


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def webhook():
    """The fake adapter behind the ``webhook`` kind; script it with DeliveryResult items."""
    return FakeAdapter()


@pytest.fixture
def rt(clock, webhook):
    """A Runtime on the fake clock, a scripted webhook adapter, the real console adapter,
    no callback, one adapter thread (concurrency 1) and jitter pinned to its midpoint."""
    from notifications.adapters.console import ConsoleAdapter
    from notifications.runtime import Runtime

    return Runtime(clock=clock, adapters={"webhook": webhook, "console": ConsoleAdapter(clock)}, callback=None,
                   concurrency=1, rng=lambda: 0.5)


@pytest.fixture
def channel(db):
    """A webhook channel named ``ops-hook`` (delivered by the ``webhook`` fake in ``rt``)."""
    from notifications.models import Channel

    return Channel.objects.create(name="ops-hook", kind="webhook", config={"url": "http://127.0.0.1:9/hook"},
                                  secret="s3cret-signing-key")


def fail(retryable=True, error="HTTP 503"):
    return DeliveryResult(False, retryable=retryable, error=error)


@pytest.fixture
def make_principal(db):
    """``make_principal(name, groups) -> (user, token)`` with a real hashed knox token."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from knox.models import AuthToken

    def make(name, groups=("producer",)):
        user = get_user_model().objects.create(username=name)
        user.groups.add(*Group.objects.filter(name__in=groups))
        _, token = AuthToken.objects.create(user=user, expiry=None)
        return user, token

    return make


@pytest.fixture
def api(make_principal):
    """``api(groups=..., name=...) -> APIClient`` authenticated with a Bearer token."""
    from rest_framework.test import APIClient

    def make(groups=("producer", "responder", "operator"), name=None):
        name = name or "p-" + "-".join(groups)
        _, token = make_principal(name, groups)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        client.principal = name
        return client

    return make

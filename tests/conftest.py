"""Shared fixtures: a fake clock, a runtime wired to fake adapters, principals with tokens.

PostgreSQL-only tests carry ``@pytest.mark.postgres``. On SQLite they are skipped and the run
says so loudly at the end; with ``UNS_REQUIRE_POSTGRES=1`` (the PostgreSQL leg of CI) a run that
is not on PostgreSQL fails instead of skipping.
"""
import os

import pytest
from django.conf import settings

from notifications.adapters.base import DeliveryResult
from notifications.adapters.fake import FakeAdapter

ON_POSTGRES = settings.IS_POSTGRES
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


def pytest_collection_modifyitems(config, items):
    if ON_POSTGRES:
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "PostgreSQL" in str(r.longrepr)]
    if skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} PostgreSQL test(s) SKIPPED: this run was on SQLite",
                                   red=True, bold=True)


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
    no callback, adapters inline (concurrency 1) and jitter pinned to its midpoint."""
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

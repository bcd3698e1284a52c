"""The console login throttle (console/throttle.py): failed logins counted per client
address and per username in the shared cache; X-Forwarded-For read only from trusted proxies;
429 problem details with Retry-After, the right password included, until the window ends.
A fake clock moves the window: no sleeps."""
import uuid

import pytest
from local_redis import answering_redis_url
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache, caches
from django.core.cache.backends.db import DatabaseCache
from django.core.exceptions import ImproperlyConfigured
from django.test import RequestFactory
from rest_framework.test import APIClient

from console import throttle
from console.throttle import LoginLimiter, client_address
from notifications.models import PeopleAuditRecord

pytestmark = pytest.mark.django_db

LOGIN = "/api/v1/auth/login"
PASSWORD = "correct horse battery"
ATTACKER = "203.0.113.7"


class FakeClock:
    def __init__(self, now=1_800_000_000.0):  # the start of a 60 s window
        self.now = now

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed, not security
    settings.UNS_TRUSTED_PROXIES = []
    settings.UNS_LOGIN_FAILURES_PER_ADDRESS = 20
    settings.UNS_LOGIN_FAILURES_PER_USERNAME = 20
    settings.UNS_LOGIN_WINDOW_SECONDS = 60
    fake = FakeClock()
    monkeypatch.setattr(throttle, "LIMITER", LoginLimiter(clock=fake))
    cache.clear()
    yield fake
    cache.clear()


def person(name):
    user = get_user_model().objects.create_user(name, password=PASSWORD)
    user.groups.add(*Group.objects.filter(name__in=["operator"]))
    return user


def login(username, password, peer=ATTACKER, forwarded=None, client=None):
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return (client or APIClient()).post(LOGIN, {"username": username, "password": password}, format="json", **extra)


def assert_throttled(response, retry_after):
    assert response.status_code == 429, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "throttled" and response.json()["status"] == 429
    assert response["Retry-After"] == str(retry_after)


def test_rotating_x_forwarded_for_from_an_untrusted_peer_is_one_address_and_the_right_password_waits(clock):
    """The scenario: 20 wrong passwords, 40 more each with another X-Forwarded-For, then
    the right one. It used to be 20 x 401, 40 x 401 and 200."""
    person("olga")
    assert [login("olga", f"guess-{i}").status_code for i in range(20)] == [401] * 20
    clock.now += 15
    for i in range(40):
        assert_throttled(login("olga", f"guess-x{i}", forwarded=f"198.51.100.{i}"), retry_after=46)
    assert_throttled(login("olga", PASSWORD), retry_after=46)
    clock.now += 45  # the window's end: all 20 still within the last 60 s
    assert_throttled(login("olga", PASSWORD, forwarded="192.0.2.1"), retry_after=1)
    clock.now += 0.5  # the first of them is older than 60 s
    assert login("olga", PASSWORD).status_code == 200


def test_failures_straddling_a_window_start_count_together(clock):
    person("olga")
    clock.now += 55
    assert {login("olga", "wrong").status_code for _ in range(15)} == {401}
    clock.now += 10  # 5 s into the next window: 55/60 of those 15 still count
    # Before the 8th: 7 + 15 x 55/60 = 20.75. A fixed window would have let 20 through here.
    assert [login("olga", "wrong").status_code for _ in range(8)] == [401] * 7 + [429]
    assert_throttled(login("olga", PASSWORD), retry_after=4)  # 7 + 15 x 51/60 = 19.75 < 20 at 9 s
    clock.now += 4
    assert login("olga", PASSWORD).status_code == 200


def test_failures_from_one_address_limit_every_username_tried_from_it(clock):
    person("olga")
    assert {login(f"user-{i}", "x").status_code for i in range(20)} == {401}
    assert_throttled(login("olga", PASSWORD), retry_after=61)
    assert login("olga", PASSWORD, peer="192.0.2.50").status_code == 200  # another address


def test_the_per_username_limit_holds_across_addresses(clock):
    person("olga")
    person("rita")
    assert {login("olga", "wrong", peer=f"198.51.100.{i}").status_code for i in range(20)} == {401}
    assert_throttled(login("olga", PASSWORD, peer="192.0.2.99"), retry_after=61)
    assert login("rita", PASSWORD, peer="192.0.2.99").status_code == 200  # the address is fine
    clock.now += 61
    assert login("olga", PASSWORD, peer="192.0.2.99").status_code == 200


def test_successful_logins_do_not_use_up_the_allowance(clock):
    person("olga")
    assert {login("olga", PASSWORD).status_code for _ in range(25)} == {200}
    assert login("olga", "wrong").status_code == 401


def test_a_trusted_proxy_s_forwarded_client_is_honoured_and_the_header_s_client_part_is_not(clock, settings):
    settings.UNS_TRUSTED_PROXIES = ["10.0.0.0/8", "127.0.0.1"]
    person("olga")
    proxy = "10.1.2.3"
    # The client writes whatever it likes on the left; the proxy appends the address it saw.
    for i in range(20):
        assert login(f"u{i}", "x", peer=proxy, forwarded=f"1.2.3.{i}, 198.51.100.1").status_code == 401
    assert_throttled(login("olga", PASSWORD, peer=proxy, forwarded="9.9.9.9, 198.51.100.1"), retry_after=61)
    # Another client behind the same proxy, and through two trusted hops, is not limited.
    assert login("olga", PASSWORD, peer=proxy, forwarded="198.51.100.2").status_code == 200
    assert login("olga", PASSWORD, peer="127.0.0.1", forwarded="198.51.100.3, 10.9.9.9").status_code == 200


@pytest.mark.parametrize("trusted,peer,forwarded,expected", [
    ([], "203.0.113.7", "198.51.100.1", "203.0.113.7"),                       # default: the peer
    (["10.0.0.0/8"], "203.0.113.7", "198.51.100.1", "203.0.113.7"),           # untrusted peer
    (["10.0.0.0/8"], "10.0.0.1", "6.6.6.6, 198.51.100.1", "198.51.100.1"),    # rightmost untrusted
    (["10.0.0.0/8"], "10.0.0.1", "198.51.100.1, 10.0.0.2", "198.51.100.1"),   # skips trusted hops
    (["10.0.0.0/8"], "10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),           # all trusted: farthest
    (["10.0.0.0/8"], "10.0.0.1", None, "10.0.0.1"),                           # no header: the proxy
    (["::1", "fd00::/8"], "::1", "2001:db8::1, fd00::5", "2001:db8::1"),      # IPv6
])
def test_client_address(settings, trusted, peer, forwarded, expected):
    settings.UNS_TRUSTED_PROXIES = trusted
    extra = {"REMOTE_ADDR": peer, **({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})}
    assert client_address(RequestFactory().get("/", **extra)) == expected


def test_a_trusted_proxy_that_is_no_address_is_a_configuration_error(settings):
    settings.UNS_TRUSTED_PROXIES = ["10.0.0.0/8", "proxy.example"]
    with pytest.raises(ImproperlyConfigured, match="UNS_TRUSTED_PROXIES"):
        client_address(RequestFactory().get("/", REMOTE_ADDR="10.0.0.1"))


def _store_test(clock, monkeypatch, make_store):
    """Two clients standing for two web processes, each with its own connection to the store
    (``caches.create_connection`` is what another process would open): failures seen by one
    count for the other."""
    person("olga")
    process_a = LoginLimiter(clock=clock, cache=make_store())
    process_b = LoginLimiter(clock=clock, cache=make_store())
    client_a, client_b = APIClient(), APIClient()
    monkeypatch.setattr(throttle, "LIMITER", process_a)
    assert {login("olga", "wrong", client=client_a).status_code for _ in range(12)} == {401}
    monkeypatch.setattr(throttle, "LIMITER", process_b)
    assert {login("olga", "wrong", client=client_b).status_code for _ in range(8)} == {401}
    assert_throttled(login("olga", PASSWORD, client=client_b), retry_after=61)
    monkeypatch.setattr(throttle, "LIMITER", process_a)
    assert_throttled(login("olga", PASSWORD, client=client_a), retry_after=61)


def test_two_processes_share_the_limit_through_the_database_cache(clock, monkeypatch):
    assert isinstance(caches["default"], DatabaseCache)  # not a per-process memory cache
    _store_test(clock, monkeypatch, lambda: caches.create_connection("default"))


@pytest.mark.postgres  # Redis goes with the scaled mode: the PostgreSQL leg, where scripts/test.sh sets the URL
def test_two_processes_share_the_limit_through_redis(clock, monkeypatch):
    url = answering_redis_url()
    if url is None:
        pytest.skip("no Redis: set UNS_TEST_REDIS_URL or run scripts/services.sh redis")
    from django.core.cache.backends.redis import RedisCache

    prefix = f"uns-test-{uuid.uuid4().hex}"
    stores = []

    def make_store():
        stores.append(RedisCache(url, {"KEY_PREFIX": prefix}))
        return stores[-1]

    try:
        _store_test(clock, monkeypatch, make_store)
    finally:
        client = stores[0]._cache.get_client(write=True)
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)


def test_a_refused_login_is_audited_once_per_window_and_an_unknown_name_is_not_recorded(clock):
    """LOGIN_REFUSED in uns_people_audit_records: the first refusal of an address and username
    in each window (a client hammering the throttle writes one row, not one per request); a name
    that is no user's is recorded as ``(unknown user)``, since a password typed into the username
    field must not reach the audit."""
    person("olga")
    for i in range(20):
        login("olga", f"guess-{i}")
    assert not PeopleAuditRecord.objects.exists()  # wrong passwords are not throttle refusals
    for i in range(5):
        assert login("olga", f"more-{i}").status_code == 429
    [row] = PeopleAuditRecord.objects.all()
    assert (row.actor, row.action, row.object_type, row.object_id, row.at) == (
        "olga", "LOGIN_REFUSED", "login", "olga", clock.now)
    assert row.detail == {"address": ATTACKER, "retry_after": 61}
    assert login("hunter2-typed-as-a-name", "x").status_code == 429  # the address is over its limit
    unknown = PeopleAuditRecord.objects.exclude(pk=row.pk).get()
    assert (unknown.actor, unknown.object_id, unknown.object_title) == ("(unknown user)",) * 3
    assert "hunter2" not in repr(list(PeopleAuditRecord.objects.values()))
    clock.now += 60  # the next window: one more row for olga
    assert login("olga", "again").status_code == 429
    assert PeopleAuditRecord.objects.filter(actor="olga").count() == 2

"""The one channel timeout rule (``adapters.base.check_timeout``): a JSON number of seconds, more
than 0 and at most half the dispatch lease, so an attempt never outlives its lease (an attempt that
does is fenced out after delivering, LEASE_LOST, and sent again: found by a fresh-user trial with a
90 s timeout on a 60 s lease)."""
import pytest

from notifications.adapters.base import check_timeout, max_timeout_seconds


@pytest.mark.parametrize("value", [True, False, "5", None, [5], float("nan"), 0, -1, 31, 300])
def test_refused(value, settings):
    settings.UNS_LEASE_SECONDS = 60
    with pytest.raises(ValueError, match="timeout must be"):
        check_timeout(value)


def test_accepted_up_to_half_the_lease(settings):
    settings.UNS_LEASE_SECONDS = 60
    assert (check_timeout(30), check_timeout(2.5), max_timeout_seconds()) == (30.0, 2.5, 30.0)
    settings.UNS_LEASE_SECONDS = 900
    assert max_timeout_seconds() == 300.0 and check_timeout(300) == 300.0


def test_the_api_refuses_a_timeout_past_the_lease(settings, django_user_model):
    from rest_framework.test import APIClient

    from notifications.models import Channel

    settings.UNS_LEASE_SECONDS = 60
    admin = django_user_model.objects.create_superuser("root", password="x")
    client = APIClient()
    client.force_authenticate(admin)
    for timeout in (90, True):
        r = client.post("/api/v1/channels", {"name": "slow90", "kind": "webhook",
                                             "config": {"url": "http://127.0.0.1:9/s", "timeout": timeout}},
                        format="json")
        assert r.status_code == 400 and r["Content-Type"].startswith("application/problem+json"), r.content
    assert not Channel.objects.filter(name="slow90").exists()

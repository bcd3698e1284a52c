"""A read that takes no such query parameter refuses it (400 ``invalid_request`` naming each one,
``pagination.KnownParams``) instead of answering as if it were absent: a trial found
``?limit=abc&cursor=garbage&foo=bar`` and ``/ui/silences?state=bogus`` answered 200 on these."""
import pytest

from .helpers import assert_problem

pytestmark = pytest.mark.django_db

READS = ["/ui/overview", "/ui/channels", "/ui/silences", "/ui/policies", "/ui/me", "/ui/oncall", "/ui/oncall/me",
         "/ui/series", "/api/v1/oncall/teams", "/api/v1/oncall/schedules", "/api/v1/oncall/me/pages"]


@pytest.mark.parametrize("path", READS)
def test_a_read_refuses_a_query_parameter_it_does_not_take(api, path):
    client = api(groups=("operator", "console", "responder"))
    assert client.get(path).status_code == 200
    body = assert_problem(client.get(path, {"limit": "abc", "cursor": "garbage", "foo": "bar"}), 400, "invalid_request")
    assert body["errors"] == [{"field": k, "message": "unknown parameter"} for k in ("cursor", "foo", "limit")]


def test_the_silences_read_model_refuses_a_state_filter_it_does_not_have(api):
    assert_problem(api(groups=("console",)).get("/ui/silences", {"state": "bogus"}), 400, "invalid_request")


def test_the_parameters_a_read_takes_still_work_and_a_refusal_needs_credentials_first(api):
    from rest_framework.test import APIClient

    client = api(groups=("console",))
    assert client.get("/api/v1/oncall/schedules", {"at": "1800000000"}).status_code == 200
    assert client.get("/ui/series", {"window": "24h"}).status_code == 200
    assert_problem(APIClient().get("/ui/overview", {"foo": "bar"}), 401, "not_authenticated")

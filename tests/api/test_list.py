"""GET /api/v1/notifications: filters, visibility, keyset cursors; and the paged timeline."""
import base64
import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.conftest import T0

from .helpers import assert_problem, drive_to_dlq, submit

pytestmark = pytest.mark.django_db

URL = "/api/v1/notifications"


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def _walk(client, query: str = "", limit: int = 2) -> list[str]:
    """Every id of a listing, page by page, following ``next``."""
    seen, cursor = [], None
    for _ in range(100):
        url = f"{URL}?limit={limit}{query}" + (f"&cursor={cursor}" if cursor else "")
        response = client.get(url)
        seen += _ids(response)
        cursor = response.json()["next"]
        if cursor is None:
            return seen
    raise AssertionError("pagination did not end")


@pytest.fixture
def world(api, api_rt, clock, webhook, channel):
    """Two producers' notifications at distinct acceptance times (T0, T0+10, ...), one of
    them ACKED, one awaiting ACK, one dead-lettered; and an operator client."""
    alice = api(groups=("producer",), name="alice")
    bob = api(groups=("producer",), name="bob")
    ids = {}
    ids["a1"] = submit(alice, source="billing", title="a1")["id"]
    clock.advance(10)
    ids["b1"] = submit(bob, source="search", title="b1")["id"]
    clock.advance(10)
    ids["a2"] = submit(alice, source="billing", title="a2", require_ack=True)["id"]
    clock.advance(10)
    ids["a3"] = submit(alice, source="search", title="a3", require_ack=True)["id"]
    api_rt.dispatch()  # delivers everything so far; a2 and a3 now await ACK
    responder = api(groups=("responder",), name="rita")
    assert responder.post(f"{URL}/{ids['a3']}/ack", {}, format="json").status_code == 200
    clock.advance(10)
    ids["b2"] = drive_to_dlq(api_rt, clock, webhook, bob, source="search", title="b2")
    return {"ids": ids, "alice": alice, "bob": bob, "operator": api(groups=("operator",), name="olga"),
            "responder": responder}


def test_operator_lists_everything_newest_first_and_asc_on_request(world):
    ids = world["ids"]
    op = world["operator"]
    assert _ids(op.get(URL)) == [ids[k] for k in ("b2", "a3", "a2", "b1", "a1")]
    assert _ids(op.get(f"{URL}?order=asc")) == [ids[k] for k in ("a1", "b1", "a2", "a3", "b2")]


def test_list_item_shape_renders_times_beside_iso(world):
    item = world["operator"].get(f"{URL}?order=asc&limit=1").json()["items"][0]
    assert item["id"] == world["ids"]["a1"]
    assert item["principal"] == "alice" and item["source"] == "billing" and item["title"] == "a1"
    assert item["accepted_at"] == T0
    assert item["accepted_at_iso"] == datetime.fromtimestamp(T0, tz=timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    assert item["status"] == "DELIVERED" and item["dead_letter"] is False and item["dedup_role"] == "leader"
    assert "notification" not in item and "timeline" not in item  # the listing stays small


def test_producer_sees_only_its_own(world):
    ids = world["ids"]
    assert _ids(world["alice"].get(URL)) == [ids["a3"], ids["a2"], ids["a1"]]
    assert _ids(world["bob"].get(URL)) == [ids["b2"], ids["b1"]]
    assert _ids(world["alice"].get(f"{URL}?principal=bob")) == []
    assert _ids(world["alice"].get(f"{URL}?principal=alice&source=billing")) == [ids["a2"], ids["a1"]]


@pytest.mark.parametrize("query, expected", [
    ("status=FAILED", ["b2"]),
    ("status=DELIVERED,FAILED&source=search", ["b2", "a3", "b1"]),
    ("status=DELIVERED&status=PENDING&source=search", ["a3", "b1"]),
    ("ack_status=PENDING", ["a2"]),
    ("ack_status=ACKED,PENDING", ["a3", "a2"]),
    ("ack_status=NONE", ["b2", "b1", "a1"]),
    ("source=billing", ["a2", "a1"]),
    ("dead_letter=true", ["b2"]),
    ("dead_letter=false&principal=bob", ["b1"]),
    ("principal=alice", ["a3", "a2", "a1"]),
    (f"since={T0 + 10}", ["b2", "a3", "a2", "b1"]),
    (f"since={T0 + 10}&until={T0 + 30}", ["a2", "b1"]),
    (f"until={T0 + 0.5}", ["a1"]),
])
def test_filters(world, query, expected):
    ids = world["ids"]
    assert _ids(world["operator"].get(f"{URL}?{query}")) == [ids[k] for k in expected]


def test_time_range_accepts_iso_8601(world):
    ids = world["ids"]
    since = datetime.fromtimestamp(T0 + 10, tz=timezone.utc).isoformat().replace("+00:00", "Z")
    naive_until = datetime.fromtimestamp(T0 + 30, tz=timezone.utc).replace(tzinfo=None).isoformat()
    offset_until = datetime.fromtimestamp(T0 + 30, tz=timezone.utc).astimezone(timezone(timedelta(hours=2))).isoformat()
    op = world["operator"]
    assert _ids(op.get(URL, {"since": since, "until": naive_until})) == [ids["a2"], ids["b1"]]
    assert _ids(op.get(URL, {"since": since, "until": offset_until})) == [ids["a2"], ids["b1"]]


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_cursor_pagination_walks_every_row_exactly_once(world, order):
    op = world["operator"]
    everything = _ids(op.get(f"{URL}?order={order}"))
    for limit in (1, 2, 3, 5, 6):
        assert _walk(op, f"&order={order}", limit) == everything


@pytest.mark.parametrize("source", ["12345", "true", "null", 'quote"d', "\u00e9t\u00e9"])
def test_source_filter_is_an_exact_string_match(api, api_rt, channel, source):
    alice = api(groups=("producer",), name="alice")
    wanted = submit(alice, source=source)["id"]
    submit(alice, source=source + "x")
    assert _ids(alice.get(URL, {"source": source})) == [wanted]


def test_pagination_with_filters_and_equal_acceptance_times(api, api_rt, clock, channel):
    """Rows accepted at the same instant are ordered by id, and the cursor's (time, id) keyset
    neither skips nor repeats them."""
    alice = api(groups=("producer",), name="alice")
    made = [submit(alice, title=f"same-{i}")["id"] for i in range(7)]
    clock.advance(1)
    submit(alice, title="later", source="other")
    walked = _walk(alice, "&order=asc&source=billing", limit=2)
    assert walked == sorted(made)
    assert _walk(alice, "&source=billing", limit=3) == sorted(made, reverse=True)


def test_rows_accepted_mid_walk_do_not_shift_pages(world, clock):
    op = world["operator"]
    first = op.get(f"{URL}?limit=2").json()
    clock.advance(100)
    newer = submit(world["alice"], title="newer")["id"]
    second = op.get(f"{URL}?limit=10&cursor={first['next']}").json()
    ids = world["ids"]
    assert [i["id"] for i in first["items"]] == [ids["b2"], ids["a3"]]
    assert [i["id"] for i in second["items"]] == [ids["a2"], ids["b1"], ids["a1"]]
    assert second["next"] is None
    assert _ids(op.get(f"{URL}?limit=1")) == [newer]


def test_last_full_page_has_no_next(world):
    op = world["operator"]
    body = op.get(f"{URL}?limit=5").json()
    assert len(body["items"]) == 5 and body["next"] is None
    assert op.get(f"{URL}?limit=4").json()["next"] is not None


@pytest.mark.parametrize("query, field", [
    ("limit=0", "limit"),
    ("limit=501", "limit"),
    ("limit=ten", "limit"),
    ("status=DONE", "status"),
    ("status=", "status"),
    ("ack_status=acked", "ack_status"),
    ("dead_letter=maybe", "dead_letter"),
    ("since=yesterday", "since"),
    ("until=nan", "until"),
    ("since=inf", "since"),
    ("order=sideways", "order"),
    ("stauts=FAILED", "stauts"),
    ("source=a&source=b", "source"),
])
def test_bad_query_parameters_are_400_problems(world, query, field):
    body = assert_problem(world["operator"].get(f"{URL}?{query}"), 400, "invalid_request")
    assert [e["field"] for e in body["errors"]] == [field]


@pytest.mark.parametrize("cursor", [
    "not-a-cursor",
    "%%%",
    base64.urlsafe_b64encode(b'{"k":"notifications:desc","t":"x","id":"a"}').decode(),
    base64.urlsafe_b64encode(b'{"k":"timeline","t":1.0,"id":"a"}').decode(),
    base64.urlsafe_b64encode(b"[1, 2]").decode(),
])
def test_tampered_or_foreign_cursors_are_refused(world, cursor):
    assert_problem(world["operator"].get(URL, {"cursor": cursor}), 400, "invalid_cursor")


def test_a_cursor_is_bound_to_its_order(world):
    op = world["operator"]
    cursor = op.get(f"{URL}?limit=1").json()["next"]
    assert_problem(op.get(URL, {"cursor": cursor, "order": "asc"}), 400, "invalid_cursor")
    assert json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))["k"] == "notifications:desc"


def test_listing_needs_console_or_producer_capability(api, client, db):
    assert_problem(client.get(URL), 401, "not_authenticated")
    nobody = api(groups=(), name="nobody")
    assert_problem(nobody.get(URL), 403, "permission_denied")
    assert api(groups=("console",), name="viewer").get(URL).status_code == 200


def test_post_on_the_same_path_still_submits(api, api_rt, channel):
    alice = api(groups=("producer",), name="alice")
    response = alice.post(URL, {"source": "billing", "title": "t", "channels": ["ops-hook"]}, format="json")
    assert response.status_code == 202 and response["Location"].startswith(URL + "/")
    viewer = api(groups=("console",), name="viewer")
    assert_problem(viewer.post(URL, {"source": "s", "title": "t"}, format="json"), 403, "permission_denied")


# --- timeline -----------------------------------------------------------------------------

def test_timeline_pages_oldest_first(world):
    nid = world["ids"]["b2"]
    op = world["operator"]
    full = [e["id"] for e in op.get(f"{URL}/{nid}").json()["timeline"]]
    assert len(full) > 5
    seen, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        body = op.get(f"{URL}/{nid}/timeline", query).json()
        assert len(body["items"]) <= 2
        seen += [e["id"] for e in body["items"]]
        cursor = body["next"]
        if cursor is None:
            break
    assert seen == full
    first = op.get(f"{URL}/{nid}/timeline").json()["items"][0]
    assert first["kind"] == "ACCEPTED" and set(first) == {"id", "kind", "at", "at_iso", "payload"}


def test_timeline_visibility_matches_the_detail_view(world):
    ids = world["ids"]
    assert world["bob"].get(f"{URL}/{ids['b1']}/timeline").status_code == 200
    assert_problem(world["alice"].get(f"{URL}/{ids['b1']}/timeline"), 404, "not_found")
    assert_problem(world["operator"].get(f"{URL}/no-such-id/timeline"), 404, "not_found")


def test_timeline_bad_parameters(world):
    op = world["operator"]
    nid = world["ids"]["a1"]
    assert_problem(op.get(f"{URL}/{nid}/timeline?limit=0"), 400, "invalid_request")
    assert_problem(op.get(f"{URL}/{nid}/timeline?status=x"), 400, "invalid_request")
    listing_cursor = op.get(f"{URL}?limit=1").json()["next"]
    assert_problem(op.get(f"{URL}/{nid}/timeline", {"cursor": listing_cursor}), 400, "invalid_cursor")

"""Every /ui read model runs a fixed number of queries: the count does not grow with the page
size or with the data (no per-row lookups)."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from uihelpers import populate, ui_paths

pytestmark = pytest.mark.django_db

# Whole request, authentication and the secret scrub included.
MAX_QUERIES = 16


def queries(client, path) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(path)
    assert response.status_code == 200, (path, response.content)
    return len(ctx.captured_queries)


def sized(path: str, limit: int) -> str:
    return path + ("&" if "?" in path else "?") + f"limit={limit}"


def test_query_count_does_not_grow_with_page_size_or_data(ui, rt, clock, webhook, channel):
    ids = populate(rt, clock, webhook, n=2)
    client = ui()
    # Baseline: every row on one page, so every kind of row (and every lookup it needs) is in it.
    baseline = {route: queries(client, sized(path, 100) if route in PAGED else path)
                for route, path in ui_paths(ids["leader"][0]).items()}
    populate(rt, clock, webhook, n=12)  # seven times the rows
    for route, path in ui_paths(ids["leader"][0]).items():
        full = queries(client, sized(path, 100) if route in PAGED else path)
        assert full == baseline[route], f"{route}: {baseline[route]} queries for 2 of each, {full} for 14"
        assert full <= MAX_QUERIES, f"{route}: {full} queries"
        if route in PAGED:
            # A smaller page may skip a lookup it has no rows for (an empty IN runs no query).
            small = queries(client, sized(path, 2))
            assert small <= full, f"{route}: {small} queries for a page of 2, {full} for 100"


PAGED = {"ui/inbox", "ui/dlq", "ui/audit", "ui/bulk-actions/<str:bulk_id>"}


def test_pages_are_really_that_large(ui, rt, clock, webhook, channel):
    """The counts above were taken over full pages, not empty ones."""
    populate(rt, clock, webhook, n=12)
    client = ui()
    assert len(client.get("/ui/dlq?limit=100").json()["items"]) == 24
    assert len(client.get("/ui/inbox?limit=100").json()["items"]) == 12
    # 12 ACKs, the bulk action, and the on-call schedule's team, schedule, layer and override
    assert len(client.get("/ui/audit?limit=100").json()["items"]) == 17


def test_the_assert_max_num_queries_bound(ui, rt, clock, webhook, channel, django_assert_max_num_queries):
    ids = populate(rt, clock, webhook, n=5)
    client = ui()
    for path in ui_paths(ids["dlq"][0]).values():
        with django_assert_max_num_queries(MAX_QUERIES):
            assert client.get(path).status_code == 200

"""Helpers of the console tests: the /ui routes found by walking the URLconf, and ``populate``,
which builds every state the screens show. (A module of its own, not conftest: tests import it.)"""
from django.urls import URLPattern, URLResolver, get_resolver

from notifications.adapters.base import DeliveryResult


def walk(patterns, prefix=""):
    for p in patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from walk(p.url_patterns, route)
        else:
            assert isinstance(p, URLPattern)
            yield route, p


def ui_routes() -> list[tuple[str, URLPattern]]:
    """Every route of the URLconf under ``ui/``."""
    return [(route, p) for route, p in walk(get_resolver().url_patterns) if route.startswith("ui/")]


def ui_paths(notification_id: str, policy_id: str = "uns-default") -> dict[str, str]:
    """``{route: concrete path with a query that makes GET succeed}`` for every /ui route (the
    bulk action's: the newest one, as ``populate`` creates)."""
    from notifications.models import BulkAction

    bulk = BulkAction.objects.order_by("-created_at").values_list("id", flat=True).first() or "none"
    out = {}
    for route, _ in ui_routes():
        path = "/" + route.replace("<str:notification_id>", notification_id).replace("<str:policy_id>", policy_id)
        path = path.replace("<str:bulk_id>", bulk).replace("<str:version>", "1").replace("<str:name>", SCHEDULE)
        if route.endswith("/diff"):
            path += "?from=1&to=1"
        if route.endswith("/preview"):
            path += "?action=replay&source=billing"
        out[route] = path
    return out


SCHEDULE = "ui-primary"


def oncall_schedule(clock) -> None:
    """The schedule /ui/oncall* show (once): a daily rotation of two people from a day before
    ``clock``'s now, in a team, with an override of a third person for two hours."""
    from django.contrib.auth.models import User

    from notifications.runtime import oncall
    from oncall.models import Schedule

    if Schedule.objects.filter(name=SCHEDULE).exists():
        return
    for name in ("ui-ann", "ui-ben", "ui-cy"):
        User.objects.get_or_create(username=name)
    oncall.create_team("ui-team", members=["ui-ann", "ui-ben"], actor="olga", clock=clock)
    oncall.create_schedule(SCHEDULE, time_zone="Europe/Berlin", team="ui-team", actor="olga", clock=clock)
    oncall.add_layer(SCHEDULE, {"name": "primary", "members": ["ui-ann", "ui-ben"], "rotation_unit": "days",
                                "rotation_count": 1, "start": "2020-01-01T09:00", "time_zone": "Europe/Berlin",
                                "restrictions": [], "end": None}, actor="olga", clock=clock)
    now = clock()
    oncall.add_override(SCHEDULE, "ui-cy", now + 3600, now + 3 * 3600, actor="olga", clock=clock)


def populate(rt, clock, webhook, n: int = 1) -> dict:
    """``n`` of each: dead-lettered (permanent failure), a dedup leader that failed and handed its
    obligation to a promoted follower (which then delivered), delivered awaiting ACK, ACKED.
    Returns the ids by kind."""
    ids = {"dlq": [], "leader": [], "successor": [], "inbox": [], "acked": []}
    webhook.default = DeliveryResult(False, retryable=False, error="HTTP 410 gone")
    for i in range(n):
        ids["dlq"].append(rt.accept("svc", {"source": "billing", "title": f"doomed {i}",
                                            "channels": ["ops-hook"]}).notification.id)
        ids["leader"].append(rt.accept("svc", {"source": "db", "title": f"dup {i}", "channels": ["ops-hook"],
                                               "dedup_key": f"k{i}"}).notification.id)
        ids["successor"].append(rt.accept("svc", {"source": "db", "title": f"dup {i}", "channels": ["ops-hook"],
                                                  "dedup_key": f"k{i}"}).notification.id)
    rt.dispatch(limit=10_000)
    clock.advance(1)
    webhook.default = DeliveryResult(True, message_id="ok")
    for i in range(n):
        ids["inbox"].append(rt.accept("svc", {"source": "web", "title": f"ack me {i}", "channels": ["console"],
                                              "require_ack": True}).notification.id)
        ids["acked"].append(rt.accept("svc", {"source": "web", "title": f"acked {i}", "channels": ["console"],
                                              "require_ack": True}).notification.id)
    rt.dispatch(limit=10_000)
    clock.advance(1)
    for nid in ids["acked"]:
        rt.acknowledge(nid, "bob")
    # A bulk action over every dead letter, created (its items frozen) and not run: /ui shows it.
    ids["bulk"] = rt.create_bulk("olga", {"action": "replay", "expected": 5000}).id
    oncall_schedule(clock)
    return ids

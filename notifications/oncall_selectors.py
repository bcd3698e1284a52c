"""The on-call read models: what ``/api/v1/oncall`` (and the MCP tool, and the console) show of
teams, schedules, shifts, contact methods and pages. Secrets never: a contact method's secret is
``has_secret``, URL credentials are masked (``redaction.mask_string``), a schedule's feed token
only in ``feed_url`` for a caller who may operate."""
from core.errors import InvalidRequest
from core.times import iso
from oncall import rotation, targets
from oncall.models import ContactMethod, Layer, Override, Schedule, Team, TeamMember

from .models import Event, Notification
from .redaction import mask_string
from .runtime import timeline
from .selectors import channel_delivers_to

NEXT_HORIZON = 366 * 86400.0


def shift_view(spec: rotation.ScheduleSpec, s: rotation.Shift | None) -> dict | None:
    if s is None:
        return None
    return {"user": s.user, "start": s.start, "start_iso": iso(s.start), "end": s.end, "end_iso": iso(s.end),
            "source": s.source, "layer": spec.layers[s.layer].name if s.layer is not None else None,
            "override": s.override}


def on_call_view(spec: rotation.ScheduleSpec, who: rotation.OnCall) -> dict:
    return {"user": who.user, "source": who.source,
            "layer": spec.layers[who.layer].name if who.layer is not None else None, "override": who.override}


def current_and_next(spec: rotation.ScheduleSpec, at: float) -> tuple[dict, dict | None, dict | None]:
    """``(on_call, current shift, next shift)`` at ``at`` (epoch seconds)."""
    who = rotation.on_call(spec, at)
    current = None
    if who.user is not None:
        found = [s for s in rotation.shifts(spec, at, at + 1) if s.start <= at]
        if found:  # extend to its real end and start
            day = 86400.0
            around = rotation.shifts(spec, at - 14 * day, at + 14 * day)
            current = next((s for s in around if s.start <= at < s.end), found[0])
    nxt = rotation.next_change(spec, at, NEXT_HORIZON)
    return on_call_view(spec, who), shift_view(spec, current), shift_view(spec, nxt)


def layer_view(layer: Layer) -> dict:
    return {"position": layer.position, **layer.as_spec_dict()}


def override_view(o: Override) -> dict:
    return {"id": o.id, "user": o.user.get_username(), "start": o.start, "start_iso": iso(o.start), "end": o.end,
            "end_iso": iso(o.end), "source": o.source, "created_by": o.created_by, "created_at": o.created_at}


def schedule_summary(row: Schedule, at: float) -> dict:
    spec = targets.schedule_spec(row, overrides_from=at - 14 * 86400.0)
    on_call, current, nxt = current_and_next(spec, at)
    return {"name": row.name, "description": row.description, "time_zone": row.time_zone,
            "team": row.team.name if row.team_id else None, "at": at, "at_iso": iso(at), "on_call": on_call,
            "current_shift": current, "next_shift": nxt, "updated_at": row.updated_at}


def schedule_view(row: Schedule, at: float, *, show_feed: bool) -> dict:
    """One schedule whole (``payloads.OncallSchedule``)."""
    overrides = Override.objects.filter(schedule=row, end__gt=at).select_related("user").order_by("start", "id")
    return {**schedule_summary(row, at),
            "layers": [layer_view(x) for x in Layer.objects.filter(schedule=row).order_by("position")],
            "overrides": [override_view(o) for o in overrides],
            "feed_url": f"/api/v1/oncall/schedules/{row.name}/feed.ics?token={row.feed_token}" if show_feed else None}


def schedules(at: float) -> list[dict]:
    return [schedule_summary(r, at) for r in Schedule.objects.select_related("team").order_by("name")]


def team_view(row: Team) -> dict:
    members = TeamMember.objects.filter(team=row).select_related("user").order_by("position")
    return {"name": row.name, "description": row.description, "members": [m.user.get_username() for m in members],
            "schedules": list(row.schedules.order_by("name").values_list("name", flat=True))}


def contact_method_view(m: ContactMethod) -> dict:
    """A contact method without its secret, URL credentials masked."""
    config = {k: (mask_string(v) if isinstance(v, str) else v) for k, v in (m.config or {}).items()}
    return {"id": m.id, "user": m.user.get_username(), "position": m.position, "label": m.label, "kind": m.kind,
            "config": config, "has_secret": bool(m.secret), "delivers_to": mask_string(channel_delivers_to(m)),
            "verification": m.verification, "verified_at": m.verified_at, "last_test_at": m.last_test_at,
            "last_test_error": mask_string(m.last_test_error)}


def contact_methods(user) -> list[dict]:
    return [contact_method_view(m) for m in ContactMethod.objects.filter(user=user).select_related("user")
            .order_by("position", "created_at", "id")]


def resolution_view(r: targets.Resolved) -> dict:
    return {**r.as_event(), "at_iso": iso(r.at)}


def who(target, at: float) -> dict:
    """Whom ``target`` pages at ``at`` (epoch seconds), as the dispatch would resolve it
    (``oncall.targets.resolve``): ``payloads.TargetResolution``. ``target``: ``schedule:<name>``,
    ``team:<name>``, ``user:<name>``, or a bare schedule name. ``GET /api/v1/oncall/who`` and the
    MCP tool ``who_is_on_call`` answer it. Raises ``InvalidRequest`` for anything else."""
    if isinstance(target, str) and target and ":" not in target:
        target = f"{targets.SCHEDULE}:{target}"
    if not targets.is_people(target):
        raise InvalidRequest("target must be schedule:<name>, team:<name> or user:<name>",
                             errors=[{"field": "target", "message": "not a people target"}])
    return resolution_view(targets.resolve(target, at))


PAGES_SCANNED = 5000  # the newest ONCALL_RESOLVED events "my pages" looks through


def pages_of(user_name: str, limit: int = 100) -> list[dict]:
    """The latest ``limit`` pages of ``user_name``: ``ONCALL_RESOLVED`` events whose people
    name them, newest first (the timeline is the record of who was paged), among the newest
    ``PAGES_SCANNED`` such events of everyone."""
    out = []
    events = Event.objects.filter(kind=timeline.ONCALL_RESOLVED).order_by("-at", "-id")[:PAGES_SCANNED]
    for ev in events.iterator(chunk_size=500):
        if any(p.get("user") == user_name for p in ev.payload.get("people") or ()):
            out.append(ev)
            if len(out) >= limit:
                break
    rows = {n.id: n for n in Notification.objects.filter(id__in={e.notification_id for e in out})}
    items = []
    for ev in out:
        n = rows.get(ev.notification_id)
        body = n.notification if n else {}
        items.append({"notification_id": ev.notification_id, "target": ev.payload.get("target"), "at": ev.at,
                      "at_iso": iso(ev.at), "title": body.get("title", ""), "severity": body.get("severity", ""),
                      "status": n.status if n else "UNKNOWN"})
    return items

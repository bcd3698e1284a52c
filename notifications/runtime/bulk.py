"""Bulk actions: "replay / resolve / ACK / snooze all N matching this filter", settled item by
item through the runtime's single-item transitions, bounded and resumable.

A bulk action is a durable row (``models.BulkAction``) with its items frozen at creation
(``models.BulkActionItem``, in the list's own order: at most the ``expected`` N the operator
confirmed, at most ``schemas.MAX_BULK_ITEMS``), so the set acted on is the set confirmed even
while the list keeps changing. ``run`` settles the next unsettled items, at most
``schemas.MAX_BULK_CHUNK`` per call, each in its own transaction:

1. the item row is locked (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL; SQLite's
   IMMEDIATE transactions serialise writers) and skipped if another run holds it or already
   settled it;
2. the verb runs (``dlq.replay``, ``dlq.resolve_failure``, ``responses.acknowledge``,
   ``snooze.snooze``) with its own conditional UPDATE, so a racing single action or another
   bulk action wins or loses cleanly;
   A governance approval is never acted on by a bulk action (approvals are decided one at a
   time, by an explicit Approve or Deny): its item is ``refused`` with code ``approval_skipped``
   and nothing else happens to it;
3. the item's result is written in the same transaction: ``settled`` when this bulk action's
   transition happened (its event carries ``bulk_action_id``), else ``refused`` with the
   runtime's problem ``code`` and ``detail`` (an idempotent repeat that changed nothing is
   ``refused`` ``already_settled``).

A crash between items leaves the settled ones recorded and the rest unsettled: the next ``run``
(any caller with the capability) continues from the cursor, the first unsettled ``ordinal``.
The transitions' events and audit rows name the runner as actor and carry ``bulk_action_id``
(REPLAY_REQUESTED / FAILURE_RESOLVED payloads; ACKED and SNOOZED ``metadata`` and their
``ack_audit_records.ack_metadata``).
"""
from django.db import connection, transaction
from django.db.models import Count

from core import codes
from core.actors import check_actor
from core.errors import Conflict, InvalidRequest, NotFound, UNSError
from core.keys import new_id
from core.schema import parse
from core.times import iso
from core.transitions import (BULK_ACTION_STATE, BULK_DONE, BULK_RUNNING, ITEM_REFUSED, ITEM_SETTLED,
                              transition)

from .. import people_audit
from ..models import BulkAction, BulkActionItem, Event, Notification
from . import lists, schemas, timeline

# uns_bulk_actions.state and uns_bulk_action_items.result (their tables:
# ``core.transitions.BULK_ACTION_STATE`` and ``BULK_ITEM_RESULT``).
RUNNING = BULK_RUNNING
DONE = BULK_DONE
SETTLED = ITEM_SETTLED
REFUSED = ITEM_REFUSED

# action -> (list it applies to, event kind its transition writes)
ACTIONS = {
    "replay": ("dlq", timeline.REPLAY_REQUESTED),
    "resolve": ("dlq", timeline.FAILURE_RESOLVED),
    "ack": ("inbox", timeline.ACKED),
    "snooze": ("inbox", timeline.SNOOZED),
}


def list_of(action: str) -> str:
    """The console list (``lists.LISTS``) ``action`` applies to."""
    return ACTIONS[action][0]


def matching(action: str, filters: dict):
    """``(queryset, order)`` of the items ``action`` would take with ``filters`` (parsed by
    ``lists.parse_list_filter`` for that list): the list's own queryset and order."""
    build, order = lists.LISTS[list_of(action)]
    return build(filters), order


def count(action: str, filters: dict) -> int:
    """How many items match now (the N a confirmation shows). 1 query."""
    qs, _ = matching(action, filters)
    return qs.count()


def create(runtime, actor: str, request: dict) -> BulkAction:
    """Create a bulk action from a ``schemas.BulkActionRequest`` body: freeze the first
    ``expected`` items matching the filter, in list order, as its items. One transaction.

    Raises ``InvalidRequest`` (a bad body or filter; ``seconds`` missing for snooze or given
    for another action; ``actor_required``) and ``Conflict`` ``bulk_nothing_matches`` when no
    item matches (nothing is stored then).
    """
    body = parse(schemas.BulkActionRequest, request)
    check_actor(actor)
    filters = lists.parse_list_filter(body.filter, list_of(body.action))
    if (body.action == "snooze") != (body.seconds is not None):
        message = "required for snooze" if body.action == "snooze" else "only for snooze"
        raise InvalidRequest(f"seconds is {message}", errors=[{"field": "seconds", "message": message}])
    qs, order = matching(body.action, filters)
    now = runtime.clock()
    with transaction.atomic():
        matched = qs.count()
        ids = list(qs.order_by(*[f"-{n}" if desc else n for n, desc in order]).values_list("id", flat=True)
                   [:body.expected])
        if not ids:
            raise Conflict("nothing matches this filter any more", code=codes.BULK_NOTHING_MATCHES, matched=0)
        bulk = BulkAction.objects.create(
            id=new_id(), action=body.action, list=list_of(body.action), filter=filters,
            params={"seconds": body.seconds} if body.seconds is not None else {},
            created_by=actor, created_at=now, expected=body.expected, matched=matched, total=len(ids),
            state=BULK_ACTION_STATE.initial(RUNNING), finished_at=None)
        BulkActionItem.objects.bulk_create([BulkActionItem(bulk=bulk, ordinal=i, notification_id=nid)
                                            for i, nid in enumerate(ids)], batch_size=500)
        people_audit.record(actor, "BULK_ACTION_CREATED", bulk.id, at=now, bulk_action_id=bulk.id,
                            title=f"{body.action} {len(ids)} of {matched} matching ({list_of(body.action)})",
                            detail={"action": body.action, "list": bulk.list, "filter": filters,
                                    "params": bulk.params, "expected": body.expected, "matched": matched,
                                    "total": len(ids)})
    return bulk


def get(bulk_id: str) -> BulkAction:
    """The bulk action ``bulk_id``; ``NotFound`` otherwise."""
    found = BulkAction.objects.filter(id=bulk_id).first() if isinstance(bulk_id, str) and len(bulk_id) <= 36 else None
    if found is None:
        raise NotFound(f"bulk action {bulk_id} does not exist", code=codes.BULK_ACTION_NOT_FOUND)
    return found


def _perform(runtime, bulk: BulkAction, notification_id: str, actor: str) -> None:
    marker = {"bulk_action_id": bulk.id}
    if bulk.action == "replay":
        runtime.replay(notification_id, actor, bulk_action_id=bulk.id)
    elif bulk.action == "resolve":
        runtime.resolve_failure(notification_id, actor, bulk_action_id=bulk.id)
    elif bulk.action == "ack":
        runtime.acknowledge(notification_id, actor, metadata=marker, bulk_action_id=bulk.id)
    else:
        runtime.snooze(notification_id, actor, bulk.params["seconds"], metadata=marker, bulk_action_id=bulk.id)


def _performed_here(bulk: BulkAction, notification_id: str) -> bool:
    """Whether this bulk action's transition of ``notification_id`` happened (its event)."""
    kind = ACTIONS[bulk.action][1]
    where = ({"payload__bulk_action_id": bulk.id} if bulk.action in ("replay", "resolve")
             else {"payload__metadata__bulk_action_id": bulk.id})
    return Event.objects.filter(notification_id=notification_id, kind=kind, **where).exists()


def _is_approval(notification_id: str) -> bool:
    """Whether ``notification_id`` is a governance approval (``schemas.approval_request``). 1 query."""
    body = Notification.objects.filter(id=notification_id).values_list("notification", flat=True).first()
    return schemas.approval_request(body) is not None


def _settle_one(runtime, bulk: BulkAction, item_id: int, actor: str) -> dict | None:
    """Settle one item in its own transaction; None when another run holds or settled it."""
    with transaction.atomic():
        locked = BulkActionItem.objects.filter(id=item_id, result__isnull=True)
        if connection.features.has_select_for_update_skip_locked:
            locked = locked.select_for_update(skip_locked=True)
        item = locked.first()
        if item is None:
            return None
        try:
            if _is_approval(item.notification_id):
                raise Conflict("a governance approval is decided one at a time (Approve or Deny), never by a "
                               "bulk action: skipped", code=codes.APPROVAL_SKIPPED)
            with transaction.atomic():
                _perform(runtime, bulk, item.notification_id, actor)
            if _performed_here(bulk, item.notification_id):
                result, code, detail = SETTLED, None, None
            else:
                result, code, detail = REFUSED, "already_settled", "already done (by you, outside this bulk action)"
        except UNSError as exc:
            result, code, detail = REFUSED, exc.code, exc.detail[:1000]
        now = runtime.clock()
        transition(BulkActionItem.objects.filter(id=item.id), result=(None, result),
                   set={"code": code, "detail": detail, "actor": actor, "at": now})
    return item_view(item.ordinal, item.notification_id, result, code, detail, actor, now)


def run(runtime, bulk_id: str, actor: str, limit: int | None = None) -> dict:
    """Settle up to ``limit`` (1..``schemas.MAX_BULK_CHUNK``, default the maximum) more items
    of bulk action ``bulk_id``, next ordinal first; returns ``progress(bulk)`` with
    ``"results"``: this call's per-item results. A DONE bulk action settles nothing more.

    Raises ``NotFound`` ``bulk_action_not_found``, ``InvalidRequest`` (``limit``,
    ``actor_required``). The verbs' own errors never escape: they are the items' refusals.
    """
    limit = parse(schemas.BulkRunRequest, {} if limit is None else {"limit": limit}).limit
    check_actor(actor)
    bulk = get(bulk_id)
    results = []
    if bulk.state != DONE:
        pending = list(BulkActionItem.objects.filter(bulk=bulk, result__isnull=True)
                       .order_by("ordinal").values_list("id", flat=True)[:limit])
        for item_id in pending:
            settled = _settle_one(runtime, bulk, item_id, actor)
            if settled is not None:
                results.append(settled)
        if not BulkActionItem.objects.filter(bulk=bulk, result__isnull=True).exists():
            transition(BulkAction.objects.filter(id=bulk.id), state=(RUNNING, DONE),
                       set={"finished_at": runtime.clock()})
        bulk.refresh_from_db()
    return {**progress(bulk), "results": results}


def item_view(ordinal, notification_id, result, code, detail, actor, at) -> dict:

    return {"ordinal": ordinal, "notification_id": notification_id, "result": result, "code": code,
            "detail": detail, "actor": actor, "at": at, "at_iso": iso(at)}


def progress(bulk: BulkAction) -> dict:
    """A bulk action's state and counts: ``{id, action, list, filter, params, created_by,
    created_at, expected, matched, total, settled, refused, remaining, cursor, state,
    finished_at}``; ``cursor`` is the ordinal of the next unsettled item (null when none). 2
    queries."""

    counts = dict(BulkActionItem.objects.filter(bulk=bulk).order_by().values_list("result").annotate(n=Count("id")))
    cursor = (BulkActionItem.objects.filter(bulk=bulk, result__isnull=True).order_by("ordinal")
              .values_list("ordinal", flat=True).first())
    return {
        "id": bulk.id, "action": bulk.action, "list": bulk.list, "filter": bulk.filter, "params": bulk.params,
        "created_by": bulk.created_by, "created_at": bulk.created_at, "created_at_iso": iso(bulk.created_at),
        "expected": bulk.expected, "matched": bulk.matched, "total": bulk.total,
        "settled": counts.get(SETTLED, 0), "refused": counts.get(REFUSED, 0), "remaining": counts.get(None, 0),
        "cursor": cursor, "state": bulk.state, "finished_at": bulk.finished_at, "finished_at_iso": iso(bulk.finished_at),
    }

"""Read models of the policy authority (API, admin, command). Reads only; times are rendered as
the raw Float epoch seconds beside an ISO-8601 UTC string (``<field>_iso``)."""
import difflib
import json

from core import codes
from core.capabilities import VIEW_CONSOLE
from core.errors import NotFound
from core.times import iso
from notifications.access import has_capability
from notifications.models import Notification

from .governance import service as governance_service
from .models import Policy, PolicyContent, PolicySnapshot
from .resolution import read_current
from .schemas import is_policy_id


def version_view(row: Policy, *, content: PolicyContent | None = None, with_content: bool = False) -> dict:
    if content is None and with_content:
        content = PolicyContent.objects.filter(policy_id=row.policy_id, version=row.version).first()
    body = {
        "policy_id": row.policy_id,
        "version": row.version,
        "status": row.status,
        "description": row.description,
        "cloned_from": row.cloned_from,
        "content_hash": content.content_hash if content is not None else None,
    }
    for name in ("created", "activated", "retired"):
        body[f"{name}_by"] = getattr(row, f"{name}_by")
        at = getattr(row, f"{name}_at")
        body[f"{name}_at"] = at
        body[f"{name}_at_iso"] = iso(at)
    if with_content:
        body["content"] = content.content if content is not None else None
    return body


def list_versions(*, status: str | None = None, policy_id: str | None = None, limit: int = 500) -> list[dict]:
    """Lifecycle rows (policy id, newest version first) with their content hashes."""
    qs = Policy.objects.all()
    if status:
        qs = qs.filter(status=status)
    if policy_id:
        qs = qs.filter(policy_id=policy_id)
    rows = list(qs.order_by("policy_id", "-version")[:limit])
    hashes = {
        (c["policy_id"], c["version"]): c["content_hash"]
        for c in PolicyContent.objects.filter(policy_id__in={r.policy_id for r in rows})
        .values("policy_id", "version", "content_hash")
    }
    out = []
    for row in rows:
        item = version_view(row)
        item["content_hash"] = hashes.get((row.policy_id, row.version))
        out.append(item)
    return out


def get_version(policy_id: str, version: int) -> tuple[Policy, PolicyContent | None]:

    row = None
    if is_policy_id(policy_id):
        row = Policy.objects.filter(policy_id=policy_id, version=version).first()
    if row is None:
        raise NotFound(f"no policy {policy_id!r} version {version}", code=codes.POLICY_NOT_FOUND)
    return row, PolicyContent.objects.filter(policy_id=policy_id, version=version).first()


def current_view() -> dict | None:
    """The current revision and its ACTIVE set (no content), or None before cold init."""
    current = read_current()
    if current is None:
        return None
    return {
        "revision": current.revision,
        "snapshot_hash": current.snapshot_hash,
        "created_at": current.created_at,
        "created_at_iso": iso(current.created_at),
        "created_by": current.created_by,
        "reason": current.reason,
        "active": [{"policy_id": p["policy_id"], "version": p["version"], "content_hash": p["content_hash"]}
                   for p in current.policies],
    }


def snapshot_view(snap: PolicySnapshot) -> dict:
    return {
        "revision": snap.revision,
        "snapshot_hash": snap.snapshot_hash,
        "reason": snap.reason,
        "created_by": snap.created_by,
        "created_at": snap.created_at,
        "created_at_iso": iso(snap.created_at),
        "active": [{"policy_id": p["policy_id"], "version": p["version"], "content_hash": p["content_hash"]}
                   for p in snap.snapshot.get("policies", [])],
    }


def revision_history(limit: int = 100) -> list[dict]:
    """Snapshots, newest revision first."""
    return [snapshot_view(s) for s in PolicySnapshot.objects.order_by("-revision")[:limit]]


def notifications_under_revision(revision: int, *, limit: int = 200) -> tuple[list[Notification], int]:
    """Notifications accepted under ``revision`` (``metadata.uns_resolution.revision``), at most
    ``limit`` of them in id order, and how many there are in all. A JSON key lookup, which
    Django renders for SQLite (JSON1) and PostgreSQL (jsonb) alike."""
    qs = Notification.objects.filter(notification__metadata__uns_resolution__revision=revision)
    return list(qs.order_by("id")[:limit]), qs.count()


def revision_changes(snapshot: dict, previous: dict | None) -> list[str]:
    """What a revision's ACTIVE set (``snapshot``, a ``PolicySnapshot.snapshot`` body) changed
    against the revision before it (``previous``; None for revision 1): ``["+billing v1",
    "uns-default v1 -> v2", "-billing v1"]`` by policy id, empty when the set is the same."""
    old = {p["policy_id"]: p for p in (previous or {}).get("policies", [])}
    new = {p["policy_id"]: p for p in (snapshot or {}).get("policies", [])}
    summary = []
    for pid in sorted(set(old) | set(new)):
        a, b = old.get(pid), new.get(pid)
        if a is None:
            summary.append(f"+{pid} v{b['version']}")
        elif b is None:
            summary.append(f"-{pid} v{a['version']}")
        elif a["version"] != b["version"] or a["content_hash"] != b["content_hash"]:
            summary.append(f"{pid} v{a['version']} -> v{b['version']}")
    return summary


def revision_diff(snap: PolicySnapshot) -> dict:
    """The unified diff of ``snap``'s ACTIVE set (pretty JSON, full content) against the revision
    before it (empty before revision 1): ``{"previous": int | None, "lines": [{"text", "kind":
    add | sub | hunk | same}]}``. 1 query."""
    prev = PolicySnapshot.objects.filter(revision=snap.revision - 1).first()
    before = pretty(prev.snapshot.get("policies", []) if prev else []).splitlines()
    after = pretty(snap.snapshot.get("policies", [])).splitlines()
    label = f"revision {prev.revision}" if prev else "(nothing)"
    lines = difflib.unified_diff(before, after, label, f"revision {snap.revision}", lineterm="", n=4)
    return {"previous": prev.revision if prev else None, "lines": [{"text": line, "kind": diff_kind(line)}
                                                                   for line in lines]}


def diff_kind(line: str) -> str:
    """How a unified-diff line renders: ``add``, ``sub``, ``hunk`` or ``same``."""
    if line.startswith(("+++", "---")):
        return "same"
    return {"+": "add", "-": "sub", "@": "hunk"}.get(line[:1], "same")


def pretty(content) -> str:
    return json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False)


def diff(a: tuple[Policy, PolicyContent | None], b: tuple[Policy, PolicyContent | None]) -> dict:
    """A side-by-side diff of two versions' content (pretty JSON, sorted keys): an HTML table
    (``difflib.HtmlDiff``, escaped) plus whether they differ."""
    (row_a, content_a), (row_b, content_b) = a, b
    lines_a = pretty(content_a.content if content_a else None).splitlines()
    lines_b = pretty(content_b.content if content_b else None).splitlines()
    table = difflib.HtmlDiff(tabsize=2, wrapcolumn=70).make_table(
        lines_a, lines_b, f"{row_a.policy_id} v{row_a.version} ({row_a.status})",
        f"{row_b.policy_id} v{row_b.version} ({row_b.status})", context=False)
    return {"table": table, "identical": lines_a == lines_b,
            "a": version_view(row_a, content=content_a), "b": version_view(row_b, content=content_b)}


def visible_decision(user, decision_id: str) -> governance_service.Decision:
    """``governance.service.get_decision`` for ``user``: a console reader sees every decision, a
    producer the ones it asked for; any other is the very same ``NotFound`` (no existence oracle)."""
    decision = governance_service.get_decision(decision_id)
    if not (has_capability(user, VIEW_CONSOLE) or decision.row.principal == user.get_username()):
        raise NotFound(f"governance decision {decision_id} does not exist", decision_id=decision_id)
    return decision

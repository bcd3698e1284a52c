"""``/ui/policies`` read models: versions with lifecycle status, the current revision, recent
revisions and lifecycle transitions, and diffs between versions' content.

Reads the policy authority's tables (``policies.models``); a fixed number of queries whatever
the number of versions.
"""
import difflib
import json

from core.errors import InvalidRequest, NotFound
from core.times import iso
from policies import lifecycle
from policies.selectors import version_view
from policies.models import ACTIVE, Policy, PolicyAuditRecord, PolicyContent, PolicyRevision, PolicySnapshot
from policies.schemas import is_policy_id
from policies.simulation import activation_preview as simulate

RECENT = 50


def _version(p: Policy, content: PolicyContent | None) -> dict:
    """``policies.selectors.version_view`` with its content, and the lifecycle verbs a policy
    admin may use next (what the server would do; the server still checks)."""
    return {**version_view(p, content=content), "content": content.content if content else None,
            "transitions": lifecycle.verbs(p.policy_id, p.status)}


def policies() -> dict:
    """Every policy id with its versions (newest first), the current revision, the latest
    revisions and lifecycle transitions. 5 queries."""
    contents = {(c.policy_id, c.version): c for c in PolicyContent.objects.all()}
    grouped: dict[str, list[dict]] = {}
    for p in Policy.objects.order_by("policy_id", "-version"):
        grouped.setdefault(p.policy_id, []).append(_version(p, contents.get((p.policy_id, p.version))))
    current = PolicyRevision.objects.filter(id=1).values("revision", "updated_by", "updated_at").first()
    revisions = [
        {"revision": s.revision, "reason": s.reason, "created_by": s.created_by, "created_at": s.created_at,
         "created_at_iso": iso(s.created_at), "snapshot_hash": s.snapshot_hash,
         "active": [f"{e.get('policy_id')} v{e.get('version')}" for e in (s.snapshot or {}).get("policies", [])]}
        for s in PolicySnapshot.objects.order_by("-revision")[:RECENT]
    ]
    transitions = [
        {"policy_id": a.policy_id, "version": a.version, "action": a.action, "from_status": a.from_status,
         "to_status": a.to_status, "actor": a.actor, "at": a.at, "at_iso": iso(a.at), "revision": a.revision}
        for a in PolicyAuditRecord.objects.order_by("-at", "-id")[:RECENT]
    ]
    if current:
        current["updated_at_iso"] = iso(current["updated_at"])
    return {
        "available": True,
        "current_revision": current,
        "policies": [{"policy_id": pid, "versions": versions,
                      "active_version": next((v["version"] for v in versions if v["status"] == ACTIVE), None)}
                     for pid, versions in grouped.items()],
        "revisions": revisions,
        "transitions": transitions,
    }


MAX_VERSION = 2**31 - 1  # versions are database integers; larger input is refused, not a 500


def _int(name: str, value) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = None
    if number is None or not 1 <= number <= MAX_VERSION:
        raise InvalidRequest(f"{name} must be a version number",
                             errors=[{"field": name, "message": f"must be an integer from 1 to {MAX_VERSION}"}])
    return number


def diff(policy_id: str, from_version, to_version) -> dict:
    """Unified diff of the pretty JSON content of two versions of ``policy_id``. 1 query.
    ``InvalidRequest`` for a missing or non-integer version, ``NotFound`` for an unknown one."""
    a, b = _int("from", from_version), _int("to", to_version)
    # A value that cannot be a policy id (a NUL byte, say: an error on PostgreSQL) is not found
    # without a query, as policies.selectors.get_version does.
    shaped = is_policy_id(policy_id)
    found = ({c.version: c for c in PolicyContent.objects.filter(policy_id=policy_id, version__in=[a, b])}
             if shaped else {})
    for v in (a, b):
        if v not in found:
            raise NotFound(f"policy {policy_id} has no version {v}", policy_id=policy_id, version=v)

    def lines(v):
        return json.dumps(found[v].content, indent=2, sort_keys=True).splitlines()

    return {
        "policy_id": policy_id,
        "from": a,
        "to": b,
        "from_hash": found[a].content_hash,
        "to_hash": found[b].content_hash,
        "identical": found[a].content_hash == found[b].content_hash,
        "lines": list(difflib.unified_diff(lines(a), lines(b), f"{policy_id} v{a}", f"{policy_id} v{b}", lineterm="")),
    }


def activation_preview(policy_id: str, version) -> dict:
    """``GET /ui/policies/{id}/versions/{v}/activation-preview``: before activating, the diff of
    this version's content against the policy's ACTIVE version (``diff``; null when there is
    none or it is this one) and ``policies.simulation.activation_preview`` of recent requests.
    ``InvalidRequest`` / ``NotFound`` as ``diff``. 6 queries or so."""
    v = _int("version", version)
    shaped = is_policy_id(policy_id)
    content = PolicyContent.objects.filter(policy_id=policy_id, version=v).first() if shaped else None
    if content is None:
        raise NotFound(f"policy {policy_id} has no version {v}", policy_id=policy_id, version=v)
    active = Policy.objects.filter(policy_id=policy_id, status=ACTIVE).values_list("version", flat=True).first()
    return {
        "policy_id": policy_id,
        "version": v,
        "active_version": active,
        "diff": diff(policy_id, active, v) if active is not None and active != v else None,
        "simulation": simulate(policy_id, v, content.content, content.content_hash),
    }

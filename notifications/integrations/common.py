"""What the compatible intakes share: clipping to the runtime's limits, ISO-8601 checks, the
metadata budget and settling a principal's open notifications by dedup key."""
from datetime import datetime

from core import codes
from core.errors import Conflict
from core.keys import canonical_json
from core.transitions import TIMED_OUT
from notifications import selectors
from notifications.apps import runtime
from notifications.runtime.intake import MAX_METADATA_BYTES

TITLE_MAX = 500
BODY_MAX = 20000
DEDUP_KEY_MAX = 255
SOURCE_MAX = 255


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def is_iso8601(value) -> bool:
    if not isinstance(value, str) or not value.strip():
        return False
    text = value.strip()
    # PagerDuty's own example offset is "+0000" (no colon); Python wants "+00:00".
    if len(text) > 5 and text[-5] in "+-" and text[-4:].isdigit():
        text = f"{text[:-2]}:{text[-2:]}"
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def fits(metadata: dict) -> bool:
    return len(canonical_json(metadata)) <= MAX_METADATA_BYTES


def settle_open(principal: str, dedup_key: str, *, dismiss: bool, resolved: bool, metadata: dict) -> dict:
    """Acknowledge (or dismiss) the principal's open notifications with this client dedup key;
    ``resolved``: the source resolved them (no page goes out for one not sent yet). Returns
    ``{"settled": [ids], "before_delivery": [{"id", "response", "resolved", "withheld"}],
    "unsettled": [{"id", "code"}], "escalations_stopped": [ids]}``:
    - a row not delivered yet gets the response remembered (``runtime.early``: a resolve withholds
      its page, an acknowledge settles it once delivered);
    - a row that timed out with its chain still paging has the chain stopped
      (``runtime.stop_escalation``, which closes the chain's escalations);
    - one settled meanwhile by someone else is reported in ``unsettled``, not failed."""
    settled, early, unsettled, stopped, done = [], [], [], [], set()
    for row in selectors.open_by_client_dedup_key(principal, dedup_key):
        if row.id in done:  # resolved with its leader
            continue
        if row.ack_status == TIMED_OUT:
            if runtime().stop_escalation(row.id, principal, dismiss=dismiss, metadata=metadata):
                stopped.append(row.id)
            continue
        try:
            runtime().acknowledge(row.id, principal, dismiss=dismiss, metadata=metadata)
        except Conflict as exc:
            if exc.code == codes.NOT_AWAITING_ACK:
                try:
                    remembered = runtime().respond_before_delivery(row.id, principal, dismiss=dismiss,
                                                                   resolved=resolved, metadata=metadata)
                except Conflict as again:  # delivered meanwhile: answer it now
                    try:
                        runtime().acknowledge(row.id, principal, dismiss=dismiss, metadata=metadata)
                    except Conflict:
                        unsettled.append({"id": row.id, "code": again.code})
                        continue
                    settled.append(row.id)
                    continue
                early.append({"id": row.id, "response": remembered["response"], "resolved": remembered["resolved"],
                              "withheld": remembered["withheld"]})
                for follower in remembered["followers_withheld"]:
                    done.add(follower)
                    early.append({"id": follower, "response": remembered["response"], "resolved": True,
                                  "withheld": True})
                continue
            unsettled.append({"id": row.id, "code": exc.code})
            continue
        settled.append(row.id)
    return {"settled": settled, "before_delivery": early, "unsettled": unsettled, "escalations_stopped": stopped}


# --- PagerDuty Events API v2 ---------------------------------------------------------------

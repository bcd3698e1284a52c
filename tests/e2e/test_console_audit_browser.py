"""The console's Audit view in Debian's Chromium against ``uns_serve`` on a database of this
module's own: operators and responders replay, resolve, run a bulk resolve, disable a channel and
approve a governance request over ``/api/v1`` (as their own tokens), and the view shows each
action with who did it and the object's title; the actor link filters the list to that actor;
axe-core finds no critical or serious violation on it.

Setup goes through HTTP and management commands (no ORM in this process, see
``test_console_browser``)."""
import pytest

from .axe import assert_accessible
from .stack import policy_content, wait_for
from .test_console_browser import (  # noqa: F401  (fixtures)
    CHANNEL, DOC_IMAGES, browser, console_stack, login, nav, page, receiver, shot, submit, wait_state,
)

pytestmark = [pytest.mark.e2e]

PEOPLE = {"olga": "operator"}
TOKENS = {"console-producer": "producer", "ops-oscar": "operator", "resp-rita": "responder"}
GOVERNANCE = {"approval": {"channels": ["console"], "timeout_seconds": 600},
              "rules": [{"name": "prod-deploys-need-a-human", "match": {"action": "deploy.*", "resource": "prod/*"},
                         "decision": "REQUIRE_APPROVAL"}]}


@pytest.fixture(scope="module")
def stack(tmp_path_factory, receiver):
    # The bootstrap policy with a governance block, before the first intake reads it.
    yield from console_stack(tmp_path_factory, "audit", receiver, secret="console-audit-signing-secret",
                             tokens=TOKENS, people=PEOPLE, policy={**policy_content(), "governance": GOVERNANCE})


def dead_letter(stack, receiver, source: str, title: str) -> str:
    receiver.answer(source, 503)
    nid = submit(stack, source=source, title=title)
    wait_state(stack, nid, "dead-lettered", lambda d: d["status"] == "FAILED" and d["dead_letter"])
    return nid


def ok(response, status=200) -> dict:
    assert response.status_code == status, response.text
    return response.json()


def test_the_audit_view_shows_who_replayed_resolved_bulk_changed_and_approved(page, stack, receiver):
    replayed = dead_letter(stack, receiver, "audit-replay", "Replica lag 300 s")
    resolved = dead_letter(stack, receiver, "audit-resolve", "Disk 97% full")
    for i in range(2):
        dead_letter(stack, receiver, "audit-bulk", f"Queue stuck {i}")
    with stack.client("console-producer") as producer:
        decision = ok(producer.post("/api/v1/governance/decisions", json={
            "action": "deploy.release", "resource": "prod/api", "risk": "medium", "agent_id": "deploy-bot"}), 201)
    [approval] = decision["approval_notification_ids"]
    wait_state(stack, approval, "awaiting approval", lambda d: d["ack_status"] == "PENDING")
    with stack.client("ops-oscar") as oscar:
        ok(oscar.post(f"/api/v1/dlq/{replayed}/replay"))
        ok(oscar.post(f"/api/v1/dlq/{resolved}/resolve"))
        bulk = ok(oscar.post("/api/v1/bulk-actions", json={"action": "resolve", "filter": {"source": "audit-bulk"},
                                                            "expected": 2}), 201)
        ok(oscar.post(f"/api/v1/bulk-actions/{bulk['id']}/run", json={}))
        ok(oscar.post("/api/v1/channels", json={"name": "audit-pager", "kind": "console"}), 201)
        ok(oscar.post("/api/v1/channels/audit-pager/disable", json={}))
    with stack.client("resp-rita") as rita:
        ok(rita.post(f"/api/v1/notifications/{approval}/ack", json={"approve": True}))

    with stack.client("ops-oscar") as oscar:  # everything is in the list before the browser looks
        wait_for(lambda: len(ok(oscar.get("/api/v1/audit")).get("items", [])) >= 9, "the audit rows")

    login(page, "olga")
    nav(page, "Audit")
    page.get_by_test_id("audit-row").first.wait_for()

    def row(action: str, title: str) -> str:
        """The text of the row of ``action`` on the object titled ``title`` (waits for it)."""
        found = page.locator(f"[data-testid='audit-row'][data-action='{action}']").filter(has_text=title).first
        found.wait_for()
        return found.inner_text()

    assert "ops-oscar" in row("REPLAY_REQUESTED", "Replica lag 300 s") and "replayed" in row(
        "REPLAY_REQUESTED", "Replica lag 300 s")
    assert "ops-oscar" in row("FAILURE_RESOLVED", "Disk 97% full")
    assert "ops-oscar" in row("BULK_ACTION_CREATED", "resolve 2 of 2 matching")
    for i in range(2):
        assert "(bulk action)" in row("FAILURE_RESOLVED", f"Queue stuck {i}")
    assert "ops-oscar" in row("CHANNEL_DISABLED", "audit-pager") and "disabled channel" in row(
        "CHANNEL_DISABLED", "audit-pager")
    approved = row("APPROVED", "deploy.release on prod/api")
    assert "resp-rita" in approved and "approved" in approved
    assert "cli:" in row("CHANNEL_CREATED", CHANNEL)  # the stack's own setup, by uns_channel
    # Delivery attempts are not people's actions: none of them is a row here.
    assert page.locator("[data-testid='audit-row']").count() == 9
    shot(page, "17-audit")
    page.screenshot(path=str(DOC_IMAGES / "console-audit.png"), timeout=60_000)  # docs/how-to/audit.md shows it
    assert_accessible(page, context="the audit with 9 actions")

    # The object links to its page; the actor link narrows the list to that actor.
    link = page.get_by_role("link", name="deploy.release on prod/api", exact=True)
    assert link.get_attribute("href") == f"#/notifications/{approval}"
    page.get_by_role("link", name="resp-rita").first.click()
    page.locator("[data-testid='audit-row']").first.wait_for()
    wait_for(lambda: page.locator("[data-testid='audit-row']").count() == 1, "the list of resp-rita's actions")
    assert page.get_by_label("Who").input_value() == "resp-rita"
    assert_accessible(page, context="the audit filtered to one actor")

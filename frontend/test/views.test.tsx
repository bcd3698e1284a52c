// @vitest-environment jsdom
// The views changed for issue 14: server-side bulk with a confirmation showing N (DLQ, inbox),
// Resolve and Activate asking first, only the actions the server would carry out, and the
// smaller wording fixes (audit snooze, dedup role, followers' channels).
import { render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import type { ReactNode } from "react";
import { describe, expect, it } from "vitest";
import { Api } from "../src/api";
import { NotificationActions } from "../src/components/NotificationActions";
import { ConsoleProvider } from "../src/context";
import { explainProblem } from "../src/problems";
import { Audit, note as auditNote, objectLink } from "../src/views/Audit";
import { Dlq } from "../src/views/Dlq";
import { Inbox } from "../src/views/Inbox";
import { ackAbsence, NotificationDetail, responseFact } from "../src/views/NotificationDetail";
import { statusRows } from "../src/views/Overview";
import { EscalationChain } from "../src/components/EscalationChain";
import { href } from "../src/router";
import { Policies } from "../src/views/Policies";
import type { AuditItem, Me } from "../src/types";
import { calls, me, respond } from "./fetchmock";

function mount(fetchMock: ReturnType<typeof respond>, caps: Partial<Me["capabilities"]>, view: ReactNode) {
  return render(<ConsoleProvider api={new Api(fetchMock)} me={me(caps)}>{view}</ConsoleProvider>);
}

const dlqItem = (i: number) => ({
  id: `n${i}`, title: `Connection refused ${i}`, source: "billing", severity: "error", status: "FAILED", ack_status: null,
  dead_letter: true, principal: "svc", error_message: "connection refused", channels_failed: ["hook"], channels_succeeded: [],
  cycle: 1, cycle_attempts: 5, attempts: 5, max_attempts: 5, accepted_at: 1, failed_at: 2, replay_blocked: false, replay_blocker: null,
});

function bulkServer(n: number, action: string) {
  const base = { id: "b1", action, list: action === "ack" || action === "snooze" ? "inbox" : "dlq", filter: {}, params: {},
    created_by: "op", created_at: 1, expected: n, matched: n, total: n, cursor: 0, finished_at: null };
  let done = 0;
  return {
    "POST /api/v1/bulk-actions": { ...base, settled: 0, refused: 0, remaining: n, state: "RUNNING" },
    "POST /api/v1/bulk-actions/b1/run": () => {
      const start = done;
      done = Math.min(n, done + 100);
      const results = Array.from({ length: done - start }, (_, k) => ({
        ordinal: start + k, notification_id: `n${start + k}`, result: start + k === 0 ? "refused" : "settled",
        code: start + k === 0 ? "replay_blocked" : null, detail: null, actor: "op", at: 2,
      }));
      return { ...base, settled: done - 1, refused: 1, remaining: n - done, state: done === n ? "DONE" : "RUNNING", results };
    },
  };
}

describe("DLQ bulk", () => {
  it("replays all 300 matching after a confirmation showing N, with a result per item", async () => {
    const fetchMock = respond({
      "GET /ui/dlq": { items: Array.from({ length: 5 }, (_, i) => dlqItem(i)), next: null, now: 3, total: 300, total_capped: false },
      "GET /ui/bulk-actions/preview": { action: "replay", list: "dlq", filter: { q: "refused", source: null }, matched: 300, max_items: 5000 },
      ...bulkServer(300, "replay"),
    });
    mount(fetchMock, { operate_dlq: true }, <Dlq />);
    await screen.findByText("Connection refused 0");
    await userEvent.type(screen.getByLabelText("Title or source contains"), "refused");
    await userEvent.click(screen.getByRole("button", { name: "Filter" }));
    // The bulk actions sit behind the selection: none before a row is selected.
    expect(screen.queryByTestId("selection-bar")).toBeNull();
    expect(screen.queryByRole("button", { name: /all matching/ })).toBeNull();
    await userEvent.click(screen.getByLabelText("Select all shown"));
    expect(screen.getByTestId("selection-bar").textContent).toContain("5 selected");
    await userEvent.click(screen.getByRole("button", { name: "Replay all matching…" }));
    const dialog = await screen.findByRole("alertdialog");
    expect(dialog.getAttribute("aria-label")).toBe("Replay all 300 matching?");
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")).toHaveLength(0); // nothing before the confirmation
    expect(calls(fetchMock, "GET /ui/bulk-actions/preview")[0].url).toContain("q=refused");
    await userEvent.click(within(dialog).getByRole("button", { name: "Replay 300" }));
    const results = await screen.findByTestId("bulk-results");
    expect(results.querySelectorAll("li")).toHaveLength(300);
    expect(results.querySelectorAll('li[data-ok="false"]')).toHaveLength(1);
    expect(results.textContent).toContain("Replay is blocked");
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")[0].body).toEqual({ action: "replay", filter: { q: "refused" }, expected: 300 });
    expect(calls(fetchMock, "POST /api/v1/bulk-actions/b1/run")).toHaveLength(3);
    expect(screen.getByRole("heading", { name: /299 of 300 settled, 1 refused/ })).toBeTruthy();
  });

  it("acts on a selection through the same server-side bulk, and Cancel sends nothing", async () => {
    const fetchMock = respond({ "GET /ui/dlq": { items: [dlqItem(0), dlqItem(1), dlqItem(2)], next: null, now: 3 }, ...bulkServer(2, "resolve") });
    mount(fetchMock, { operate_dlq: true }, <Dlq />);
    await userEvent.click(await screen.findByLabelText("Select Connection refused 0"));
    await userEvent.click(screen.getByLabelText("Select Connection refused 2"));
    await userEvent.click(screen.getByRole("button", { name: "Resolve selected (2)…" }));
    const dialog = screen.getByRole("alertdialog");
    expect(dialog.textContent).toContain("cannot be undone");
    await userEvent.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(screen.queryByRole("alertdialog")).toBeNull();
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")).toHaveLength(0);
    await userEvent.click(screen.getByRole("button", { name: "Resolve selected (2)…" }));
    await userEvent.click(within(screen.getByRole("alertdialog")).getByRole("button", { name: "Resolve 2" }));
    await screen.findByTestId("bulk-results");
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")[0].body).toEqual({ action: "resolve", filter: { ids: ["n0", "n2"] }, expected: 2 });
  });

  it("offers only the selection while the view narrows the list past the server's filter", async () => {
    const fetchMock = respond({ "GET /ui/dlq": { items: [dlqItem(0)], next: null, now: 3 } });
    mount(fetchMock, { operate_dlq: true }, <Dlq />);
    await screen.findByText("Connection refused 0");
    await userEvent.click(screen.getByLabelText("Select all shown"));
    expect(screen.getByRole("button", { name: "Replay all matching…" })).toBeTruthy();
    expect(screen.getByRole("button", { name: "Replay selected (1)…" }).className).toBe("btn-primary");
    expect(screen.getByRole("button", { name: "Resolve selected (1)…" }).className).toBe("btn-danger");
    await userEvent.click(screen.getByLabelText("Blocked only"));
    // Nothing blocked is shown: no selection, no bar, and never "all matching" (N would not be what is shown).
    expect(screen.queryByRole("button", { name: "Replay all matching…" })).toBeNull();
    expect(screen.queryByTestId("selection-bar")).toBeNull();
  });

  it("offers no bulk action to a reader without the capability", async () => {
    const fetchMock = respond({ "GET /ui/dlq": { items: [dlqItem(0)], next: null, now: 3 } });
    mount(fetchMock, {}, <Dlq />);
    await screen.findByText("Connection refused 0");
    expect(screen.queryByRole("group", { name: "Bulk actions" })).toBeNull();
  });
});

const inboxItem = (i: number, canEscalate = false) => ({
  id: `n${i}`, title: `Node health check ${i}`, source: "monitor", severity: "warning", intent: null, status: "DELIVERED",
  ack_status: "PENDING", delivered_at: 1, deadline: 1000, seconds_left: 900, overdue: false, principal: "svc", channels: ["console"],
  can_escalate: canEscalate, approval: null, dedup_key: null,
});

describe("Inbox", () => {
  it("filters and acknowledges all N matching through the server", async () => {
    const fetchMock = respond({
      "GET /ui/inbox": { items: [inboxItem(0), inboxItem(1)], next: null, now: 100 },
      "GET /ui/bulk-actions/preview": { action: "ack", list: "inbox", filter: { q: "health", source: null }, matched: 117, max_items: 5000 },
      ...bulkServer(117, "ack"),
    });
    mount(fetchMock, { respond: true }, <Inbox />);
    await screen.findByText("Node health check 0");
    await userEvent.type(screen.getByLabelText("Title or source contains"), "health");
    await userEvent.click(screen.getByRole("button", { name: "Filter" }));
    await waitFor(() => expect(calls(fetchMock, "GET /ui/inbox").some((c) => c.url.includes("q=health"))).toBe(true));
    expect(screen.queryByRole("button", { name: "Acknowledge all matching…" })).toBeNull();
    await userEvent.click(screen.getByLabelText("Select Node health check 0"));
    expect(screen.queryByRole("button", { name: "Acknowledge all matching…" })).toBeNull(); // not every row yet
    await userEvent.click(screen.getByLabelText("Select Node health check 1"));
    await userEvent.click(screen.getByRole("button", { name: "Acknowledge all matching…" }));
    await userEvent.click(within(screen.getByRole("alertdialog", { name: "Acknowledge all 117 matching?" }))
      .getByRole("button", { name: "Acknowledge 117" }));
    expect((await screen.findByTestId("bulk-results")).querySelectorAll("li")).toHaveLength(117);
  });

  it("offers no checkbox on an approval (decided one at a time) and clears a selection", async () => {
    const approval = { ...inboxItem(1), title: "Approval needed: deploy.release",
      approval: { decision_id: "d1", action: "deploy.release", resource: "prod", risk: "high", agent_id: "ci", reason: null,
        context: null } };
    const fetchMock = respond({ "GET /ui/inbox": { items: [inboxItem(0), approval], next: null, now: 100 } });
    mount(fetchMock, { respond: true }, <Inbox />);
    await screen.findByText("Node health check 0");
    expect(screen.queryByLabelText("Select Approval needed: deploy.release")).toBeNull();
    await userEvent.click(screen.getByLabelText("Select all shown"));
    expect(screen.getByTestId("selection-bar").textContent).toContain("1 selected");
    await userEvent.click(screen.getByRole("button", { name: "Clear selection" }));
    expect(screen.queryByTestId("selection-bar")).toBeNull();
  });

  it("sends the chosen snooze length with a bulk snooze", async () => {
    const fetchMock = respond({
      "GET /ui/inbox": { items: [inboxItem(0)], next: null, now: 100 },
      "GET /ui/bulk-actions/preview": { action: "snooze", list: "inbox", filter: {}, matched: 1, max_items: 5000 },
      ...bulkServer(1, "snooze"),
    });
    mount(fetchMock, { respond: true }, <Inbox />);
    await screen.findByText("Node health check 0");
    await userEvent.click(screen.getByLabelText("Select all shown"));
    const bulk = screen.getByRole("group", { name: "Bulk actions" });
    await userEvent.selectOptions(within(bulk).getByLabelText("Snooze for"), "3600");
    await userEvent.click(within(bulk).getByRole("button", { name: "Snooze all matching…" }));
    await userEvent.click(within(screen.getByRole("alertdialog")).getByRole("button", { name: "Snooze 1" }));
    await screen.findByTestId("bulk-results");
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")[0].body).toEqual({ action: "snooze", filter: {}, expected: 1, seconds: 3600 });
  });
});

describe("NotificationActions safety", () => {
  const dead = { id: "n2", title: "Webhook down", status: "FAILED", ack_status: null, dead_letter: true };

  it("asks before Resolve and resolves only after the confirmation", async () => {
    const fetchMock = respond({ "POST /api/v1/dlq/n2/resolve": { id: "n2", status: "FAILED", ack_status: null } });
    let done = 0;
    mount(fetchMock, { operate_dlq: true }, <NotificationActions target={dead} onDone={() => { done += 1; }} />);
    await userEvent.click(screen.getByRole("button", { name: "Resolve Webhook down" }));
    expect(screen.getByRole("alertdialog", { name: "Resolve “Webhook down”?" }).textContent).toContain("cannot be undone");
    expect(fetchMock).not.toHaveBeenCalled();
    await userEvent.keyboard("{Escape}");
    expect(screen.queryByRole("alertdialog")).toBeNull();
    await userEvent.click(screen.getByRole("button", { name: "Resolve Webhook down" }));
    await userEvent.click(within(screen.getByRole("alertdialog")).getByRole("button", { name: "Resolve" }));
    await waitFor(() => expect(done).toBe(1));
    expect(calls(fetchMock, "POST /api/v1/dlq/n2/resolve")).toHaveLength(1);
  });

  it("offers Escalate only when the policy names a target, with the server's reason limit", async () => {
    const fetchMock = respond({});
    const { unmount } = mount(fetchMock, { respond: true }, <NotificationActions target={{ ...inboxItem(0, false), dead_letter: false }} onDone={() => undefined} />);
    expect(screen.queryByRole("button", { name: /Escalate/ })).toBeNull();
    unmount();
    mount(fetchMock, { respond: true }, <NotificationActions target={{ ...inboxItem(1, true), dead_letter: false }} onDone={() => undefined} />);
    await userEvent.click(screen.getByRole("button", { name: "Escalate Node health check 1" }));
    expect(screen.getByLabelText("Reason").getAttribute("maxlength")).toBe("1000");
  });
});

const version = (v: number, status: string, transitions: string[]) => ({
  policy_id: "uns-default", version: v, status, description: "", cloned_from: null, created_by: "pat", created_at: 1,
  activated_by: null, activated_at: null, retired_by: null, retired_at: null, content_hash: `h${v}`, content: {}, transitions,
});

describe("Policies", () => {
  const model = {
    available: true, current_revision: { revision: 3, updated_by: "pat", updated_at: 1 }, revisions: [], transitions: [],
    policies: [{ policy_id: "uns-default", active_version: 1, versions: [version(2, "DRAFT", ["activate", "retire", "clone"]), version(1, "ACTIVE", ["clone"])] }],
  };
  const preview = {
    policy_id: "uns-default", version: 2, active_version: 1,
    diff: { policy_id: "uns-default", from: 1, to: 2, identical: false, lines: ["--- uns-default v1", "+++ uns-default v2", "-  \"max_attempts\": 5", "+  \"max_attempts\": 2"] },
    simulation: { revision: 3, changed: 1, samples: [
      { request: { source: "db", title: "down", severity: "critical" }, changed: true,
        before: { policy_id: "uns-default", policy_version: 1, rule: null }, after: { policy_id: "uns-default", policy_version: 2, rule: "db" } },
      { request: { source: "web", title: "slow", severity: "info" }, changed: false,
        before: { policy_id: "uns-default", policy_version: 1, rule: null }, after: { policy_id: "uns-default", policy_version: 2, rule: null } },
    ] },
  };

  it("offers only the server's verbs: no Retire on the default policy's active version", async () => {
    mount(respond({ "GET /ui/policies": model }), { manage_policies: true }, <Policies />);
    await screen.findByRole("button", { name: "Activate uns-default v2" });
    expect(screen.queryByRole("button", { name: "Retire uns-default v1" })).toBeNull();
    expect(screen.getByRole("button", { name: "Retire uns-default v2" })).toBeTruthy();
  });

  it("shows the diff and the simulation before Activate, and activates only on confirmation", async () => {
    const fetchMock = respond({
      "GET /ui/policies": model,
      "GET /ui/policies/uns-default/versions/2/activation-preview": preview,
      "POST /api/v1/policies/uns-default/versions/2/activate": { ok: true },
    });
    mount(fetchMock, { manage_policies: true }, <Policies />);
    await userEvent.click(await screen.findByRole("button", { name: "Activate uns-default v2" }));
    const dialog = await screen.findByRole("alertdialog", { name: "Activate uns-default v2?" });
    await within(dialog).findByTestId("simulation-summary");
    expect(within(dialog).getByTestId("simulation-summary").textContent).toBe("1 of 2 recent requests would be routed differently.");
    expect(within(dialog).getByLabelText("Diff of v1 and v2").textContent).toContain('+  "max_attempts": 2');
    expect(dialog.textContent).toContain("replacing v1");
    expect(calls(fetchMock, "POST /api/v1/policies/uns-default/versions/2/activate")).toHaveLength(0);
    await userEvent.click(within(dialog).getByRole("button", { name: "Activate v2" }));
    await screen.findByText("Activate: uns-default v2 done.");
    expect(calls(fetchMock, "POST /api/v1/policies/uns-default/versions/2/activate")).toHaveLength(1);
  });

  it("names the policy version, not a notification, in a generic policy refusal", () => {
    expect(explainProblem({ status: 409, code: "policy_locked", policy_id: "p" }).headline)
      .toBe("This could not be done because of the policy version's current state.");
    expect(explainProblem({ status: 409, code: "default_policy_required", policy_id: "uns-default" }).headline)
      .toMatch(/default policy cannot be retired/);
  });
});

describe("smaller wording", () => {
  it("prints a login refusal once when the server's detail repeats the headline", () => {
    const e = explainProblem({ status: 401, code: "invalid_credentials", detail: "the username or password is not right" });
    expect(e.headline).toBe("The username or password is not right.");
    expect(e.detail).toBeNull();
  });

  it("shows who did what to what in the audit, with links to the object and its history", async () => {
    const base = { at: 10, at_iso: "", bulk_action_id: null, detail: {} };
    const replay: AuditItem = { ...base, id: "a1", actor: "olga", action: "REPLAY_REQUESTED", object_type: "notification",
      object_id: "n1", object_title: "node down", detail: { cycle: 2 } };
    const snooze: AuditItem = { ...base, id: "a2", actor: "rita", action: "SNOOZED", object_type: "notification",
      object_id: "n2", object_title: "disk slow", bulk_action_id: "bulk1234abcd", detail: { seconds: 900 } };
    const approval: AuditItem = { ...base, id: "a3", actor: "ana", action: "APPROVED", object_type: "decision",
      object_id: "d1", object_title: "deploy.release on prod/api", detail: { notification_id: "n3", risk: "high" } };
    expect(auditNote(snooze)).toBe("for 15m 0s");
    expect(objectLink(approval)).toBe("#/notifications/n3");
    expect(objectLink(replay)).toBe("#/notifications/n1");
    const fetchMock = respond({ "GET /ui/audit": { items: [replay, snooze, approval], next: null } });
    mount(fetchMock, {}, <Audit filters={{ actor: "olga", bogus: "x" }} />);
    expect(await screen.findByText("node down")).toBeTruthy();
    expect(screen.getByText("olga").closest("a")?.getAttribute("href")).toBe("#/audit?actor=olga");
    expect(screen.getByText("deploy.release on prod/api").closest("a")?.getAttribute("href")).toBe("#/notifications/n3");
    expect(screen.getByText("(bulk action)").getAttribute("href")).toBe("#/audit?bulk_action_id=bulk1234abcd");
    const url = fetchMock.mock.calls.map((c) => String(c[0])).find((u) => u.includes("/ui/audit")) ?? "";
    expect(url).toContain("actor=olga");
    expect(url).not.toContain("bogus");
  });

  it("drops an audit filter from the address that does not parse, says so, and never sends it", async () => {
    const fetchMock = respond({ "GET /ui/audit": { items: [], next: null } });
    mount(fetchMock, {}, <Audit filters={{ since: "garbage", action: "EXPLODED", actor: "olga" }} />);
    expect((await screen.findByTestId("audit-dropped")).textContent).toBe(
      "Not applied, from the address: action “EXPLODED” (not an action), since “garbage” (not a time).");
    await waitFor(() => expect(fetchMock.mock.calls.length).toBeGreaterThan(0));
    const url = fetchMock.mock.calls.map((c) => String(c[0])).find((u) => u.includes("/ui/audit")) ?? "";
    expect(url).toContain("actor=olga");
    expect(url).not.toMatch(/since|EXPLODED/);
    expect(screen.getByRole("link", { name: "Clear" }).getAttribute("href")).toBe("#/audit");
  });

  it("splits the overview's FAILED as the DLQ counts it: dead letters apart from resolved ones", () => {
    const rows = statusRows({ FAILED: 6, DELIVERED: 9 }, { dead_lettered: 2, not_dead_lettered: 4 });
    expect(rows.map(([label, n]) => `${label} ${n}`)).toEqual(["DELIVERED 9", "FAILED, dead-lettered 2", "FAILED, resolved or best effort 4"]);
    expect(rows[1][2]).toBe(href({ name: "dlq" }));
    expect(rows[2][2]).toContain("dead_letter=false");
  });

  it("shows a timeout as timed out, not as a response by the timeout worker", async () => {
    const detail = {
      id: "t1", title: "Replica lag", source: "db", severity: "critical", status: "DELIVERED", ack_status: "TIMED_OUT",
      dead_letter: false, principal: "svc", request: {}, resolution: { why: "no rule matched" }, max_attempts: 5,
      outcome: { channels_attempted: ["hook"], channels_succeeded: ["hook"], channels_failed: [], error_message: null },
      attempts: 1, cycle: 1, cycle_attempts: 1, leased: false, actor: "uns-timeout-worker",
      response_metadata: { escalation_required: true }, channels: [], dedup: null,
      timeline: [{ id: "e1", kind: "TIMED_OUT", at: 20, at_iso: "", payload: { actor: "uns-timeout-worker", metadata: { escalation_required: true } } }],
      replay_blocker: null, escalation: null, escalated_from: null, failure_hint: null, next_attempt: 0, delivered_at: 10,
      deadline: 20, responded_at: 20,
    };
    mount(respond({ "GET /ui/notifications/t1": detail }), {}, <NotificationDetail id="t1" />);
    const fact = await screen.findByTestId("response-fact");
    expect(fact.previousSibling?.textContent).toBe("Timed out");
    expect(fact.textContent).toMatch(/^nobody responded before the deadline, /);
    expect(document.body.textContent).not.toMatch(/Responded.{0,3}uns-timeout-worker|by uns-timeout-worker/);
  });

  it("says when a chain that has not started would start", () => {
    const chain = { levels: [{ level: 1, channels: ["lead"], wait_seconds: 60, repeat: 1 }], state: null, active_level: 0,
      steps_fired: 0, next_due: null, next: null, fired: [], failed: [], stopped: null, exhausted_at: null, can_escalate: true };
    const text = (c: object) => {
      const { unmount } = render(<EscalationChain chain={{ ...chain, ...c }} />);
      const out = screen.getByTestId("escalation-state").textContent;
      unmount();
      return out;
    };
    expect(text({ starts_on_timeout: true })).toContain("the first level fires when the acknowledgement deadline passes");
    expect(text({ starts_on_timeout: false })).toContain("an escalation starts no chain of its own");
    expect(text({ starts_on_timeout: true, can_escalate: false })).toBe("NOT STARTED Not started.");
  });

  it("says an escalation its chain closed was closed with the chain", () => {
    const closed = { escalation_closed: "ESCALATION_STOPPED", responded_on: "n2", escalated_from: "n0" };
    expect(responseFact({ ack_status: "ACKED", actor: "bob", response_metadata: closed }))
      .toEqual({ term: "Closed", text: "with the escalation chain, acknowledged by bob" });
    expect(responseFact({ ack_status: "TIMED_OUT", actor: "uns-timeout-worker",
      response_metadata: { escalation_closed: "ESCALATION_EXHAUSTED" } }))
      .toEqual({ term: "Timed out", text: "the escalation chain ran out" });
    expect(responseFact({ ack_status: "ACKED", actor: "bob", response_metadata: {} })).toEqual({ term: "Responded", text: "bob" });
  });

  it("shows a follower's channels as covered by the leader and says its role in words", async () => {
    const summary = { title: "dup", source: "db", severity: "info", status: "DEDUPLICATED", ack_status: null, dead_letter: false };
    const detail = {
      id: "f1", ...summary, principal: "svc", request: {}, resolution: { why: "no rule matched" }, max_attempts: 5,
      outcome: { channels_attempted: [], channels_succeeded: [], channels_failed: [], error_message: null },
      attempts: 0, cycle: 1, cycle_attempts: 0, leased: false, actor: null, response_metadata: null,
      channels: [{ channel: "hook", attempts: [], last: null, succeeded: false }],
      dedup: { dedup_key: "k", generation: 1, role: "deduplicated", leader: { id: "l1", ...summary, role: "leader", owner_id: null, generation: 1, successor_id: null },
        followers: [], successor: null },
      timeline: [], replay_blocker: null, escalation: null, escalated_from: null, failure_hint: null, next_attempt: 0, delivered_at: null, deadline: null, responded_at: null,
    };
    mount(respond({ "GET /ui/notifications/f1": detail }), {}, <NotificationDetail id="f1" />);
    expect(await screen.findByText("covered by the leader")).toBeTruthy();
    expect(screen.getByTestId("response-fact").textContent).toBe("—");
    expect(screen.getByTestId("dedup-role").textContent).toBe(
      "This notification was deduplicated: the group's leader delivered for it (generation 1).");
  });
});

describe("DeliveryState", () => {
  it("draws a live dead letter red, and a resolved or withheld page neutral with its own word", async () => {
    const { DeliveryState } = await import("../src/components/Badge");
    const { container, rerender } = render(<DeliveryState status="FAILED" deadLetter resolved={false} />);
    expect(container.textContent).toBe("FAILED DLQ");
    expect(container.querySelector(".badge-failed")).not.toBeNull();
    rerender(<DeliveryState status="FAILED" deadLetter={false} resolved withheld={false} />);
    expect(container.textContent).toBe("RESOLVED");
    rerender(<DeliveryState status="FAILED" deadLetter={false} resolved={false} withheld />);
    expect(container.textContent).toBe("WITHHELD");
    expect(container.querySelector(".badge-failed")).toBeNull();
    expect(container.querySelector(".badge-resolved")?.getAttribute("title")).toMatch(/^Not sent: /);
    rerender(<DeliveryState status="FAILED" deadLetter={false} resolved={false} withheld={false} />);
    expect(container.textContent).toBe("FAILED");  // a best-effort failure stays a failure
  });
});

describe("NotificationDetail facts", () => {
  const base = {
    id: "d1", title: "Card processor unreachable", source: "payments", severity: "error", status: "PENDING", ack_status: null,
    dead_letter: false, principal: "svc", resolution: { why: "no rule matched" }, max_attempts: 5,
    outcome: { channels_attempted: [], channels_succeeded: [], channels_failed: [], error_message: null },
    attempts: 0, cycle: 1, cycle_attempts: 0, leased: false, actor: null, response_metadata: null, channels: [], dedup: null,
    timeline: [] as object[], replay_blocker: null, escalation: null, escalated_from: null, failure_hint: null,
    next_attempt: 0, delivered_at: null, deadline: null, responded_at: null,
  };

  it("says an acknowledgement is required and not yet awaited instead of 'not required'", () => {
    expect(ackAbsence({ status: "FAILED", request: { require_ack: true } })).toBe("required, never delivered");
    expect(ackAbsence({ status: "PENDING", request: { require_ack: true } })).toBe("required once delivered");
    expect(ackAbsence({ status: "DELIVERED", request: {} })).toBe("not required");
  });

  it("shows the body with its links, and a silence holding a pending page", async () => {
    const until = Math.floor(Date.now() / 1000) + 3600;
    const detail = { ...base, request: { require_ack: true, body: "Checkout fails.\n\nRunbook: https://wiki.example/runbooks/x." },
      timeline: [{ id: "e1", kind: "SILENCED", at: 1, at_iso: "", payload: { scope: "delivery", silence_id: "s-123456789", comment: "deploy", until } }] };
    mount(respond({ "GET /ui/notifications/d1": detail }), { operate_dlq: true }, <NotificationDetail id="d1" />);
    const body = await screen.findByTestId("notification-body");
    expect(within(body).getByRole("link", { name: "https://wiki.example/runbooks/x" }).getAttribute("href"))
      .toBe("https://wiki.example/runbooks/x");
    expect(body.textContent).toContain("Checkout fails.");
    expect(screen.getByTestId("silenced").textContent).toMatch(/^SILENCED until .+ \(silence “deploy”\)$/);
    expect(screen.getByTestId("ack-none").textContent).toBe("required once delivered");
    expect(screen.getByRole("button", { name: "Silence similar…" })).toBeTruthy();
  });

  it("offers no 'Silence similar' on an approval, and no silenced badge once the silence has ended", async () => {
    const detail = { ...base, request: { metadata: { uns_governance: { decision_id: "g1", action: "deploy.release" } } },
      timeline: [{ id: "e1", kind: "SILENCED", at: 1, at_iso: "", payload: { silence_id: "s1", until: 10 } }] };
    mount(respond({ "GET /ui/notifications/d1": detail, "GET /ui/approvals/g1": { state: "PENDING" } }), { operate_dlq: true },
      <NotificationDetail id="d1" />);
    await screen.findByTestId("ack-none");
    expect(screen.queryByRole("button", { name: "Silence similar…" })).toBeNull();
    expect(screen.queryByTestId("silenced")).toBeNull();
  });
});

// @vitest-environment jsdom
import { act, render, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
import { ConsoleProvider } from "../src/context";
import type { DlqItem, InboxItem, Me } from "../src/types";
import { Dlq } from "../src/views/Dlq";
import { Inbox } from "../src/views/Inbox";

class FakeSocket {
  static all: FakeSocket[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: MessageEvent) => void) | null = null;
  onclose: ((e: CloseEvent) => void) | null = null;
  constructor(public url: string) {
    FakeSocket.all.push(this);
    setTimeout(() => this.onopen?.(), 0);
  }
  send() {}
  close() {}
  emit(kind: string, notification_id: string) {
    this.onmessage?.({ data: JSON.stringify({ type: "event", event: { id: `e-${Math.random()}`, kind, at: 1, payload: {}, notification_id } }) } as MessageEvent);
  }
}

const me = (caps: Partial<Me["capabilities"]>): Me => ({
  username: "u", groups: [], is_superuser: false, token_expiry: null, token_expiry_iso: null,
  capabilities: { view_console: true, respond: true, operate_dlq: true, send: false, manage_policies: false, ...caps },
});

function inboxItem(i: number): InboxItem {
  return { id: `n${i}`, title: `Item ${i}`, source: "web", severity: i % 2 ? "critical" : "warning", intent: null,
    status: "DELIVERED", ack_status: "PENDING", delivered_at: 1.7e9, deadline: Date.now() / 1000 + 600 + i,
    seconds_left: 600, overdue: false, principal: "svc", channels: ["console"], delivered_at_iso: null,
    deadline_iso: "", dedup_key: null, can_escalate: false, approval: null };
}

function dlqItem(i: number): DlqItem {
  return { id: `d${i}`, title: `Dead ${i}`, source: "billing", severity: "critical", status: "FAILED", ack_status: null,
    dead_letter: true, principal: "svc", error_message: "ops-hook: connection refused", channels_failed: ["ops-hook"],
    channels_succeeded: [], cycle: 1, cycle_attempts: 5, attempts: 5, max_attempts: 5, accepted_at: 1.7e9,
    failed_at: Date.now() / 1000 - 90, replay_blocked: false, replay_blocker: null, age_seconds: 90,
    failure_hint: "Nothing listens at that address.", accepted_at_iso: "", failed_at_iso: null, dedup_key: null };
}

/** A fake /ui server over ``rows`` (paged by ``limit``/``cursor`` = offset) recording every call. */
function server(path: string, rows: { id: string }[], extra: Record<string, (init?: RequestInit) => unknown> = {}) {
  const calls: string[] = [];
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(String(input), "http://x");
    calls.push(`${init?.method ?? "GET"} ${url.pathname}${url.search}`);
    const handler = extra[`${init?.method ?? "GET"} ${url.pathname}`];
    if (handler) {
      const body = handler(init);
      if (body instanceof Response) return body;
      return new Response(JSON.stringify(body ?? {}), { status: 200 });
    }
    if (url.pathname.endsWith("/groups")) {
      return new Response(JSON.stringify({ by: url.searchParams.get("by"), groups: [{ value: "billing", count: rows.length }] }));
    }
    if (url.pathname !== path) return new Response(JSON.stringify({ status: 404 }), { status: 404 });
    const limit = Number(url.searchParams.get("limit") ?? 100);
    const start = Number(url.searchParams.get("cursor") ?? 0);
    const items = rows.slice(start, start + limit);
    const next = start + limit < rows.length ? String(start + limit) : null;
    return new Response(JSON.stringify({ items, next, total: rows.length, total_capped: false, now: Date.now() / 1000 }));
  });
  const api = new Api(fetchMock);
  (api as unknown as { session: boolean }).session = true;
  return { api, calls, fetchMock };
}

function mount(ui: React.ReactNode, api: Api, caps: Partial<Me["capabilities"]> = {}) {
  return render(<ConsoleProvider api={api} me={me(caps)}>{ui}</ConsoleProvider>);
}

beforeEach(() => {
  FakeSocket.all = [];
  vi.stubGlobal("WebSocket", FakeSocket);
});
afterEach(() => {
  vi.unstubAllGlobals();
  document.title = "";
});

describe("Inbox", () => {
  it("pages to the last item with the total, and counts in the tab title", async () => {
    const rows = Array.from({ length: 130 }, (_, i) => inboxItem(i));
    const { api } = server("/ui/inbox", rows);
    mount(<Inbox />, api);
    expect((await screen.findByTestId("inbox-count")).textContent).toBe("Showing 100 of 130 waiting.");
    await waitFor(() => expect(document.title).toBe("(130) Inbox · UNS"));  // set by an effect after the count renders
    await userEvent.click(screen.getByRole("button", { name: "Load more (30 more)" }));
    await screen.findByText("Item 129");
    expect(screen.queryByRole("button", { name: /Load more/ })).toBeNull();
    expect(screen.getByTestId("inbox-count").textContent).toBe("Showing 130 of 130 waiting.");
  });

  it("a live event re-reads every loaded row, not just the first page", async () => {
    const rows = Array.from({ length: 150 }, (_, i) => inboxItem(i));
    const { api, calls } = server("/ui/inbox", rows);
    mount(<Inbox />, api);
    await userEvent.click(await screen.findByRole("button", { name: "Load more (50 more)" }));
    await screen.findByText("Item 149");
    calls.length = 0;
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    act(() => FakeSocket.all[0].emit("ACCEPTED", "new"));
    // Both loaded pages, from the start, the second from the first's fresh cursor.
    await waitFor(() => expect(calls).toContain("GET /ui/inbox?limit=100&cursor=100"));
    expect(calls[calls.indexOf("GET /ui/inbox?limit=100&cursor=100") - 1]).toBe("GET /ui/inbox?limit=100");
    expect(screen.getByText("Item 149")).toBeTruthy();
    expect(screen.getByTestId("inbox-count").textContent).toBe("Showing 150 of 150 waiting.");
  });

  it("an ACK elsewhere takes the row off at once", async () => {
    const rows = [inboxItem(1), inboxItem(2)];
    const { api } = server("/ui/inbox", rows);
    mount(<Inbox />, api);
    await screen.findByText("Item 1");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    rows.splice(0, 1);
    act(() => FakeSocket.all[0].emit("ACKED", "n1"));
    expect(screen.queryByText("Item 1")).toBeNull();
  });

  it("a re-read that started before an ACK elsewhere does not bring the row back", async () => {
    const rows = [inboxItem(1), inboxItem(2)];
    const held: (() => void)[] = [];
    let hold = false;
    const { api, fetchMock } = server("/ui/inbox", rows);
    const answer = fetchMock.getMockImplementation()!;
    fetchMock.mockImplementation(async (input, init) => {
      const response = await answer(input, init); // read now (n1 still there), answered when released
      if (hold) await new Promise<void>((release) => held.push(release));
      return response;
    });
    mount(<Inbox />, api);
    await screen.findByText("Item 1");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    hold = true;
    act(() => FakeSocket.all[0].emit("DELIVERY_RESULT", "other"));
    await waitFor(() => expect(held.length).toBeGreaterThan(0));
    rows.splice(0, 1);
    act(() => FakeSocket.all[0].emit("ACKED", "n1"));
    expect(screen.queryByText("Item 1")).toBeNull();
    hold = false;
    act(() => held.splice(0).forEach((release) => release()));
    // The stale answer lands (it still counts n1), without n1; then a fresh read: n1 never returns.
    await waitFor(() => expect(screen.getByTestId("inbox-count").textContent).toBe("Showing 1 of 2 waiting."));
    expect(screen.queryByText("Item 1")).toBeNull();
    await waitFor(() => expect(screen.getByTestId("inbox-count").textContent).toBe("Showing 1 of 1 waiting."));
    expect(screen.queryByText("Item 1")).toBeNull();
    expect(screen.getByText("Item 2")).toBeTruthy();
  });

  it("a live re-read waits for a Load more in flight instead of cancelling it", async () => {
    const rows = Array.from({ length: 150 }, (_, i) => inboxItem(i));
    const held: (() => void)[] = [];
    const { api, fetchMock, calls } = server("/ui/inbox", rows);
    const answer = fetchMock.getMockImplementation()!;
    fetchMock.mockImplementation(async (input, init) => {
      const response = await answer(input, init);
      // The first read of the second page is answered only when released.
      if (String(input).includes("cursor=100") && !held.length) await new Promise<void>((release) => held.push(release));
      return response;
    });
    mount(<Inbox />, api);
    await userEvent.click(await screen.findByRole("button", { name: "Load more (50 more)" }));
    await waitFor(() => expect(held.length).toBe(1));
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    const before = calls.length;
    act(() => FakeSocket.all[0].emit("DELIVERY_RESULT", "other"));
    // The re-read the event asked for stays queued behind the page (so the view says it lags)...
    await waitFor(() => expect(document.querySelector("[data-lagging=true]")).not.toBeNull());
    expect(calls.slice(before)).toEqual([]);
    act(() => held[0]());
    // ...and the page lands; then the re-read runs, over both pages, and the view catches up.
    await screen.findByText("Item 149");
    await waitFor(() => expect(calls.slice(before)).toContain("GET /ui/inbox?limit=100&cursor=100"));
    await waitFor(() => expect(document.querySelector("[data-lagging=false]")).not.toBeNull());
    expect(screen.getByTestId("inbox-count").textContent).toBe("Showing 150 of 150 waiting.");
  });

  it("keyboard triage: j selects the first row, a ACKs it and focus moves to the next", async () => {
    const rows = [inboxItem(1), inboxItem(2), inboxItem(3)];
    const acked: string[] = [];
    const { api } = server("/ui/inbox", rows, {
      "POST /api/v1/notifications/n1/ack": () => { acked.push("n1"); rows.splice(0, 1); return { ack_status: "ACKED" }; },
      "POST /api/v1/notifications/n2/ack": () => { acked.push("n2"); rows.splice(0, 1); return { ack_status: "ACKED" }; },
    });
    mount(<Inbox />, api);
    await screen.findByText("Item 1");
    await userEvent.keyboard("j");
    const first = document.querySelector("[data-notification-id=n1]");
    expect(document.activeElement).toBe(first);
    await userEvent.keyboard("a");
    await waitFor(() => expect(screen.queryByText("Item 1")).toBeNull());
    expect(acked).toEqual(["n1"]);
    await waitFor(() => expect(document.activeElement).toBe(document.querySelector("[data-notification-id=n2]")));
    await userEvent.keyboard("a");
    await waitFor(() => expect(document.activeElement).toBe(document.querySelector("[data-notification-id=n3]")));
    expect(acked).toEqual(["n1", "n2"]);
    await userEvent.keyboard("?");
    expect(screen.getByRole("dialog", { name: "Keyboard shortcuts" })).toBeTruthy();
    await userEvent.keyboard("{Escape}");
    expect(screen.queryByRole("dialog")).toBeNull();
  });

  it("keys typed in a field are not shortcuts, and a reader without respond cannot ACK by key", async () => {
    const { api, calls } = server("/ui/inbox", [inboxItem(1)]);
    mount(<Inbox />, api, { respond: false });
    await screen.findByText("Item 1");
    await userEvent.type(screen.getByLabelText("Title or source contains"), "ja");
    await userEvent.keyboard("{Escape}");
    (document.activeElement as HTMLElement).blur();
    await userEvent.keyboard("ja");
    expect(calls.filter((c) => c.startsWith("POST"))).toEqual([]);
  });

  it("a group filters the list on the server", async () => {
    const { api, calls } = server("/ui/inbox", [inboxItem(1)]);
    mount(<Inbox />, api);
    await userEvent.click(await screen.findByRole("button", { name: /billing/ }));
    await waitFor(() => expect(calls.some((c) => c.startsWith("GET /ui/inbox?source=billing"))).toBe(true));
    await userEvent.click(screen.getByRole("button", { name: "Remove filter Source: billing" }));
  });
});

describe("DLQ", () => {
  it("a selection of row 150 survives a live event and the re-read", async () => {
    const rows = Array.from({ length: 200 }, (_, i) => dlqItem(i));
    const { api, calls } = server("/ui/dlq", rows);
    mount(<Dlq />, api);
    await userEvent.click(await screen.findByRole("button", { name: "Load more (100 more)" }));
    const box = await screen.findByLabelText("Select Dead 150");
    await userEvent.click(box);
    expect(screen.getByTestId("dlq-count").textContent).toContain("1 selected");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    calls.length = 0;
    act(() => FakeSocket.all[0].emit("DELIVERY_RESULT", "other"));
    await waitFor(() => expect(calls).toContain("GET /ui/dlq?sort=failed&limit=100&cursor=100"));
    await waitFor(() => expect(screen.getByTestId("dlq-count").textContent).toContain("Showing 200 of 200"));
    expect((screen.getByLabelText("Select Dead 150") as HTMLInputElement).checked).toBe(true);
    expect(screen.getByRole("button", { name: "Replay selected (1)…" })).toBeTruthy();
  });

  it("a replay elsewhere takes the row off at once; the age and the hint show", async () => {
    const rows = [dlqItem(1), dlqItem(2)];
    const { api } = server("/ui/dlq", rows);
    mount(<Dlq />, api);
    const row = (await screen.findByText("Dead 1")).closest("li")!;
    expect(within(row).getByTestId("age").textContent).toMatch(/\(1m 3\ds ago\)/);
    expect(within(row).getByTestId("failure-hint").textContent).toBe("Nothing listens at that address.");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    act(() => FakeSocket.all[0].emit("REPLAY_REQUESTED", "d1"));
    expect(screen.queryByText("Dead 1")).toBeNull();
  });

  it("keyboard: x selects the current row and r replays it", async () => {
    const rows = [dlqItem(1), dlqItem(2)];
    const { api, calls } = server("/ui/dlq", rows, {
      "POST /api/v1/dlq/d1/replay": () => { rows.splice(0, 1); return { status: "PENDING" }; },
    });
    mount(<Dlq />, api);
    await screen.findByText("Dead 1");
    await userEvent.keyboard("jx");
    expect((screen.getByLabelText("Select Dead 1") as HTMLInputElement).checked).toBe(true);
    await userEvent.keyboard("r");
    await waitFor(() => expect(screen.queryByText("Dead 1")).toBeNull());
    expect(calls).toContain("POST /api/v1/dlq/d1/replay");
    await waitFor(() => expect(document.activeElement).toBe(document.querySelector("[data-notification-id=d2]")));
  });

  it("says lagging when re-reads keep failing", async () => {
    let fail = false;
    const { api } = server("/ui/dlq", [dlqItem(1)], {
      "GET /ui/dlq": () => (fail ? new Response(JSON.stringify({ status: 503 }), { status: 503 })
        : { items: [dlqItem(1)], next: null, total: 1 }),
    });
    mount(<Dlq />, api);
    await screen.findByText("Dead 1");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    fail = true;
    act(() => FakeSocket.all[0].emit("DELIVERY_RESULT", "x"));
    await waitFor(() => expect(document.querySelector("[data-lagging=true]")).not.toBeNull());
    expect(document.querySelector("[data-lagging=true]")!.textContent).toContain("Lagging");
    fail = false;
    act(() => FakeSocket.all[0].emit("DELIVERY_RESULT", "y"));
    await waitFor(() => expect(document.querySelector("[data-lagging=false]")).not.toBeNull());
  });
});

describe("All notifications and the Overview's links", () => {
  it("lists with the filters from the address and pages to the end", async () => {
    const rows = Array.from({ length: 120 }, (_, i) => ({ id: `a${i}`, title: `Note ${i}`, source: "s", severity: "info",
      status: "FAILED", ack_status: null, dead_letter: true, accepted_at: 1.7e9 }));
    const { api, calls } = server("/ui/notifications", rows);
    const { AllNotifications } = await import("../src/views/AllNotifications");
    mount(<AllNotifications filters={{ status: "FAILED", bogus: "x" }} />, api);
    expect((await screen.findByTestId("all-count")).textContent).toBe("Showing 100 of 120 notifications.");
    expect(calls[0]).toBe("GET /ui/notifications?status=FAILED&limit=100");
    expect((screen.getByLabelText("Status") as HTMLSelectElement).value).toBe("FAILED");
    await userEvent.click(screen.getByRole("button", { name: "Load more (20 more)" }));
    await screen.findByText("Note 119");
    await userEvent.selectOptions(screen.getByLabelText("Acknowledgement"), "PENDING");
    await userEvent.click(screen.getByRole("button", { name: "Filter" }));
    expect(window.location.hash).toBe("#/notifications?status=FAILED&ack_status=PENDING");
  });

  it("drops a filter from the address that does not parse, says so, and never re-sends it", async () => {
    const { api, calls } = server("/ui/notifications", []);
    const { AllNotifications } = await import("../src/views/AllNotifications");
    mount(<AllNotifications filters={{ status: "FAILED", since: "garbage", ack_status: "MAYBE" }} />, api);
    expect((await screen.findByTestId("all-dropped")).textContent)
      .toBe("Not applied, from the address: ack_status “MAYBE” (not an acknowledgement status), since “garbage” (not a time).");
    expect(calls[0]).toBe("GET /ui/notifications?status=FAILED&limit=100");
    expect((screen.getByLabelText("Accepted from") as HTMLInputElement).value).toBe("");
    expect(screen.getByRole("link", { name: "Clear filters" }).getAttribute("href")).toBe("#/notifications");
    await userEvent.click(screen.getByRole("button", { name: "Filter" }));
    expect(window.location.hash).toBe("#/notifications?status=FAILED");
  });

  it("the Overview's counts link to the list of those notifications", async () => {
    const { api } = server("/ui/none", [], {
      "GET /ui/overview": () => ({
        now: 1, total: 4, counts_by_status: { FAILED: 2, DELIVERED: 2 }, counts_by_ack_status: { PENDING: 3 },
        failed: { dead_lettered: 1, not_dead_lettered: 1 },
        dlq: { depth: 1, oldest_failed_at: 0.5, oldest_age_seconds: 0.5 },
        last_hour: { since: 0, deliveries: 2, failures: 1, retries: 0 }, pending_acks: 3,
      }),
    });
    const { Overview } = await import("../src/views/Overview");
    mount(<Overview />, api);
    // FAILED splits as the DLQ counts: its dead letters link to the DLQ, the rest to the list
    const dead = await screen.findByRole("link", { name: "1 FAILED, dead-lettered: list them" });
    expect(dead.getAttribute("href")).toBe("#/dlq");
    expect(screen.getByRole("link", { name: "1 FAILED, resolved or best effort: list them" }).getAttribute("href"))
      .toBe("#/notifications?status=FAILED&dead_letter=false");
    expect(screen.getByRole("link", { name: "3 PENDING: list them" }).getAttribute("href")).toBe("#/notifications?ack_status=PENDING");
    await waitFor(() => expect(document.title).toBe("(1 DLQ · 3 waiting) UNS"));
  });
});

describe("the safety re-read", () => {
  it("re-reads every 1.5 s even when the socket says nothing", async () => {
    const { api, calls } = server("/ui/dlq", [dlqItem(1)]);
    mount(<Dlq />, api);
    await screen.findByText("Dead 1");
    await waitFor(() => expect(FakeSocket.all.length).toBe(1));
    const before = calls.filter((c) => c.startsWith("GET /ui/dlq?")).length;
    await waitFor(() => expect(calls.filter((c) => c.startsWith("GET /ui/dlq?")).length).toBeGreaterThanOrEqual(before + 2));
  });
});

describe("Inbox keyboard on an approval", () => {
  it("a on an approval row sends nothing, says to decide it and focuses its Approve button", async () => {
    const approval = { ...inboxItem(1), title: "Approval needed: deploy.release",
      approval: { decision_id: "g1", action: "deploy.release", resource: "prod/api", risk: "high" } } as InboxItem;
    const { api, calls } = server("/ui/inbox", [approval]);
    mount(<Inbox />, api);
    await screen.findByText("Approval needed: deploy.release");
    await userEvent.keyboard("ja");
    expect((await screen.findByTestId("flash")).textContent).toBe(
      "“Approval needed: deploy.release” is an approval: decide it with Approve or Deny.");
    expect((document.activeElement as HTMLElement).dataset.action).toBe("approve");
    expect(calls.filter((c) => c.startsWith("POST"))).toEqual([]);
  });
});

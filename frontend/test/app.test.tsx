// @vitest-environment jsdom
import { render, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
import { App } from "../src/App";
import { NotificationActions } from "../src/components/NotificationActions";
import { ConsoleProvider } from "../src/context";
import type { Me } from "../src/types";

function respond(routes: Record<string, unknown>) {
  return vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const key = `${init?.method ?? "GET"} ${String(input).split("?")[0]}`;
    const route = routes[key];
    const body = typeof route === "function" ? (route as () => unknown)() : route;
    if (body === undefined) return new Response(JSON.stringify({ status: 404, code: "not_found" }), { status: 404 });
    if (body instanceof Response) return body;
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  });
}

const me = (caps: Partial<Me["capabilities"]>): Me => ({
  username: "u", groups: [], is_superuser: false, token_expiry: null, token_expiry_iso: null,
  capabilities: { view_console: true, respond: false, operate_dlq: false, send: false, manage_policies: false, ...caps },
});

const pendingTarget = { id: "n1", title: "Disk full", status: "DELIVERED", ack_status: "PENDING", dead_letter: false };
const deadTarget = { id: "n2", title: "Webhook down", status: "FAILED", ack_status: null, dead_letter: true };

describe("App", () => {
  it("logs in and shows the overview for the user", async () => {
    class NoSocket { constructor() { throw new Error("no sockets in jsdom"); } }
    vi.stubGlobal("WebSocket", NoSocket);
    let session = false;
    const fetchMock = respond({
      "POST /api/v1/auth/login": () => {
        session = true;
        return { csrf_token: "c", username: "op", expiry: Date.now() / 1000 + 3600 };
      },
      "GET /ui/me": () => (session ? { ...me({ operate_dlq: true }), username: "op", groups: ["operator"] }
        : new Response(JSON.stringify({ status: 401, code: "not_authenticated" }), { status: 401 })),
      "GET /ui/overview": {
        now: 1, total: 3, counts_by_status: { FAILED: 1, DELIVERED: 2 }, counts_by_ack_status: { NONE: 3 },
        failed: { dead_lettered: 1, not_dead_lettered: 0 },
        dlq: { depth: 1, oldest_failed_at: 0.5, oldest_age_seconds: 0.5 }, last_hour: { since: 0, deliveries: 2, failures: 1, retries: 0 },
        pending_acks: 0,
      },
    });
    render(<App api={new Api(fetchMock)} />);
    await userEvent.type(await screen.findByLabelText("Username"), "op");
    await userEvent.type(screen.getByLabelText("Password"), "pw");
    await userEvent.click(screen.getByRole("button", { name: "Log in" }));
    expect(await screen.findByRole("heading", { name: "Overview" })).toBeTruthy();
    await waitFor(() => expect(screen.getByTestId("dlq-depth").textContent).toBe("1"));
    expect(screen.getByRole("link", { name: "1 FAILED, dead-lettered: list them" }).getAttribute("href")).toBe("#/dlq");
    expect(screen.getByTestId("who").textContent).toContain("op");
    vi.unstubAllGlobals();
  });

  it("shows the server's refusal of a login in plain words", async () => {
    const fetchMock = respond({
      "POST /api/v1/auth/login": new Response(JSON.stringify({ status: 401, code: "invalid_credentials", detail: "the username or password is not right" }), { status: 401 }),
      "GET /ui/me": () => new Response(JSON.stringify({ status: 401, code: "not_authenticated" }), { status: 401 }),
    });
    render(<App api={new Api(fetchMock)} />);
    await userEvent.type(await screen.findByLabelText("Username"), "op");
    await userEvent.type(screen.getByLabelText("Password"), "bad");
    await userEvent.click(screen.getByRole("button", { name: "Log in" }));
    expect((await screen.findByRole("alert")).textContent).toContain("The username or password is not right.");
  });
});

describe("Login", () => {
  it("says what a reload does: it keeps the session (the cookie outlives the page)", async () => {
    const fetchMock = respond({
      "GET /ui/me": () => new Response(JSON.stringify({ status: 401, code: "not_authenticated" }), { status: 401 }),
    });
    render(<App api={new Api(fetchMock)} />);
    const note = (await screen.findByTestId("session-note")).textContent ?? "";
    expect(note).toContain("reloading the page keeps you logged in");
    expect(note).not.toMatch(/logs you out|memory only/);
  });
});

describe("NotificationActions", () => {
  it("offers no mutation to a read-only user", () => {
    const api = new Api(vi.fn());
    const { container } = render(
      <ConsoleProvider api={api} me={me({})}>
        <NotificationActions target={pendingTarget} onDone={() => undefined} />
        <NotificationActions target={deadTarget} onDone={() => undefined} />
      </ConsoleProvider>,
    );
    expect(container.querySelectorAll("button")).toHaveLength(0);
  });

  it("offers only what the capabilities and the state allow", () => {
    const api = new Api(vi.fn());
    render(
      <ConsoleProvider api={api} me={me({ respond: true })}>
        <NotificationActions target={pendingTarget} onDone={() => undefined} />
        <NotificationActions target={deadTarget} onDone={() => undefined} />
      </ConsoleProvider>,
    );
    expect(screen.getByRole("button", { name: "Acknowledge Disk full" })).toBeTruthy();
    expect(screen.queryByRole("button", { name: /Replay/ })).toBeNull();
  });

  it("shows a conflicting ACK as a conflict", async () => {
    const fetchMock = respond({
      "POST /api/v1/notifications/n1/ack": new Response(JSON.stringify({
        status: 409, code: "ack_conflict", detail: "already ACKED by another actor or response", ack_status: "ACKED",
      }), { status: 409, headers: { "Content-Type": "application/problem+json" } }),
    });
    const onDone = vi.fn();
    render(
      <ConsoleProvider api={new Api(fetchMock)} me={me({ respond: true })}>
        <NotificationActions target={pendingTarget} onDone={onDone} />
      </ConsoleProvider>,
    );
    await userEvent.click(screen.getByRole("button", { name: "Acknowledge Disk full" }));
    const alert = await screen.findByRole("alert");
    expect(alert.textContent).toContain("Someone else already responded: the notification is ACKED.");
    expect(alert.getAttribute("data-code")).toBe("ack_conflict");
    expect(onDone).not.toHaveBeenCalled();
  });

  it("sends the snooze length and reports success", async () => {
    const fetchMock = respond({ "POST /api/v1/notifications/n1/snooze": { id: "n1", status: "DELIVERED", ack_status: "PENDING" } });
    const onDone = vi.fn();
    render(
      <ConsoleProvider api={new Api(fetchMock)} me={me({ respond: true })}>
        <NotificationActions target={pendingTarget} onDone={onDone} />
      </ConsoleProvider>,
    );
    await userEvent.selectOptions(screen.getByLabelText("Snooze for"), "3600");
    await userEvent.click(screen.getByRole("button", { name: "Snooze Disk full" }));
    await waitFor(() => expect(onDone).toHaveBeenCalledWith(expect.objectContaining({ label: "Snoozed" })));
    const [, init] = fetchMock.mock.calls[0];
    expect(JSON.parse(String(init?.body))).toEqual({ seconds: 3600 });
  });
});

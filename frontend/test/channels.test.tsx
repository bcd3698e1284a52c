// @vitest-environment jsdom
import { render, screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Api } from "../src/api";
import { ConsoleProvider } from "../src/context";
import { parseRoute } from "../src/router";
import type { Me } from "../src/types";
import { series } from "./series-fixture";
import { Channels, formatRate, type ChannelsModel } from "../src/views/Channels";

const me: Me = {
  username: "op", groups: ["operator"], is_superuser: false, token_expiry: null, token_expiry_iso: null,
  capabilities: { view_console: true, respond: false, operate_dlq: true, send: false, manage_policies: false },
};

const model: ChannelsModel = {
  now: 1_700_003_600, now_iso: "", since: 1_700_000_000, since_iso: "",
  items: [
    { name: "console", kind: "console", enabled: true, last_success_at: null, last_success_at_iso: null,
      last_failure: null, last_hour: { successes: 0, failures: 0, failure_rate: null } },
    { name: "ops-hook", kind: "webhook", enabled: false, last_success_at: 1_700_003_000, last_success_at_iso: "x",
      last_failure: { at: 1_700_003_500, at_iso: "y", notification_id: "n-1", error: "HTTP 401 key *** rejected",
                      attempt: 2, retryable: false },
      last_hour: { successes: 3, failures: 1, failure_rate: 0.25 } },
  ],
};

function mount(body: unknown, status = 200) {
  const fetchMock = vi.fn(async (input: RequestInfo | URL, _init?: RequestInit) => {
    const isSeries = String(input).includes("/ui/series");
    return new Response(JSON.stringify(isSeries ? series : body), { status: isSeries ? 200 : status,
      headers: { "Content-Type": "application/json" } });
  });
  render(
    <ConsoleProvider api={new Api(fetchMock)} me={me}>
      <Channels />
    </ConsoleProvider>,
  );
  return fetchMock;
}

describe("Channels", () => {
  beforeEach(() => {
    class NoSocket { constructor() { throw new Error("no sockets in jsdom"); } }
    vi.stubGlobal("WebSocket", NoSocket);
  });
  afterEach(() => vi.unstubAllGlobals());

  it("draws one small chart per channel with a text summary and a table linking failures to the DLQ", async () => {
    mount(model);
    const chart = await screen.findByTestId("chart-channel-ops-hook");
    expect(within(chart).getByTestId("chart-channel-ops-hook-summary").textContent).toContain("5 attempts and 2 failures");
    expect(within(chart).getByRole("img").getAttribute("aria-label")).toContain("ops-hook: 5 attempts");
    const rows = within(chart).getAllByRole("row");
    expect(rows).toHaveLength(4); // header + 3 buckets
    const link = within(rows[2]).getByRole("link", { name: "Dead letters that failed on it then" });
    const route = parseRoute(link.getAttribute("href") ?? "");
    expect(route).toEqual({ name: "dlq", filters: { channel: "ops-hook", failed_since: "1700000060", failed_until: "1700000120" } });
    expect(within(rows[1]).queryByRole("link")).toBeNull(); // no failure, no link
  });

  it("shows each channel's health from /ui/channels", async () => {
    const fetchMock = mount(model);
    const hook = await screen.findByTestId("channel-ops-hook");
    expect(String(fetchMock.mock.calls[0][0])).toContain("/ui/channels");
    expect(within(hook).getByText("Webhook")).toBeTruthy();
    expect(within(hook).getByText("disabled")).toBeTruthy();
    expect(screen.getByTestId("reason-ops-hook").textContent).toBe("HTTP 401 key *** rejected");
    expect(screen.getByTestId("rate-ops-hook").textContent).toBe("25% (1 of 4)"); // disabled: no health badge
    // Disabled is a neutral state, not a failure.
    expect(within(hook).getByText("disabled").className).toBe("badge badge-neutral");
    expect(hook.getAttribute("data-health")).toBe("degraded");
    expect(within(hook).getByRole("link", { name: "notification" }).getAttribute("href")).toBe("#/notifications/n-1");
    const idle = screen.getByTestId("channel-console");
    expect(within(idle).getByText("In-app")).toBeTruthy();
    expect(within(idle).getByText("none")).toBeTruthy();
    expect(screen.getByTestId("rate-console").textContent).toBe("No traffic — (0 of 0)");
    expect(idle.getAttribute("data-health")).toBe("idle");
  });

  it("says so when no channel is configured", async () => {
    mount({ ...model, items: [] });
    expect(await screen.findByText("No channels are configured.")).toBeTruthy();
  });

  it("shows the problem when the read model is refused", async () => {
    mount({ type: "urn:uns:problem:permission_denied", status: 403, code: "permission_denied", title: "Forbidden",
            detail: "your principal lacks the capability this action needs" }, 403);
    expect(await screen.findByRole("alert")).toBeTruthy();
  });
});

describe("formatRate", () => {
  it("rounds to whole percent, keeps a decimal under 1%", () => {
    expect(formatRate(null)).toBe("—");
    expect(formatRate(0)).toBe("0%");
    expect(formatRate(1 / 3)).toBe("33%");
    expect(formatRate(0.004)).toBe("0.4%");
    expect(formatRate(1)).toBe("100%");
  });
});

describe("route", () => {
  it("#/channels is the channels view", () => {
    expect(parseRoute("#/channels")).toEqual({ name: "channels" });
  });
});

describe("Channel actions", () => {
  beforeEach(() => {
    class NoSocket { constructor() { throw new Error("no sockets in jsdom"); } }
    vi.stubGlobal("WebSocket", NoSocket);
  });
  afterEach(() => vi.unstubAllGlobals());

  function serve(answers: Record<string, [number, unknown]>, caps: Partial<Me["capabilities"]> = { operate_dlq: true }) {
    const failing = { ...model, items: [
      { ...model.items[0], name: "pager", kind: "webhook", last_hour: { successes: 0, failures: 4, failure_rate: 1 } },
      model.items[1],
    ] };
    const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
      const key = `${init?.method ?? "GET"} ${String(input).split("?")[0]}`;
      const [status, body] = answers[key] ?? (key === "GET /ui/series" ? [200, series] : [200, failing]);
      return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
    });
    render(
      <ConsoleProvider api={new Api(fetchMock)} me={{ ...me, capabilities: { ...me.capabilities, operate_dlq: false, ...caps } }}>
        <Channels />
      </ConsoleProvider>,
    );
    return fetchMock;
  }
  const posts = (f: ReturnType<typeof vi.fn>) => f.mock.calls.filter(([, init]) => init?.method === "POST").map(([u]) => String(u));

  it("highlights a failing channel and offers Test, Disable… (asked first) and Enable", async () => {
    const fetchMock = serve({
      "POST /api/v1/channels/pager/test": [200, { success: false, answer: "HTTP 503", error: "HTTP 503 Service Unavailable" }],
      "POST /api/v1/channels/pager/disable": [200, { name: "pager", enabled: false }],
      "POST /api/v1/channels/ops-hook/enable": [200, { name: "ops-hook", enabled: true }],
    });
    const pager = await screen.findByTestId("channel-pager");
    expect(pager.className).toContain("channel-failing");
    expect(within(pager).getByText("Failing")).toBeTruthy();
    await userEvent.click(within(pager).getByRole("button", { name: "Test pager" }));
    expect((await screen.findByTestId("channel-result-pager")).textContent).toBe("Test message failed: HTTP 503 Service Unavailable");
    await userEvent.click(within(pager).getByRole("button", { name: "Disable pager" }));
    expect(posts(fetchMock)).toEqual(["/api/v1/channels/pager/test"]); // nothing before the confirmation
    const dialog = within(pager).getByRole("alertdialog", { name: "Disable channel pager?" });
    await userEvent.click(within(dialog).getByRole("button", { name: "Disable" }));
    expect((await screen.findByTestId("channel-result-pager")).textContent).toContain("Disabled");
    const hook = screen.getByTestId("channel-ops-hook");
    expect(within(hook).queryByRole("button", { name: "Disable ops-hook" })).toBeNull(); // already disabled
    await userEvent.click(within(hook).getByRole("button", { name: "Enable ops-hook" }));
    await screen.findByTestId("channel-result-ops-hook");
    expect(posts(fetchMock)).toEqual(["/api/v1/channels/pager/test", "/api/v1/channels/pager/disable",
      "/api/v1/channels/ops-hook/enable"]);
  });

  it("shows a refused Disable as the problem it is", async () => {
    serve({ "POST /api/v1/channels/pager/disable": [409, { status: 409, code: "channel_routed", title: "Conflict",
      detail: "the ACTIVE policy set routes to channel 'pager'" }] });
    const pager = await screen.findByTestId("channel-pager");
    await userEvent.click(within(pager).getByRole("button", { name: "Disable pager" }));
    await userEvent.click(within(within(pager).getByRole("alertdialog")).getByRole("button", { name: "Disable" }));
    const alert = await within(pager).findByRole("alert");
    expect(alert.getAttribute("data-code")).toBe("channel_routed");
    expect(alert.textContent).toContain("The active policy routes to this channel");
  });

  it("offers no channel action without the operator capability", async () => {
    serve({}, { operate_dlq: false });
    await screen.findByTestId("channel-pager");
    expect(screen.queryByRole("button")).toBeNull();
    expect(screen.queryByRole("columnheader", { name: "Actions" })).toBeNull();
  });
});

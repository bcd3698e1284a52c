// @vitest-environment jsdom
import { render, screen, within } from "@testing-library/react";
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
    expect(screen.getByTestId("rate-ops-hook").textContent).toBe("25% (1 of 4)");
    expect(hook.getAttribute("data-health")).toBe("degraded");
    expect(within(hook).getByRole("link", { name: "notification" }).getAttribute("href")).toBe("#/notifications/n-1");
    const idle = screen.getByTestId("channel-console");
    expect(within(idle).getByText("In-app")).toBeTruthy();
    expect(within(idle).getByText("none")).toBeTruthy();
    expect(screen.getByTestId("rate-console").textContent).toBe("— (0 of 0)");
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

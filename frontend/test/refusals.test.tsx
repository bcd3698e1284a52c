// @vitest-environment jsdom
// A list the server refuses (a 4xx) is asked once, not every 1.5 s plus every live sync: the same
// request gets the same answer. New inputs ask again; a network error or a 5xx is retried, at most 3 times.
import { act, render, screen } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Api, ApiError } from "../src/api";
import { ConsoleProvider, READ_RETRIES, retryRead } from "../src/context";
import { AllNotifications } from "../src/views/AllNotifications";
import { calls, me, problem, respond } from "./fetchmock";

describe("a refused list", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => {
    vi.useRealTimers();
    vi.unstubAllGlobals();
  });

  it("is read once in 10 s, and read again when its filters change", async () => {
    class NoSocket { constructor() { throw new Error("no sockets here: the live view polls"); } }
    vi.stubGlobal("WebSocket", NoSocket);
    const fetchMock = respond({
      "GET /ui/notifications": (url: string) => (url.includes("source=bad")
        ? problem(400, { code: "invalid_request", detail: "the request is invalid", errors: [{ field: "source", message: "bad" }] })
        : { items: [], next: null, total: 0 }),
    });
    const api = new Api(fetchMock);
    (api as unknown as { session: boolean }).session = true; // logged in: the view follows the stream
    const view = (source: string) => <ConsoleProvider api={api} me={me({})}><AllNotifications filters={{ source }} /></ConsoleProvider>;
    const { rerender } = render(view("bad"));
    await act(() => vi.advanceTimersByTimeAsync(10_000));
    expect(document.querySelector("[data-live-state]")?.getAttribute("data-live-state")).toBe("polling");
    expect(screen.getByRole("alert").textContent).toContain("The request was not accepted.");
    expect(calls(fetchMock, "GET /ui/notifications")).toHaveLength(1);

    rerender(view("good"));
    await act(() => vi.advanceTimersByTimeAsync(100));
    const urls = calls(fetchMock, "GET /ui/notifications").map((c) => c.url);
    expect(urls).toHaveLength(2);
    expect(urls[1]).toContain("source=good");
  });
});

describe("retryRead", () => {
  it("retries a network error or a 5xx at most 3 times, never a 4xx", () => {
    const answer = (status: number) => new ApiError({ status, code: status ? "x" : "network_error" });
    expect(READ_RETRIES).toBe(3);
    for (const status of [0, 500, 503]) {
      expect([0, 1, 2, 3].map((n) => retryRead(n, answer(status)))).toEqual([true, true, true, false]);
    }
    for (const status of [400, 403, 404, 409, 429]) expect(retryRead(0, answer(status))).toBe(false);
    expect(retryRead(0, new Error("a bug in the console"))).toBe(false);
  });
});

// @vitest-environment jsdom
import { act, renderHook } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { useNotifyChoice } from "../src/notify";

describe("useNotifyChoice", () => {
  afterEach(() => { vi.unstubAllGlobals(); localStorage.clear(); });

  it("says why it stays off when the browser refuses, and keeps it off", async () => {
    vi.stubGlobal("Notification", { permission: "default", requestPermission: vi.fn(async () => "denied") });
    const { result } = renderHook(() => useNotifyChoice());
    let refused: string | null = null;
    await act(async () => { refused = await result.current[1](true); });
    expect(refused).toMatch(/^The browser blocked notifications for this site/);
    expect(result.current[0]).toBe(false);
    expect(localStorage.getItem("uns.notify-critical")).toBe("0");
  });

  it("turns on once granted, with nothing to say", async () => {
    vi.stubGlobal("Notification", { permission: "default", requestPermission: vi.fn(async () => "granted") });
    const { result } = renderHook(() => useNotifyChoice());
    let refused: string | null = "unset";
    await act(async () => { refused = await result.current[1](true); });
    expect(refused).toBeNull();
    expect(result.current[0]).toBe(true);
  });
});

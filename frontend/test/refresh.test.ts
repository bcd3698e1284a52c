import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { RefreshScheduler } from "../src/live";

const OPTS = { waitMs: 300, maxWaitMs: 1000, lagMs: 3000 };

function deferred() {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("RefreshScheduler (throttle with a maximum wait)", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("coalesces a burst into one run waitMs after the last request", async () => {
    const run = vi.fn(async () => undefined);
    const s = new RefreshScheduler(run, OPTS);
    s.request();
    await vi.advanceTimersByTimeAsync(200);
    s.request();
    await vi.advanceTimersByTimeAsync(200);
    expect(run).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(100);
    expect(run).toHaveBeenCalledTimes(1);
    s.stop();
  });

  it("a steady stream never starves the view: a run at least every maxWaitMs", async () => {
    const run = vi.fn(async () => undefined);
    const s = new RefreshScheduler(run, OPTS);
    // 10 events a second for 20 s: never a 300 ms quiet gap, so a pure debounce would never run.
    for (let t = 0; t < 20_000; t += 100) {
      s.request();
      await vi.advanceTimersByTimeAsync(100);
    }
    expect(run.mock.calls.length).toBeGreaterThanOrEqual(19);
    expect(run.mock.calls.length).toBeLessThanOrEqual(21);
    s.stop();
  });

  it("never overlaps runs and serves requests made during a run with one more run", async () => {
    const pending: ReturnType<typeof deferred>[] = [];
    const run = vi.fn(() => {
      const d = deferred();
      pending.push(d);
      return d.promise;
    });
    const s = new RefreshScheduler(run, OPTS);
    s.request();
    await vi.advanceTimersByTimeAsync(300);
    expect(run).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) {
      s.request();
      await vi.advanceTimersByTimeAsync(1000);
    }
    expect(run).toHaveBeenCalledTimes(1); // still in flight
    pending[0].resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(run).toHaveBeenCalledTimes(2); // overdue: at once
    pending[1].resolve();
    await vi.advanceTimersByTimeAsync(5000);
    expect(run).toHaveBeenCalledTimes(2); // nothing new was requested
    s.stop();
  });

  it("flush runs at once", async () => {
    const run = vi.fn(async () => undefined);
    const s = new RefreshScheduler(run, OPTS);
    s.flush();
    await vi.advanceTimersByTimeAsync(0);
    expect(run).toHaveBeenCalledTimes(1);
    s.stop();
  });

  it("says lagging when the view stays behind and stops saying it once caught up", async () => {
    const lag: boolean[] = [];
    let fail = true;
    const run = vi.fn(async () => {
      if (fail) throw new Error("503");
    });
    const s = new RefreshScheduler(run, OPTS, (v) => lag.push(v));
    s.request();
    await vi.advanceTimersByTimeAsync(2900);
    expect(lag).toEqual([]);
    await vi.advanceTimersByTimeAsync(200);
    expect(lag).toEqual([true]);
    expect(s.isLagging).toBe(true);
    expect(run.mock.calls.length).toBeGreaterThanOrEqual(3); // it keeps retrying on the cadence
    fail = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(lag).toEqual([true, false]);
    s.stop();
  });

  it("retries a failed run on the cadence, not in a loop", async () => {
    const run = vi.fn(async () => {
      throw new Error("503");
    });
    const s = new RefreshScheduler(run, OPTS);
    s.request();
    await vi.advanceTimersByTimeAsync(3000);
    // The first run at 300 ms, then one every waitMs after each failure.
    expect(run.mock.calls.length).toBeGreaterThanOrEqual(8);
    expect(run.mock.calls.length).toBeLessThanOrEqual(10);
    s.stop();
  });

  it("a slow read that outlasts lagMs is lagging too", async () => {
    const lag: boolean[] = [];
    const d = deferred();
    const s = new RefreshScheduler(() => d.promise, OPTS, (v) => lag.push(v));
    s.request();
    await vi.advanceTimersByTimeAsync(3500);
    expect(lag).toEqual([true]);
    d.resolve();
    await vi.advanceTimersByTimeAsync(0);
    expect(lag).toEqual([true, false]);
    s.stop();
  });

  it("stop cancels what is pending", async () => {
    const run = vi.fn(async () => undefined);
    const s = new RefreshScheduler(run, OPTS);
    s.request();
    s.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(run).not.toHaveBeenCalled();
  });
});

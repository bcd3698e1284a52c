import { describe, expect, it } from "vitest";
import { Api } from "../src/api";
import { runServerBulk } from "../src/bulk";
import { calls, respond } from "./fetchmock";

const progress = (over: Record<string, unknown>) => ({
  id: "b1", action: "replay", list: "dlq", filter: {}, params: {}, created_by: "op", created_at: 1, expected: 250,
  matched: 250, total: 250, settled: 0, refused: 0, remaining: 250, cursor: 0, state: "RUNNING", finished_at: null, ...over,
});

describe("runServerBulk", () => {
  it("creates the bulk action for the confirmed N and runs it chunk by chunk to the end", async () => {
    let run = 0;
    const fetchMock = respond({
      "POST /api/v1/bulk-actions": progress({}),
      "POST /api/v1/bulk-actions/b1/run": () => {
        run += 1;
        const start = (run - 1) * 100;
        const n = Math.min(100, 250 - start);
        const results = Array.from({ length: n }, (_, i) => ({
          ordinal: start + i, notification_id: `n${start + i}`, result: start + i === 7 ? "refused" : "settled",
          code: start + i === 7 ? "not_dead_lettered" : null, detail: null, actor: "op", at: 2,
        }));
        const done = start + n;
        return { ...progress({ settled: done - (done > 7 ? 1 : 0), refused: done > 7 ? 1 : 0, remaining: 250 - done,
          state: done === 250 ? "DONE" : "RUNNING" }), results };
      },
    });
    const seen: number[] = [];
    const out = await runServerBulk(new Api(fetchMock), { action: "replay", filter: { q: "refused", source: "" }, expected: 250 },
      (p) => seen.push(p.remaining));
    expect(calls(fetchMock, "POST /api/v1/bulk-actions")[0].body).toEqual({ action: "replay", filter: { q: "refused" }, expected: 250 });
    expect(calls(fetchMock, "POST /api/v1/bulk-actions/b1/run")).toHaveLength(3);
    expect(seen).toEqual([250, 150, 50, 0]);
    expect(out.results).toHaveLength(250);
    expect(out.results[7]).toMatchObject({ result: "refused", code: "not_dead_lettered" });
    expect(out.progress.state).toBe("DONE");
  });
});

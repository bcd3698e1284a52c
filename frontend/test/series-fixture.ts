import type { SeriesModel } from "../src/types";

const zeros = (n: number) => Array.from({ length: n }, () => 0);
/** ``/ui/series`` of three 60 s buckets: ops-hook failed twice in the middle one. */
export const series: SeriesModel = {
  window: "1h", step_seconds: 60, points: 3, now: 1_700_000_150, now_iso: "", start: 1_700_000_000, start_iso: "",
  end: 1_700_000_180, end_iso: "", buckets: [1_700_000_000, 1_700_000_060, 1_700_000_120],
  counts: { accepted: [1, 5, 0], delivered: [1, 2, 0], retried: [0, 1, 0], failed: [0, 2, 0], dead_lettered: [0, 2, 0],
            deduplicated: zeros(3) },
  latency: { basis: "accepted", p50: [0.5, 1, null], p95: [0.5, 2, null], p99: [0.5, 2, null], count: [1, 2, 0] },
  gauges: { dlq_depth: [0, 2, 2], ack_pending: [0, 0, 1] },
  channels: [{ name: "ops-hook", attempts: [1, 4, 0], failures: [0, 2, 0] }],
};

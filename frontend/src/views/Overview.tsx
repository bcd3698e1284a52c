import { useCallback, useState } from "react";
import { Time } from "../components/Time";
import { LiveIndicator } from "../components/LiveIndicator";
import { ProblemMessage } from "../components/ProblemMessage";
import { SAFETY_REFRESH_MS, useLiveRefresh, useReadModel } from "../hooks";
import { href } from "../router";
import { formatClock, formatDuration } from "../time";
import { useTitle } from "../triage";
import type { Overview as OverviewModel, SeriesModel } from "../types";
import { PALETTE, TimeChart } from "../components/TimeChart";

export const WINDOWS = [
  { value: "1h", label: "Last hour" },
  { value: "24h", label: "Last 24 hours" },
  { value: "7d", label: "Last 7 days" },
] as const;
export type WindowName = (typeof WINDOWS)[number]["value"];

const total = (values: (number | null)[]) => values.reduce<number>((a, v) => a + (v ?? 0), 0);

/** ", peak 12 at 10:42" (the day too for hour buckets) of the largest value, or "" when all are 0. */
function peak(values: (number | null)[], buckets: number[], step: number): string {
  let best = -1;
  values.forEach((v, i) => { if ((v ?? 0) > 0 && (best < 0 || (v ?? 0) > (values[best] ?? 0))) best = i; });
  if (best < 0) return "";
  const at = formatClock(buckets[best], step >= 3600);
  return `, peak ${values[best]} at ${at}`;
}

function seconds(v: number | null): string {
  if (v === null) return "—";
  return v < 1 ? `${Math.round(v * 1000)} ms` : v < 120 ? `${v.toFixed(1)} s` : formatDuration(v);
}

/** "1.4 s", or "between 0.9 s and 2.1 s" when the values differ. */
function spread(values: number[]): string {
  const [lo, hi] = [seconds(Math.min(...values)), seconds(Math.max(...values))];
  return lo === hi ? lo : `between ${lo} and ${hi}`;
}

/** A bucket's time range as a list filter: [start, start + step). */
function range(data: SeriesModel, i: number): [string, string] {
  return [String(data.buckets[i]), String(data.buckets[i] + data.step_seconds)];
}

/** The overview's charts of ``/ui/series``: throughput, failures (a click on a bucket opens its
 *  dead letters), latency and the DLQ / acknowledgement gauges. */
export function OverviewCharts({ data }: { data: SeriesModel }) {
  const c = data.counts;
  const last = data.buckets.length - 1;
  const windowLabel = WINDOWS.find((w) => w.value === data.window)?.label.toLowerCase() ?? data.window;
  const failuresHref = (i: number) => {
    if (!c.dead_lettered[i]) return null;
    const [since, until] = range(data, i);
    return href({ name: "dlq", filters: { failed_since: since, failed_until: until } });
  };
  const acceptedHref = (i: number) => {
    if (!c.accepted[i]) return null;
    const [since, until] = range(data, i);
    return href({ name: "notifications", filters: { since, until } });
  };
  const p95 = data.latency.p95.filter((v): v is number => v !== null);
  return (
    <div className="charts">
      <TimeChart id="throughput" title="Notifications" buckets={data.buckets} step={data.step_seconds}
        summary={`${windowLabel}: ${total(c.accepted)} accepted${peak(c.accepted, data.buckets, data.step_seconds)}, ${total(c.delivered)} delivered, ${total(c.deduplicated)} deduplicated.`}
        series={[
          { label: "Accepted", values: c.accepted, color: PALETTE.blue },
          { label: "Delivered", values: c.delivered, color: PALETTE.green, dash: [6, 3] },
          { label: "Deduplicated", values: c.deduplicated, color: PALETTE.purple, dash: [2, 2] },
        ]}
        bucketHref={acceptedHref} bucketLinkLabel="Notifications accepted then" />
      <TimeChart id="failures" title="Failures" buckets={data.buckets} step={data.step_seconds}
        summary={`${windowLabel}: ${total(c.dead_lettered)} dead-lettered${peak(c.dead_lettered, data.buckets, data.step_seconds)}, ${total(c.retried)} retried, ${total(c.failed) - total(c.dead_lettered)} failed best-effort. Click a bucket to open its dead letters.`}
        series={[
          { label: "Dead-lettered", values: c.dead_lettered, color: PALETTE.vermillion },
          { label: "Retried", values: c.retried, color: PALETTE.orange, dash: [6, 3] },
        ]}
        bucketHref={failuresHref} bucketLinkLabel="Dead letters of this bucket" />
      <TimeChart id="latency" title="Delivery latency (from acceptance)" buckets={data.buckets} step={data.step_seconds}
        format={seconds} yLabel="seconds"
        summary={p95.length ? `${windowLabel}: p95 ${spread(p95)}; latest p50 ${seconds(data.latency.p50[last])}, p99 ${seconds(data.latency.p99[last])}.` : `${windowLabel}: no deliveries measured.`}
        series={[
          { label: "p50", values: data.latency.p50, color: PALETTE.blue, points: true },
          { label: "p95", values: data.latency.p95, color: PALETTE.orange, dash: [6, 3], points: true },
          { label: "p99", values: data.latency.p99, color: PALETTE.vermillion, dash: [2, 2], points: true },
        ]} />
      <TimeChart id="backlog" title="DLQ depth and pending acknowledgements" buckets={data.buckets} step={data.step_seconds}
        summary={`Now ${data.gauges.dlq_depth[last]} dead letters (${data.gauges.dlq_depth[0]} at the start) and ${data.gauges.ack_pending[last]} pending acknowledgements (${data.gauges.ack_pending[0]} at the start).`}
        series={[
          { label: "DLQ depth", values: data.gauges.dlq_depth, color: PALETTE.vermillion },
          { label: "Pending acks", values: data.gauges.ack_pending, color: PALETTE.sky, dash: [6, 3] },
        ]} />
    </div>
  );
}

export function WindowPicker({ value, onChange }: { value: WindowName; onChange: (w: WindowName) => void }) {
  return (
    <fieldset className="window-picker">
      <legend className="visually-hidden">Chart window</legend>
      {WINDOWS.map((w) => (
        <label key={w.value} className="check">
          <input type="radio" name="chart-window" value={w.value} checked={value === w.value}
            onChange={() => onChange(w.value)} /> {w.label}
        </label>
      ))}
    </fieldset>
  );
}

type CountRow = [label: string, count: number, to: string];

/** The status counts, FAILED split as the server splits it (``failed``, the DLQ's one definition):
 *  the dead letters (the DLQ's own number, linking to it) apart from resolved and best-effort failures. */
export function statusRows(counts: Record<string, number>, failed: OverviewModel["failed"]): CountRow[] {
  return Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).flatMap(([k, v]): CountRow[] => k === "FAILED"
    ? [["FAILED, dead-lettered", failed.dead_lettered, href({ name: "dlq" })],
       ["FAILED, resolved or best effort", failed.not_dead_lettered, href({ name: "notifications", filters: { status: k, dead_letter: "false" } })]]
    : [[k, v, href({ name: "notifications", filters: { status: k } })]]);
}

function Counts({ title, rows }: { title: string; rows: CountRow[] }) {
  return (
    <section className="card" aria-labelledby={`h-${title}`}>
      <h2 id={`h-${title}`}>{title}</h2>
      {rows.length ? (
        <dl className="counts">
          {rows.map(([k, v, to]) => (
            <div key={k}><dt>{k}</dt><dd>
              <a href={to} aria-label={`${v} ${k}: list them`}>{v}</a>
            </dd></div>
          ))}
        </dl>
      ) : <p className="muted">None yet.</p>}
    </section>
  );
}

export function Overview() {
  const { data, error, refresh } = useReadModel<OverviewModel>("/ui/overview", { refetchInterval: SAFETY_REFRESH_MS });
  const [span, setSpan] = useState<WindowName>("1h");
  const charts = useReadModel<SeriesModel>(`/ui/series?window=${span}`, { refetchInterval: SAFETY_REFRESH_MS });
  const refreshCharts = charts.refresh;
  const refreshAll = useCallback(() => Promise.all([refresh(), refreshCharts()]), [refresh, refreshCharts]);
  const { live, lagging } = useLiveRefresh({ stream: "all", limit: 0 }, refreshAll);
  useTitle(data ? `(${data.dlq.depth} DLQ · ${data.pending_acks} waiting) UNS` : "UNS");
  return (
    <>
      <div className="view-head">
        <h1>Overview</h1>
        <LiveIndicator state={live} lagging={lagging} />
      </div>
      {data ? (
        // The two numbers a paged operator acts on, in the first screen above the charts.
        <p className="glance" data-testid="glance">
          <a href={href({ name: "dlq" })} className={data.dlq.depth ? "glance-bad" : undefined}>
            <strong>{data.dlq.depth}</strong> in the dead-letter queue</a>
          <a href={href({ name: "inbox" })}><strong>{data.pending_acks}</strong> awaiting acknowledgement</a>
        </p>
      ) : null}
      <ProblemMessage explanation={error ?? charts.error} />
      <section className="card charts-card" aria-labelledby="h-charts">
        <div className="view-head">
          <h2 id="h-charts">What is happening</h2>
          <WindowPicker value={span} onChange={setSpan} />
        </div>
        {charts.data ? <OverviewCharts data={charts.data} /> : <p className="muted">Loading the charts…</p>}
      </section>
      {data ? (
        <div className="grid">
          <section className="card emphasis" aria-labelledby="h-dlq">
            <h2 id="h-dlq">Dead-letter queue</h2>
            <p className="big" data-testid="dlq-depth">{data.dlq.depth}</p>
            <p>
              {data.dlq.oldest_failed_at !== null && data.dlq.oldest_age_seconds !== null ? (
                <>Oldest failed <Time epoch={data.dlq.oldest_failed_at} /> ({formatDuration(data.dlq.oldest_age_seconds)} ago)</>
              ) : "Empty."}
            </p>
            <a href={href({ name: "dlq" })}>Triage the DLQ</a>
          </section>
          <section className="card" aria-labelledby="h-hour">
            <h2 id="h-hour">Last hour</h2>
            <dl className="counts">
              <div><dt>Delivered</dt><dd>{data.last_hour.deliveries}</dd></div>
              <div><dt>Failed</dt><dd>{data.last_hour.failures}</dd></div>
              <div><dt>Retried</dt><dd>{data.last_hour.retries}</dd></div>
            </dl>
            <p className="muted small">Notifications settled since <Time epoch={data.last_hour.since} />: a channel's
              failed attempts are on the Channels view.</p>
          </section>
          <section className="card" aria-labelledby="h-acks">
            <h2 id="h-acks">Awaiting acknowledgement</h2>
            <p className="big">{data.pending_acks}</p>
            <a href={href({ name: "inbox" })}>Open the inbox</a>
          </section>
          <Counts title="By delivery status" rows={statusRows(data.counts_by_status, data.failed)} />
          <Counts title="By acknowledgement status" rows={Object.entries(data.counts_by_ack_status).sort(([a], [b]) => a.localeCompare(b))
            .map(([k, v]): CountRow => [k, v, href({ name: "notifications", filters: { ack_status: k } })])} />
        </div>
      ) : null}
    </>
  );
}

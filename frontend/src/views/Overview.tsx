import { Time } from "../components/Time";
import { LiveIndicator } from "../components/LiveIndicator";
import { ProblemMessage } from "../components/ProblemMessage";
import { SAFETY_REFRESH_MS, useLiveRefresh, useReadModel } from "../hooks";
import { href } from "../router";
import { formatDuration } from "../time";
import { useTitle } from "../triage";
import type { Overview as OverviewModel } from "../types";

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
  const { live, lagging } = useLiveRefresh({ stream: "all", limit: 0 }, refresh);
  useTitle(data ? `(${data.dlq.depth} DLQ · ${data.pending_acks} waiting) UNS` : "UNS");
  return (
    <>
      <div className="view-head">
        <h1>Overview</h1>
        <LiveIndicator state={live} lagging={lagging} />
      </div>
      <ProblemMessage explanation={error} />
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
              <div><dt>Deliveries</dt><dd>{data.last_hour.deliveries}</dd></div>
              <div><dt>Failures</dt><dd>{data.last_hour.failures}</dd></div>
              <div><dt>Retries</dt><dd>{data.last_hour.retries}</dd></div>
            </dl>
            <p className="muted small">Since <Time epoch={data.last_hour.since} /></p>
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

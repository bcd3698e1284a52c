import { ChannelActions } from "../components/ChannelActions";
import { LiveIndicator } from "../components/LiveIndicator";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useLiveRefresh, useReadModel } from "../hooks";
import { href } from "../router";

import { useCallback } from "react";
import { PALETTE, TimeChart } from "../components/TimeChart";
import type { ChannelHealth, ChannelsModel, SeriesModel } from "../types";

export type { ChannelsModel };

const KINDS: Record<string, string> = {
  webhook: "Webhook",
  email: "Email",
  apprise: "Apprise",
  console: "In-app",
};

/** "25%" for 0.25; "—" when the channel had no provider answer in the last hour. */
export function formatRate(rate: number | null): string {
  if (rate === null) return "—";
  const percent = rate * 100;
  return `${percent > 0 && percent < 1 ? percent.toFixed(1) : Math.round(percent)}%`;
}

type Health = "failing" | "degraded" | "ok" | "idle";

/** How each health reads on screen: failing stands out (red row edge and badge); a disabled
 *  channel is a neutral state (grey, no health badge, never highlighted), not a failure. */
const HEALTH_TEXT: Record<Health, string> = { failing: "Failing", degraded: "Some failures", ok: "OK", idle: "No traffic" };

function health(ch: ChannelHealth): Health {
  const rate = ch.last_hour.failure_rate;
  if (rate === null) return "idle";
  if (rate >= 0.5) return "failing";
  return rate > 0 ? "degraded" : "ok";
}

/** Channel health changes slowly: re-read 500 ms after the last event, at least every 2 s under a stream. */
const CHANNELS_REFRESH = { waitMs: 500, maxWaitMs: 2000 };

/** One small chart per channel: its answered attempts and failures per minute over the last hour
 *  (``/ui/series``); a click on a bucket opens the dead letters that failed on it then. */
function ChannelCharts({ data }: { data: SeriesModel }) {
  const sum = (v: number[]) => v.reduce((a, b) => a + b, 0);
  return (
    <div className="charts small-multiples" aria-label="Attempts and failures per channel, last hour">
      {data.channels.map((ch) => (
        <TimeChart key={ch.name} id={`channel-${ch.name}`} title={ch.name} height={130}
          buckets={data.buckets} step={data.step_seconds}
          summary={`${sum(ch.attempts)} attempts and ${sum(ch.failures)} failures in the last hour; latest minute: ${ch.attempts[ch.attempts.length - 1]} attempts, ${ch.failures[ch.failures.length - 1]} failures.`}
          series={[
            { label: "Attempts", values: ch.attempts, color: PALETTE.blue },
            { label: "Failures", values: ch.failures, color: PALETTE.vermillion, dash: [4, 2] },
          ]}
          bucketHref={(i) => (ch.failures[i] ? href({ name: "dlq", filters: {
            channel: ch.name, failed_since: String(data.buckets[i]), failed_until: String(data.buckets[i] + data.step_seconds) } }) : null)}
          bucketLinkLabel="Dead letters that failed on it then" />
      ))}
    </div>
  );
}

export function Channels() {
  const { data, error, refresh } = useReadModel<ChannelsModel>("/ui/channels");
  const { me } = useConsole();
  const operate = me.capabilities.operate_dlq;
  const charts = useReadModel<SeriesModel>("/ui/series?window=1h");
  const refreshCharts = charts.refresh;
  const refreshAll = useCallback(() => Promise.all([refresh(), refreshCharts()]), [refresh, refreshCharts]);
  const { live } = useLiveRefresh({ stream: "all", limit: 0 }, refreshAll, { options: CHANNELS_REFRESH });
  return (
    <>
      <div className="view-head">
        <h1>Channels</h1>
        <LiveIndicator state={live} />
      </div>
      <ProblemMessage explanation={error ?? charts.error} />
      {charts.data && charts.data.channels.length ? <ChannelCharts data={charts.data} /> : null}
      {data ? (
        data.items.length ? (
          <div className="table-wrap">
            <table>
              <caption className="muted small">
                Provider answers per channel; the failure rate counts the answers since <Time epoch={data.since} />.
              </caption>
              <thead>
                <tr>
                  <th scope="col">Channel</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Enabled</th>
                  <th scope="col">Last success</th>
                  <th scope="col">Last failure</th>
                  <th scope="col">Failure rate (1 h)</th>
                  {operate ? <th scope="col">Actions</th> : null}
                </tr>
              </thead>
              <tbody>
                {data.items.map((ch) => (
                  <tr key={ch.name} data-testid={`channel-${ch.name}`} data-health={health(ch)}
                    className={ch.enabled ? `channel-${health(ch)}` : "channel-disabled"}>
                    <th scope="row">{ch.name}</th>
                    <td>{KINDS[ch.kind] ?? ch.kind}</td>
                    <td>{ch.enabled ? "yes" : <span className="badge badge-neutral">disabled</span>}</td>
                    <td><Time epoch={ch.last_success_at} /></td>
                    <td>
                      {ch.last_failure ? (
                        <>
                          <Time epoch={ch.last_failure.at} />{" "}
                          {ch.last_failure.notification_id ? (
                            <a href={href({ name: "notification", id: ch.last_failure.notification_id })}>notification</a>
                          ) : null}
                          <div className="small" data-testid={`reason-${ch.name}`}>{ch.last_failure.error ?? "no reason recorded"}</div>
                        </>
                      ) : <span className="muted">none</span>}
                    </td>
                    <td data-testid={`rate-${ch.name}`}>
                      {ch.enabled ? <><span className={`health health-${health(ch)}`}>{HEALTH_TEXT[health(ch)]}</span>{" "}</> : null}
                      <span className="rate">{formatRate(ch.last_hour.failure_rate)}</span>
                      <span className="muted small">
                        {" "}({ch.last_hour.failures} of {ch.last_hour.successes + ch.last_hour.failures})
                      </span>
                    </td>
                    {operate ? (
                      <td className="channel-actions-cell">
                        <ChannelActions name={ch.name} enabled={ch.enabled} onChanged={refresh} />
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : <p className="muted">No channels are configured.</p>
      ) : null}
    </>
  );
}

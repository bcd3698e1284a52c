import { LiveIndicator } from "../components/LiveIndicator";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useLiveRefresh, useReadModel } from "../hooks";
import { href } from "../router";

import type { ChannelHealth, ChannelsModel } from "../types";

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

function health(ch: ChannelHealth): "failing" | "degraded" | "ok" | "idle" {
  const rate = ch.last_hour.failure_rate;
  if (rate === null) return "idle";
  if (rate >= 0.5) return "failing";
  return rate > 0 ? "degraded" : "ok";
}

/** Channel health changes slowly: re-read 500 ms after the last event, at least every 2 s under a stream. */
const CHANNELS_REFRESH = { waitMs: 500, maxWaitMs: 2000 };

export function Channels() {
  const { data, error, refresh } = useReadModel<ChannelsModel>("/ui/channels");
  const { live } = useLiveRefresh({ stream: "all", limit: 0 }, refresh, { options: CHANNELS_REFRESH });
  return (
    <>
      <div className="view-head">
        <h1>Channels</h1>
        <LiveIndicator state={live} />
      </div>
      <ProblemMessage explanation={error} />
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
                </tr>
              </thead>
              <tbody>
                {data.items.map((ch) => (
                  <tr key={ch.name} data-testid={`channel-${ch.name}`} data-health={health(ch)}>
                    <th scope="row">{ch.name}</th>
                    <td>{KINDS[ch.kind] ?? ch.kind}</td>
                    <td>{ch.enabled ? "yes" : <span className="badge badge-failed">disabled</span>}</td>
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
                      {formatRate(ch.last_hour.failure_rate)}
                      <span className="muted small">
                        {" "}({ch.last_hour.failures} of {ch.last_hour.successes + ch.last_hour.failures})
                      </span>
                    </td>
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

import { ProblemMessage } from "../components/ProblemMessage";
import { ZonedTime } from "../components/ZonedTime";
import { useReadModel } from "../hooks";
import { href } from "../router";
import type { OncallBoard, OncallScheduleSummary } from "../types";

/** Who is on call changes with the clock, not with events: re-read every 30 s. */
export const ONCALL_REFRESH_MS = 30_000;

/** "layer primary", "override", or nothing: why this person is on call. */
export function because(source: string | null, layer: string | null): string {
  if (source === "override") return "override";
  if (source === "layer") return layer ? `layer ${layer}` : "layer";
  return "";
}

function NowCell({ s }: { s: OncallScheduleSummary }) {
  if (!s.on_call.user) return <span className="badge badge-failed">nobody on call</span>;
  const why = because(s.on_call.source, s.on_call.layer);
  return (
    <>
      <strong>{s.on_call.user}</strong>
      {why ? <span className="muted small"> ({why})</span> : null}
    </>
  );
}

function NextCell({ s }: { s: OncallScheduleSummary }) {
  const next = s.next_shift;
  if (!next) return <span className="muted">nobody within a year</span>;
  const why = because(next.source, next.layer);
  return (
    <>
      <strong>{next.user}</strong>
      {why ? <span className="muted small"> ({why})</span> : null}
    </>
  );
}

/** ``#/oncall``: for each schedule who is on call now and who is next, with the hand-off time in
 *  the viewer's zone and the schedule's, and its team; then the teams. */
export function OnCall() {
  const { data, error } = useReadModel<OncallBoard>("/ui/oncall", { refetchInterval: ONCALL_REFRESH_MS });
  return (
    <>
      <div className="view-head">
        <h1>On call</h1>
      </div>
      <ProblemMessage explanation={error} />
      {data ? (
        <>
          {data.schedules.length ? (
            <div className="table-wrap">
              <table className="oncall-board">
                <caption className="muted small">
                  Who is on call for each schedule now, and who takes over at the hand-off (your time, then the schedule's).
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Team</th>
                    <th scope="col">On call now</th>
                    <th scope="col">Next on call</th>
                    <th scope="col">Hand-off</th>
                  </tr>
                </thead>
                <tbody>
                  {data.schedules.map((s) => (
                    <tr key={s.name} data-testid={`oncall-${s.name}`}>
                      <th scope="row">
                        <a href={href({ name: "oncall-schedule", schedule: s.name })}>{s.name}</a>
                        {s.description ? <div className="muted small">{s.description}</div> : null}
                      </th>
                      <td>{s.team ?? <span className="muted">none</span>}</td>
                      <td data-testid={`now-${s.name}`}><NowCell s={s} /></td>
                      <td data-testid={`next-${s.name}`}><NextCell s={s} /></td>
                      <td>{s.next_shift ? <ZonedTime epoch={s.next_shift.start} zone={s.time_zone} /> : <span className="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : <p className="muted">No schedules yet. An operator creates them through the API or the admin.</p>}
          <h2>Teams</h2>
          {data.teams.length ? (
            <div className="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Team</th>
                    <th scope="col">Members</th>
                    <th scope="col">Schedules</th>
                  </tr>
                </thead>
                <tbody>
                  {data.teams.map((t) => (
                    <tr key={t.name} data-testid={`team-${t.name}`}>
                      <th scope="row">
                        {t.name}
                        {t.description ? <div className="muted small">{t.description}</div> : null}
                      </th>
                      <td>{t.members.length ? t.members.join(", ") : <span className="muted">none</span>}</td>
                      <td>
                        {t.schedules.length ? t.schedules.map((name, i) => (
                          <span key={name}>{i ? ", " : ""}<a href={href({ name: "oncall-schedule", schedule: name })}>{name}</a></span>
                        )) : <span className="muted">none</span>}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : <p className="muted">No teams yet.</p>}
        </>
      ) : null}
    </>
  );
}

import { StatusBadge } from "./Badge";
import { Time } from "./Time";
import { href } from "../router";

/** ``escalation`` of ``/ui/notifications/{id}`` (``runtime.escalation.chain_view``). */
export interface EscalationLevel {
  level: number;
  channels: string[];
  wait_seconds: number;
  repeat: number;
}

export interface EscalationFired {
  number: number;
  level: number;
  repetition: number;
  channels: string[];
  at: number;
  actor: string;
  reason: string;
  escalation_id: string;
  status: string | null;
  ack_status: string | null;
  responded_by: string | null;
  closed_by_chain?: boolean;
  responded_at: number | null;
}

export interface EscalationChainView {
  levels: EscalationLevel[];
  state: "ACTIVE" | "RESPONDED" | "EXHAUSTED" | null;
  active_level: number;
  steps_fired: number;
  next_due: number | null;
  next: { level?: number; repetition?: number; exhausted?: boolean } | null;
  fired: EscalationFired[];
  failed: { level: number; repetition: number; channels: string[]; at: number; code: string; detail: string }[];
  stopped: { actor: string; response: string; responded_on: string; level: number; at: number } | null;
  exhausted_at: number | null;
  can_escalate: boolean;
  starts_on_timeout?: boolean;
}

/** ``escalated_from`` of an escalation's detail: its original and the level it was sent for. */
export interface EscalatedFrom {
  id: string;
  level: number;
}

function stateText(chain: EscalationChainView): string {
  switch (chain.state) {
    case null:
      if (!chain.can_escalate) return "Not started.";
      return chain.starts_on_timeout === false
        ? "Not started: an escalation starts no chain of its own when nobody answers it; Escalate starts one."
        : "Not started: the first level fires when the acknowledgement deadline passes.";
    case "ACTIVE":
      return `Level ${chain.active_level || 1} of ${chain.levels.length} is active.`;
    case "RESPONDED":
      return chain.stopped
        ? `Stopped at level ${chain.stopped.level}: ${chain.stopped.response} by ${chain.stopped.actor}.`
        : "Stopped by a response.";
    case "EXHAUSTED":
      return "Ended: every level fired and nobody responded.";
    default:
      return String(chain.state);
  }
}

/** The escalation chain of one notification: its levels (the active one marked), what fired
 *  when and who responded, the next step and when it is due. */
export function EscalationChain({ chain }: { chain: EscalationChainView }) {
  const fired = new Map<number, EscalationFired[]>();
  for (const f of chain.fired) fired.set(f.level, [...(fired.get(f.level) ?? []), f]);
  return (
    <section className="card" aria-labelledby="h-escalation" data-testid="escalation-chain">
      <h2 id="h-escalation">Escalation chain</h2>
      <p data-testid="escalation-state">
        <StatusBadge value={chain.state ?? "NOT STARTED"} /> {stateText(chain)}
      </p>
      {chain.state === "ACTIVE" && chain.next ? (
        <p className="muted small" data-testid="escalation-next">
          {chain.next.exhausted ? "The chain ends" : `Level ${chain.next.level} (send ${chain.next.repetition}) fires`} at{" "}
          <Time epoch={chain.next_due} /> unless someone responds.
        </p>
      ) : null}
      <div className="table-wrap">
        <table>
          <caption className="visually-hidden">Escalation levels</caption>
          <thead>
            <tr><th scope="col">Level</th><th scope="col">Channels</th><th scope="col">Waits</th><th scope="col">Fired</th><th scope="col">Response</th></tr>
          </thead>
          <tbody>
            {chain.levels.map((lv) => {
              const sent = fired.get(lv.level) ?? [];
              const failed = chain.failed.filter((f) => f.level === lv.level);
              const active = chain.state === "ACTIVE" && chain.active_level === lv.level;
              return (
                <tr key={lv.level} data-level={lv.level} aria-current={active ? "step" : undefined} className={active ? "active" : undefined}>
                  <th scope="row">{lv.level}{active ? " (active)" : ""}</th>
                  <td>{lv.channels.join(", ")}</td>
                  <td>{lv.wait_seconds} s{lv.repeat > 1 ? `, ${lv.repeat}×` : ""}</td>
                  <td>
                    {sent.length === 0 && failed.length === 0 ? <span className="muted">not yet</span> : null}
                    {sent.map((f) => (
                      <div key={f.escalation_id}>
                        <Time epoch={f.at} /> <a href={href({ name: "notification", id: f.escalation_id })}>#{f.number}</a>{" "}
                        <span className="muted small">by {f.actor}</span>
                      </div>
                    ))}
                    {failed.map((f) => <div key={`${f.at}-${f.repetition}`} className="bad">could not be sent ({f.code}) <Time epoch={f.at} /></div>)}
                  </td>
                  <td>
                    {sent.filter((f) => f.responded_by).map((f) => (
                      <div key={f.escalation_id}><StatusBadge value={f.ack_status ?? ""} /> {f.closed_by_chain ? `closed with the chain (${f.responded_by})` : f.responded_by}, <Time epoch={f.responded_at} /></div>
                    ))}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </section>
  );
}

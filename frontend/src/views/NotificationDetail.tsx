import { useState } from "react";
import { DeliveryState, StatusBadge } from "../components/Badge";
import { LiveIndicator } from "../components/LiveIndicator";
import { ApprovalRequest, approvalOf } from "../components/ApprovalRequest";
import { EscalationChain, type EscalatedFrom, type EscalationChainView } from "../components/EscalationChain";
import { NotificationActions, type ActionResult } from "../components/NotificationActions";
import { ProblemMessage } from "../components/ProblemMessage";
import { SilenceForm, matchersFrom, silenceCreated } from "../components/SilenceForm";
import { useConsole } from "../context";
import { Time } from "../components/Time";
import { useLiveRefresh, useReadModel } from "../hooks";
import type { TimelineEvent } from "../live";
import { href } from "../router";
import type { DedupMember, MissingMember, NotificationDetail as Detail, TimelineEntry } from "../types";
import { LinkedText } from "../components/LinkedText";
import { formatLocal } from "../time";

/** The detail read model with the escalation chain fields (issue 13). */
type DetailWithChain = Detail & { escalation?: EscalationChainView | null; escalated_from?: EscalatedFrom | null };

/** A JSON document in a scrolling box; focusable (tabIndex 0) so a keyboard can scroll it too
 *  (WCAG 2.1.1, axe's scrollable-region-focusable), named by ``label`` as a region. */
function Json({ value, label }: { value: unknown; label: string }) {
  return <pre className="json" tabIndex={0} role="region" aria-label={label}>{JSON.stringify(value, null, 2)}</pre>;
}

function Member({ m, label }: { m: DedupMember | MissingMember; label: string }) {
  if ("missing" in m) return <li>{label}: <code>{m.id}</code> <span className="muted">(no longer stored)</span></li>;
  return (
    <li>
      {label}: <a href={href({ name: "notification", id: m.id })}>{m.title ?? m.id}</a>{" "}
      <StatusBadge value={m.status} /> <span className="muted small">{m.role}</span>
    </li>
  );
}

export function summarise(ev: TimelineEntry): string {
  const p = ev.payload ?? {};
  switch (ev.kind) {
    case "CHANNEL_ATTEMPT_RESULT": {
      const m = (p.metadata ?? {}) as Record<string, unknown>;  // a person's contact method (dispatch.people)
      const via = typeof m.user === "string" ? ` (${m.user} by ${String(m.kind ?? "contact method")})` : "";
      return `${p.channel}${via}: ${p.success ? "succeeded" : `failed — ${p.error ?? "no detail"}`}`;
    }
    case "ONCALL_RESOLVED": {
      const people = (p.people as { user: string; source: string; contact_methods?: unknown[] }[] | undefined) ?? [];
      return people.length
        ? `${p.target} paged ${people.map((x) => `${x.user} (${x.source}, ${x.contact_methods?.length ?? 0} contact method${x.contact_methods?.length === 1 ? "" : "s"})`).join(", ")}`
        : `${p.target} paged nobody${p.reason ? `: ${p.reason}` : ""}`;
    }
    case "DELIVERY_RESULT":
      return `${p.status}${p.dead_letter ? " (dead-lettered)" : ""} after attempt ${p.attempt} (cycle ${p.cycle})`;
    case "ACKED":
    case "DISMISSED":
    case "TIMED_OUT":
      return closedBy(p.metadata) ? `closed with the escalation chain${ev.kind === "TIMED_OUT" ? " (it ran out)" : ` by ${p.actor}`}`
        : ev.kind === "TIMED_OUT" ? "nobody responded before the deadline" : p.actor ? `by ${p.actor}` : "";
    case "REPLAY_REQUESTED":
    case "FAILURE_RESOLVED":
    case "SNOOZED":
      return p.actor ? `by ${p.actor}` : "";
    case "ESCALATED":
      return `level ${p.level ?? 1} to ${((p.channels as string[] | undefined) ?? [p.target]).join(", ")}${p.actor ? ` by ${p.actor}` : ""}`;
    case "ESCALATION_FAILED":
      return `level ${p.level ?? 1} could not be sent: ${p.code ?? "refused"}`;
    case "ESCALATION_STOPPED":
      return `${p.response} by ${p.actor} at level ${p.level}`;
    case "ESCALATION_EXHAUSTED":
      return `every level fired (${p.levels} levels), nobody responded`;
    case "ATTEMPT_STARTED":
      return `attempt ${p.attempt} (cycle ${p.cycle}, try ${p.cycle_attempt} of this cycle)`;
    case "CHANNEL_ATTEMPT_STARTED":
      return `${p.channel}`;
    case "ACCEPTED":
      return `policy ${p.policy_id} revision ${p.revision}`;
    case "APPROVAL_SETTLED":
      return `approval ${p.state} by ${p.decided_by}`;
    case "SILENCED":
      return `${p.scope} held by silence ${p.silence_id} (${p.comment ?? ""}) until ${formatLocal(Number(p.until))}`;
    case "DELIVERY_WITHHELD":
      return `not sent: ${p.reason === "resolved_before_delivery" ? "its source resolved it first" : "held by a silence, stale when it ended"}`;
    case "RESPONSE_BEFORE_DELIVERY":
      return `${p.resolved ? "resolved" : "acknowledged"} by ${p.actor} before delivery`;
    default:
      return "";
  }
}

/** The chain event that closed an escalation (``escalation_closed`` in its response metadata), or null. */
function closedBy(metadata: unknown): string | null {
  const m = metadata as Record<string, unknown> | null | undefined;
  return m && typeof m.escalation_closed === "string" ? m.escalation_closed : null;
}

/** The State card's response line: a timeout is nobody's response, and an escalation its chain
 * closed says so rather than naming a responder who never saw it. */
export function responseFact(d: { ack_status: string | null; actor: string | null; response_metadata?: unknown }):
  { term: string; text: string | null } {
  const closed = closedBy(d.response_metadata);
  if (d.ack_status === "TIMED_OUT") {
    return { term: "Timed out", text: closed ? "the escalation chain ran out" : "nobody responded before the deadline" };
  }
  if (!d.actor) return { term: "Responded", text: null };
  if (closed) return { term: "Closed", text: `with the escalation chain, ${d.ack_status === "DISMISSED" ? "dismissed" : "acknowledged"} by ${d.actor}` };
  return { term: "Responded", text: d.actor };
}

/** The latest event of ``kind`` on a timeline (oldest first), or undefined. */
function latestOf(timeline: TimelineEntry[], kind: string): TimelineEntry | undefined {
  for (let i = timeline.length - 1; i >= 0; i--) if (timeline[i].kind === kind) return timeline[i];
  return undefined;
}

/** The acknowledgement line when there is no ack status: whether one is required at all, and if so
 *  why none is awaited yet (it starts at delivery: ``ack_status`` stays null until then). */
export function ackAbsence(d: { status: string; request?: Record<string, unknown> | null }): string {
  if (!d.request?.require_ack) return "not required";
  return d.status === "PENDING" ? "required once delivered" : "required, never delivered";
}

/** What the notification's place in its dedup group means, as a sentence. */
export function roleSentence(role: string): string {
  if (role === "leader") return "This notification leads its duplicate group: it delivers for the group";
  if (role === "follower") return "This notification follows the group's leader, which delivers for it";
  if (role === "deduplicated") return "This notification was deduplicated: the group's leader delivered for it";
  return `This notification's role in the group is ${role}`;
}

/** One notification's events come in short bursts: re-read 250 ms after the last, at least every second. */
const DETAIL_REFRESH = { waitMs: 250, maxWaitMs: 1000 };

export function NotificationDetail({ id }: { id: string }) {
  const path = `/ui/notifications/${encodeURIComponent(id)}`;
  const { data, error, refresh, setData } = useReadModel<DetailWithChain>(path);
  const [flash, setFlash] = useState<string | null>(null);
  const [silencing, setSilencing] = useState(false);
  const { me } = useConsole();

  function onEvent(ev: TimelineEvent) {
    if (ev.notification_id && ev.notification_id !== id) return false;
    // Show the event at once; the re-read that follows brings the derived fields.
    setData((d) => (d.timeline.some((t) => t.id === ev.id)
      ? d
      : { ...d, timeline: [...d.timeline, { id: ev.id, kind: ev.kind, at: ev.at, at_iso: ev.at_iso ?? "", payload: ev.payload }] }));
  }
  const { live, request, flush } = useLiveRefresh({ notification_id: id }, refresh, { onEvent, options: DETAIL_REFRESH });

  function done(result: ActionResult) {
    // Only what was done: the badges above show the state live (a "Status: PENDING" here went
    // stale beside "DELIVERED" once the replay delivered).
    setFlash(`${result.label}.`);
    flush();
  }

  if (error && !data) return <ProblemMessage explanation={error} />;
  if (!data) return <p aria-busy="true">Loading…</p>;
  const failed = data.outcome.error_message || data.channels.some((c) => c.last && !c.last.success);
  // A dead letter an operator resolved (FAILURE_RESOLVED, still FAILED, out of the DLQ) reads as
  // settled on purpose, not as a live failure.
  const resolution = data.status === "FAILED" && !data.dead_letter
    ? latestOf(data.timeline, "FAILURE_RESOLVED") : undefined;
  // Never sent (DELIVERY_WITHHELD: its source resolved it first, or a silence held it until stale).
  const withheld = data.status === "FAILED" && !data.dead_letter && !resolution
    ? latestOf(data.timeline, "DELIVERY_WITHHELD") : undefined;
  // A pending page a silence holds says so (SILENCED, until a time still ahead), with the silence.
  const held = data.status === "PENDING" ? latestOf(data.timeline, "SILENCED") : undefined;
  const silence = held && Number(held.payload?.until) > Date.now() / 1000
    ? { until: Number(held.payload?.until), id: String(held.payload?.silence_id ?? ""),
        comment: held.payload?.comment ? String(held.payload.comment) : null } : null;
  const body = typeof data.request?.body === "string" ? data.request.body.trim() : "";
  // A follower's channels are delivered by its group's leader, not by attempts of its own.
  const coveredBy = data.dedup !== null && data.dedup.role !== "leader";
  return (
    <article aria-labelledby="n-title">
      <div className="view-head">
        <h1 id="n-title">{data.title}</h1>
        <LiveIndicator state={live} />
      </div>
      <p className="badges">
        <span>Status <DeliveryState status={data.status} deadLetter={data.dead_letter} resolved={resolution !== undefined}
          withheld={withheld !== undefined} /></span>
        <span>Acknowledgement {data.ack_status ? <StatusBadge value={data.ack_status} /> : (
          <span className="muted" data-testid="ack-none">{ackAbsence(data)}</span>)}</span>
        {silence ? (
          <span data-testid="silenced">
            <span className="badge badge-neutral">SILENCED</span> until <Time epoch={silence.until} />{" "}
            (<a href={href({ name: "silences" })}>silence {silence.comment ? `“${silence.comment}”` : silence.id.slice(0, 8)}</a>)
          </span>
        ) : null}
        <span className="muted small">id <code>{data.id}</code></span>
      </p>
      {flash ? <p className="flash" role="status">{flash}</p> : null}
      <ProblemMessage explanation={error} />
      <NotificationActions target={{ ...data, can_escalate: data.escalation?.can_escalate ?? false,
        asApproval: approvalOf(data.request) ? "elsewhere" : undefined }}
        onDone={done} onRefused={request} compact />
      <ApprovalRequest target={data} onDone={done} onRefused={request} />
      {me.capabilities.operate_dlq && !silencing && !approvalOf(data.request) ? (
        <p><button type="button" className="secondary" onClick={() => setSilencing(true)}>Silence similar…</button></p>
      ) : null}
      {silencing ? (
        <SilenceForm
          initial={matchersFrom({ source: data.source, severity: data.severity,
            dedup_key: (data.request as { dedup_key?: string | null } | null)?.dedup_key ?? null })}
          onCancel={() => setSilencing(false)}
          onCreated={(s) => { setSilencing(false); setFlash(silenceCreated(s)); flush(); }} />
      ) : null}
      {data.escalated_from ? (
        <p className="muted small" data-testid="escalated-from">
          Escalation (level {data.escalated_from.level}) of{" "}
          <a href={href({ name: "notification", id: data.escalated_from.id })}>the original notification</a>.
        </p>
      ) : null}

      {body ? (
        <section className="card" aria-labelledby="h-body">
          <h2 id="h-body">Message</h2>
          <div data-testid="notification-body"><LinkedText text={body} /></div>
        </section>
      ) : null}

      <section className="card" aria-labelledby="h-state">
        <h2 id="h-state">State</h2>
        <dl className="facts">
          <div><dt>Source</dt><dd>{data.source}</dd></div>
          <div><dt>Severity</dt><dd><StatusBadge value={data.severity} /></dd></div>
          <div><dt>Producer</dt><dd>{data.principal}</dd></div>
          <div><dt>Attempts</dt><dd>{data.attempts} in total; {data.cycle_attempts}{data.max_attempts ? ` of ${data.max_attempts}` : ""} in cycle {data.cycle}</dd></div>
          <div><dt>Delivered</dt><dd><Time epoch={data.delivered_at} /></dd></div>
          <div><dt>Deadline</dt><dd><Time epoch={data.deadline} /></dd></div>
          {(() => {
            const fact = responseFact(data);
            return <div><dt>{fact.term}</dt><dd data-testid="response-fact">{fact.text ? <>{fact.text}, <Time epoch={data.responded_at} /></> : "—"}</dd></div>;
          })()}
          {data.status === "PENDING" ? <div><dt>Next attempt</dt><dd><Time epoch={data.next_attempt} /></dd></div> : null}
        </dl>
      </section>

      {data.escalation ? <EscalationChain chain={data.escalation} /> : null}

      {failed ? (
        <section className={`card ${resolution || withheld ? "resolved" : "warn"}`} aria-labelledby="h-why">
          <h2 id="h-why">{withheld ? "Why it was not sent" : `Why it failed${resolution ? " (resolved)" : ""}`}</h2>
          {resolution ? (
            <p data-testid="resolved-by">
              Resolved by {String(resolution.payload?.actor ?? "an operator")} <Time epoch={resolution.at} />: UNS
              stopped trying to deliver it; it is no longer in the dead-letter queue.
            </p>
          ) : null}
          <p data-testid="failure-reason">{data.outcome.error_message ?? "A channel attempt failed."}</p>
          {data.failure_hint ? <p className="hint" data-testid="failure-hint">{data.failure_hint}</p> : null}
          {data.replay_blocker ? <p className="blocked">Replay is blocked: {data.replay_blocker.explanation}</p> : null}
        </section>
      ) : null}

      <section className="card" aria-labelledby="h-channels">
        <h2 id="h-channels">Channels</h2>
        {data.channels.length === 0 ? <p className="muted">No channel attempts yet.</p> : (
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Attempts per channel</caption>
              <thead><tr><th scope="col">Channel</th><th scope="col">Attempt</th><th scope="col">When</th><th scope="col">Result</th></tr></thead>
              <tbody>
                {data.channels.flatMap((c) => (c.attempts.length ? c.attempts : [null]).map((a, i, all) => (
                  <tr key={`${c.channel}-${i}`}>
                    {i === 0 ? <th scope="rowgroup" rowSpan={all.length}>{c.channel}</th> : null}
                    <td>{a ? `${a.attempt} (cycle ${a.cycle})` : "—"}</td>
                    <td>{a ? <Time epoch={a.at} /> : coveredBy ? `covered by the leader` : "not attempted"}</td>
                    <td>{a ? (a.success ? <span className="ok">delivered</span> : <span className="bad">{a.error ?? "failed"}{a.retryable === false ? " (permanent)" : ""}</span>) : ""}</td>
                  </tr>
                )))}
              </tbody>
            </table>
          </div>
        )}
      </section>

      <section className="card" aria-labelledby="h-policy">
        <h2 id="h-policy">Policy</h2>
        <p>
          Policy <strong>{data.resolution.policy_id}</strong> at revision <strong>{data.resolution.revision}</strong>:{" "}
          <span data-testid="policy-why">{data.resolution.why}</span>.
        </p>
        <details>
          <summary>Effective settings</summary>
          <Json value={data.resolution.effective} label="Effective settings (JSON)" />
        </details>
      </section>

      {data.dedup ? (
        <section className="card" aria-labelledby="h-dedup">
          <h2 id="h-dedup">Duplicate group</h2>
          <p className="muted small" data-testid="dedup-role">{roleSentence(data.dedup.role)} (generation {data.dedup.generation}).</p>
          <ul>
            <Member m={data.dedup.leader} label="Leader" />
            {data.dedup.followers.map((f) => <Member key={f.id} m={f} label="Follower" />)}
            {data.dedup.successor ? <Member m={data.dedup.successor} label="Successor" /> : null}
          </ul>
        </section>
      ) : null}

      <section className="card" aria-labelledby="h-request">
        <h2 id="h-request">Request</h2>
        <Json value={data.request} label="Request (JSON)" />
      </section>

      <section className="card" aria-labelledby="h-timeline">
        <h2 id="h-timeline">Timeline</h2>
        <ol className="timeline" aria-label="Timeline events" data-testid="timeline">
          {data.timeline.map((ev) => (
            <li key={ev.id} data-kind={ev.kind} data-status={String(ev.payload?.status ?? "")}>
              <Time epoch={ev.at} /> <strong>{ev.kind}</strong> <span>{summarise(ev)}</span>
              <details><summary className="small">payload</summary><Json value={ev.payload} label={`${ev.kind} payload (JSON)`} /></details>
            </li>
          ))}
        </ol>
      </section>
    </article>
  );
}

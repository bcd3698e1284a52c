import { useId, useState } from "react";
import { actions, SNOOZE_CHOICES } from "../actions";
import { useConsole } from "../context";
import { explainError, type Explanation } from "../problems";
import { MAX_REASON_LENGTH } from "../generated/limits";
import { Confirm } from "./Confirm";
import { ProblemMessage } from "./ProblemMessage";

export interface ActionTarget {
  id: string;
  title: string;
  status: string;
  ack_status: string | null;
  dead_letter: boolean;
  /** From the read model (``runtime.escalation.can_escalate``): false when the policy names no
   *  escalation chain or a response stopped it; Escalate is offered only when true. */
  can_escalate?: boolean;
  /** A governance approval is decided, not acknowledged: "buttons" offers Approve / Deny in place
   *  of ACK / Dismiss / Snooze (the inbox); "elsewhere" offers no response here because the view
   *  shows the approval's own Approve / Deny (the detail page's ApprovalRequest). */
  asApproval?: "buttons" | "elsewhere";
}

// The server's limit of an escalation reason (runtime.schemas.MAX_REASON_LENGTH, generated).
export { MAX_REASON_LENGTH };

/** The buttons a user may press for one notification in its current state. A refusal is shown
 *  beside them in plain words; a success goes to ``onDone`` for the view to announce. */
export type ActionResult = { label: string; title: string; status?: string; ack_status?: string | null };

export function NotificationActions({ target, onDone, onRefused, compact = false }: {
  target: ActionTarget;
  onDone: (result: ActionResult) => void;
  /** A refusal usually means the state moved on (409): the view re-reads its read model. */
  onRefused?: () => void;
  compact?: boolean;
}) {
  const { api, me } = useConsole();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [snooze, setSnooze] = useState(String(SNOOZE_CHOICES[1].seconds));
  const [escalating, setEscalating] = useState(false);
  const [reason, setReason] = useState("");
  const [confirmResolve, setConfirmResolve] = useState(false);
  const ids = useId();
  const pending = me.capabilities.respond && target.ack_status === "PENDING";
  const canRespond = pending && !target.asApproval;
  const canDecide = pending && target.asApproval === "buttons";
  // Escalate jumps to the next level of the chain, also after the deadline passed (TIMED_OUT).
  const canEscalate = me.capabilities.respond && target.can_escalate === true;
  const canOperate = me.capabilities.operate_dlq && target.status === "FAILED" && target.dead_letter;
  if (!canRespond && !canDecide && !canEscalate && !canOperate && !problem) return null;

  async function run(label: string, fn: () => Promise<{ status?: string; ack_status?: string | null }>) {
    setBusy(true);
    setProblem(null);
    try {
      const body = await fn();
      setEscalating(false);
      setConfirmResolve(false);
      onDone({ label, title: target.title, status: body.status, ack_status: body.ack_status });
    } catch (err) {
      setProblem(explainError(err));
      onRefused?.();
    } finally {
      setBusy(false);
    }
  }

  // In a list, the accessible name is the visible verb and then the item's title: it starts with
  // what the button says (WCAG 2.5.3 label in name, axe's label-content-name-mismatch) and still
  // tells one row's "Acknowledge" from the next.
  const name = (verb: string) => (compact ? undefined : `${verb} ${target.title}`);
  return (
    <div className="actions" aria-label={`Actions for ${target.title}`} role="group">
      {canRespond ? (
        <>
          <button type="button" className="btn-primary" disabled={busy}
            onClick={() => run("Acknowledged", () => actions.ack(api, target.id))} aria-label={name("Acknowledge")}>Acknowledge</button>
          <button type="button" className="btn-secondary" disabled={busy}
            onClick={() => run("Dismissed", () => actions.dismiss(api, target.id))} aria-label={name("Dismiss")}>Dismiss</button>
          <span className="inline-field">
            <label htmlFor={`${ids}-snooze`} className="visually-hidden">Snooze for</label>
            <select id={`${ids}-snooze`} value={snooze} onChange={(e) => setSnooze(e.target.value)} disabled={busy}>
              {SNOOZE_CHOICES.map((c) => <option key={c.seconds} value={c.seconds}>{c.label}</option>)}
            </select>
            <button type="button" className="btn-secondary" disabled={busy}
              onClick={() => run("Snoozed", () => actions.snooze(api, target.id, Number(snooze)))} aria-label={name("Snooze")}>Snooze</button>
          </span>
        </>
      ) : null}
      {canDecide ? (
        <>
          <button type="button" className="btn-primary" disabled={busy} data-action="approve"
            onClick={() => run("Approved", () => actions.approve(api, target.id))} aria-label={name("Approve")}>Approve</button>
          <button type="button" className="btn-danger" disabled={busy}
            onClick={() => run("Denied", () => actions.dismiss(api, target.id))} aria-label={name("Deny")}>Deny</button>
        </>
      ) : null}
      {canEscalate ? (
        escalating ? (
          <form className="inline-field" onSubmit={(e) => { e.preventDefault(); void run("Escalated", () => actions.escalate(api, target.id, reason)); }}>
            <label htmlFor={`${ids}-reason`}>Reason</label>
            <input id={`${ids}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} required maxLength={MAX_REASON_LENGTH} />
            <button type="submit" className="btn-primary" disabled={busy || !reason.trim()}>Send escalation</button>
            <button type="button" className="secondary" onClick={() => setEscalating(false)}>Cancel</button>
          </form>
        ) : (
          <button type="button" className="btn-secondary" onClick={() => setEscalating(true)} disabled={busy}
            title="Send to the next level of the escalation chain" aria-label={name("Escalate")}>Escalate…</button>
        )
      ) : null}
      {canOperate ? (
        <>
          <button type="button" className="btn-primary" disabled={busy}
            onClick={() => run("Replay requested", () => actions.replay(api, target.id))} aria-label={name("Replay")}>Replay</button>
          <button type="button" className="btn-danger" onClick={() => setConfirmResolve(true)} disabled={busy || confirmResolve}
            aria-label={name("Resolve")}>Resolve…</button>
          {confirmResolve ? (
            <Confirm title={`Resolve “${target.title}”?`} confirmLabel="Resolve" danger busy={busy}
              onConfirm={() => void run("Resolved", () => actions.resolve(api, target.id))}
              onCancel={() => setConfirmResolve(false)}>
              <p>It leaves the dead-letter queue for good: UNS stops trying to deliver it. This cannot be undone (replay is no longer offered).</p>
            </Confirm>
          ) : null}
        </>
      ) : null}
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
    </div>
  );
}

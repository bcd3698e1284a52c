import { useState } from "react";
import { actions } from "../actions";
import { useConsole } from "../context";
import { explainError, type Explanation } from "../problems";
import { ProblemMessage } from "./ProblemMessage";

/** What a governance approval notification carries in ``metadata.uns_governance``
 *  (policies/governance/bridge.py). Local to this component. */
export interface ApprovalInfo {
  decision_id: string;
  action: string;
  resource?: string | null;
  risk?: string | null;
  intent?: string | null;
  agent_id?: string | null;
  reason?: string | null;
  context?: Record<string, unknown>;
  approvals_required?: number;
  rule?: string | null;
}

/** The approval a notification's request carries, or null for any other notification. */
export function approvalOf(request: Record<string, unknown> | undefined): ApprovalInfo | null {
  const meta = request?.metadata as Record<string, unknown> | undefined;
  const gov = meta?.uns_governance as ApprovalInfo | undefined;
  return gov && typeof gov.decision_id === "string" && typeof gov.action === "string" ? gov : null;
}

/** An agent's request for approval: the action and its context, and Approve (an ACK with
 *  approve: true) / Deny (dismiss) for responders while the notification awaits a response. */
export function ApprovalRequest({ target, onDone, onRefused }: {
  target: { id: string; title: string; ack_status: string | null; request: Record<string, unknown>; principal?: string };
  onDone: (result: { label: string; title: string; ack_status?: string | null }) => void;
  onRefused?: () => void;
}) {
  const { api, me } = useConsole();
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const approval = approvalOf(target.request);
  if (!approval) return null;
  const canDecide = me.capabilities.respond && target.ack_status === "PENDING";

  async function run(label: string, fn: () => Promise<{ ack_status?: string | null }>) {
    setBusy(true);
    setProblem(null);
    try {
      const body = await fn();
      onDone({ label, title: target.title, ack_status: body.ack_status });
    } catch (err) {
      setProblem(explainError(err));
      onRefused?.();
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card" aria-labelledby="h-approval" data-testid="approval">
      <h2 id="h-approval">Approval request</h2>
      <dl className="facts">
        <div><dt>Action</dt><dd><code>{approval.action}</code></dd></div>
        {approval.resource ? <div><dt>Resource</dt><dd><code>{approval.resource}</code></dd></div> : null}
        <div><dt>Declared risk</dt><dd>{approval.risk ?? "—"}</dd></div>
        {target.principal ? <div><dt>Asked by</dt><dd>{target.principal}</dd></div> : null}
        {approval.agent_id ? <div><dt>Agent</dt><dd>{approval.agent_id}</dd></div> : null}
        {approval.reason ? <div><dt>Reason</dt><dd>{approval.reason}</dd></div> : null}
        {approval.rule ? <div><dt>Rule</dt><dd>{approval.rule}</dd></div> : null}
        {approval.approvals_required && approval.approvals_required > 1
          ? <div><dt>Approvals needed</dt><dd>{approval.approvals_required} different responders</dd></div> : null}
        <div><dt>Decision</dt><dd><code>{approval.decision_id}</code></dd></div>
      </dl>
      <h3>Context</h3>
      <pre className="json">{JSON.stringify(approval.context ?? {}, null, 2)}</pre>
      <p className="muted small">Approve lets the agent act; Deny refuses; no answer before the deadline denies.</p>
      {canDecide ? (
        <div className="actions" role="group" aria-label={`Approval of ${approval.action}`}>
          <button type="button" className="btn-primary" disabled={busy} onClick={() => run("Approved", () => actions.approve(api, target.id))}>
            Approve</button>
          <button type="button" disabled={busy} className="btn-danger"
            onClick={() => run("Denied", () => actions.dismiss(api, target.id))}>Deny</button>
        </div>
      ) : null}
      <ProblemMessage explanation={problem} />
    </section>
  );
}

/** One line for a list row (the inbox): what the agent asks to do. */
export function ApprovalLine({ approval, requester }: { approval: ApprovalInfo | null | undefined; requester?: string }) {
  if (!approval) return null;
  return (
    <span className="meta" data-testid="approval-line">
      Approval: <code>{approval.action}</code>
      {approval.resource ? <> on <code>{approval.resource}</code></> : null}
      {approval.risk ? ` · ${approval.risk} risk` : ""}
      {approval.agent_id ? ` · agent ${approval.agent_id}` : ""}
      {requester ? ` · asked by ${requester}` : ""}
      {approval.context && Object.keys(approval.context).length ? <> · <code>{JSON.stringify(approval.context)}</code></> : null}
    </span>
  );
}

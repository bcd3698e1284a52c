import { useState } from "react";
import { actions, type PolicyVerb } from "../actions";
import { StatusBadge } from "../components/Badge";
import { Confirm } from "../components/Confirm";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useReadModel } from "../hooks";
import { explainError, type Explanation } from "../problems";
import type { ActivationPreview, Policies as PoliciesModel, PolicyDiff, PolicyVersion } from "../types";

const VERB_LABEL: Record<string, string> = { activate: "Activate", retire: "Retire", clone: "Clone to draft" };

function DiffLines({ diff }: { diff: PolicyDiff }) {
  if (diff.identical) return <p>v{diff.from} and v{diff.to} have identical content.</p>;
  return (
    <pre className="json diff-lines" aria-label={`Diff of v${diff.from} and v${diff.to}`}>
      {diff.lines.map((line, i) => (
        <span key={i} className={line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : ""}>
          {line}{"\n"}
        </span>
      ))}
    </pre>
  );
}

function outcome(o: ActivationPreview["simulation"]["samples"][number]["before"]): string {
  if (o.error) return `refused (${o.error})`;
  return `${o.policy_id} v${o.policy_version}, ${o.rule ? `rule “${o.rule}”` : "defaults"}`;
}

/** Before Activate: the diff against the ACTIVE version and recent requests resolved before
 *  and after, then a confirmation. Activation changes routing for all new traffic. */
function ActivateConfirm({ v, busy, onConfirm, onCancel }: {
  v: PolicyVersion; busy: boolean; onConfirm: () => void; onCancel: () => void;
}) {
  const { data: preview, error: problem } = useReadModel<ActivationPreview>(
    `/ui/policies/${encodeURIComponent(v.policy_id)}/versions/${v.version}/activation-preview`);
  const samples = preview?.simulation.samples ?? [];
  return (
    <Confirm title={`Activate ${v.policy_id} v${v.version}?`} confirmLabel={`Activate v${v.version}`} busy={busy || !preview}
      onConfirm={onConfirm} onCancel={onCancel}>
      <p>It changes routing for all new notifications at once{preview?.active_version ? `, replacing v${preview.active_version}` : ""}.</p>
      <ProblemMessage explanation={problem} />
      {preview ? (
        <>
          <h3>Changes against the active version</h3>
          {preview.diff ? <DiffLines diff={preview.diff} /> : <p className="muted">No active version to compare with.</p>}
          <h3>Recent requests, simulated</h3>
          {samples.length === 0 ? <p className="muted">No recent requests to simulate.</p> : (
            <>
              <p data-testid="simulation-summary">{preview.simulation.changed} of {samples.length} recent requests would be routed differently.</p>
              <div className="table-wrap">
                <table>
                  <caption className="visually-hidden">Simulated requests</caption>
                  <thead><tr><th scope="col">Request</th><th scope="col">Now</th><th scope="col">After activation</th></tr></thead>
                  <tbody>
                    {samples.map((s, i) => (
                      <tr key={i} className={s.changed ? "changed" : ""} data-changed={s.changed}>
                        <th scope="row">{String(s.request.source ?? "")}: {String(s.request.title ?? "")} <span className="muted small">{String(s.request.severity ?? "")}</span></th>
                        <td>{outcome(s.before)}</td>
                        <td>{outcome(s.after)}{s.changed ? <strong> (changes)</strong> : null}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </>
      ) : problem ? null : <p aria-busy="true">Simulating…</p>}
    </Confirm>
  );
}

function DiffView({ policyId, versions }: { policyId: string; versions: PolicyVersion[] }) {
  const [from, setFrom] = useState(versions.length > 1 ? versions[1].version : versions[0]?.version);
  const [to, setTo] = useState(versions[0]?.version);
  // The pair last asked for with "Show diff" (changing the selects alone reads nothing).
  const [shown, setShown] = useState<{ from: number; to: number } | null>(null);
  const { data: diff, error: problem } = useReadModel<PolicyDiff>(
    shown ? `/ui/policies/${encodeURIComponent(policyId)}/diff?from=${shown.from}&to=${shown.to}` : null);
  if (versions.length < 2) return null;
  const id = `diff-${policyId}`;
  return (
    <div className="diff">
      <div className="inline-field">
        <label htmlFor={`${id}-from`}>Compare version</label>
        <select id={`${id}-from`} value={from} onChange={(e) => setFrom(Number(e.target.value))}>
          {versions.map((v) => <option key={v.version} value={v.version}>v{v.version} ({v.status})</option>)}
        </select>
        <label htmlFor={`${id}-to`}>with</label>
        <select id={`${id}-to`} value={to} onChange={(e) => setTo(Number(e.target.value))}>
          {versions.map((v) => <option key={v.version} value={v.version}>v{v.version} ({v.status})</option>)}
        </select>
        <button type="button" className="secondary" onClick={() => setShown({ from, to })}>Show diff</button>
      </div>
      <ProblemMessage explanation={problem} />
      {diff ? <DiffLines diff={diff} /> : null}
    </div>
  );
}

export function Policies() {
  const { api, me } = useConsole();
  const { data, error, refresh } = useReadModel<PoliciesModel>("/ui/policies");
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [activating, setActivating] = useState<PolicyVersion | null>(null);

  async function transition(v: PolicyVersion, verb: PolicyVerb) {
    setBusy(true);
    setProblem(null);
    setFlash(null);
    try {
      await actions.policy(api, v.policy_id, v.version, verb);
      setFlash(`${VERB_LABEL[verb] ?? verb}: ${v.policy_id} v${v.version} done.`);
      refresh().catch(() => undefined); // a failed re-read shows as the read model's error
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
      setActivating(null);
    }
  }

  return (
    <>
      <div className="view-head"><h1>Policies</h1></div>
      <ProblemMessage explanation={error} />
      {flash ? <p className="flash" role="status">{flash}</p> : null}
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
      {data && !data.available ? <p className="notice">{data.note ?? "The policy store is not available."}</p> : null}
      {data?.current_revision ? (
        <p>Current revision <strong>{data.current_revision.revision}</strong>, set by {data.current_revision.updated_by}{" "}
          <Time epoch={data.current_revision.updated_at} />.</p>
      ) : null}
      {data && data.policies.length === 0 ? <p className="empty">No policy versions are stored yet; the bootstrap default policy applies.</p> : null}
      {data?.policies.map((p) => (
        <section className="card" key={p.policy_id} aria-labelledby={`h-p-${p.policy_id}`}>
          <h2 id={`h-p-${p.policy_id}`}>{p.policy_id} {p.active_version ? <span className="muted small">active: v{p.active_version}</span> : null}</h2>
          <div className="table-wrap">
            <table>
              <caption className="visually-hidden">Versions of {p.policy_id}</caption>
              <thead><tr><th scope="col">Version</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Activated</th><th scope="col">Retired</th><th scope="col">Content</th>{me.capabilities.manage_policies ? <th scope="col">Actions</th> : null}</tr></thead>
              <tbody>
                {p.versions.map((v) => (
                  <tr key={v.version}>
                    <th scope="row">v{v.version}{v.description ? <div className="muted small">{v.description}</div> : null}</th>
                    <td><StatusBadge value={v.status} /></td>
                    <td><Time epoch={v.created_at} /> <span className="muted small">{v.created_by}</span></td>
                    <td>{v.activated_at ? <><Time epoch={v.activated_at} /> <span className="muted small">{v.activated_by}</span></> : "—"}</td>
                    <td>{v.retired_at ? <><Time epoch={v.retired_at} /> <span className="muted small">{v.retired_by}</span></> : "—"}</td>
                    <td><details><summary><code>{v.content_hash?.slice(0, 12) ?? "—"}</code></summary><pre className="json">{JSON.stringify(v.content, null, 2)}</pre></details></td>
                    {me.capabilities.manage_policies ? (
                      <td className="actions">
                        {v.transitions.map((verb) => (
                          <button key={verb} type="button" className={verb === "activate" ? "btn-primary" : verb === "retire" ? "btn-danger" : "btn-secondary"} disabled={busy}
                            onClick={() => (verb === "activate" ? setActivating(v) : void transition(v, verb))} aria-label={`${VERB_LABEL[verb] ?? verb} ${p.policy_id} v${v.version}`}>
                            {VERB_LABEL[verb] ?? verb}
                          </button>
                        ))}
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {activating && activating.policy_id === p.policy_id ? (
            <ActivateConfirm v={activating} busy={busy} onConfirm={() => void transition(activating, "activate")}
              onCancel={() => setActivating(null)} />
          ) : null}
          <DiffView policyId={p.policy_id} versions={p.versions} />
        </section>
      ))}
      {data && data.revisions.length ? (
        <section className="card" aria-labelledby="h-revisions">
          <h2 id="h-revisions">Revisions</h2>
          <ol className="plain">
            {data.revisions.map((r) => (
              <li key={r.revision}>Revision {r.revision}: {r.reason} — {r.created_by}, <Time epoch={r.created_at} />;
                active: {r.active.join(", ") || "none"}</li>
            ))}
          </ol>
        </section>
      ) : null}
    </>
  );
}

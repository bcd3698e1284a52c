import { useState } from "react";
import { actions } from "../actions";
import { StatusBadge } from "../components/Badge";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useReadModel } from "../hooks";
import { explainError, type Explanation } from "../problems";
import type { Policies as PoliciesModel, PolicyDiff, PolicyVersion } from "../types";

const VERB_LABEL: Record<string, string> = { activate: "Activate", retire: "Retire", clone: "Clone to draft" };

function DiffView({ policyId, versions }: { policyId: string; versions: PolicyVersion[] }) {
  const { api } = useConsole();
  const [from, setFrom] = useState(versions.length > 1 ? versions[1].version : versions[0]?.version);
  const [to, setTo] = useState(versions[0]?.version);
  const [diff, setDiff] = useState<PolicyDiff | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  if (versions.length < 2) return null;
  async function show() {
    try {
      setDiff(await api.get<PolicyDiff>(`/ui/policies/${encodeURIComponent(policyId)}/diff?from=${from}&to=${to}`));
      setProblem(null);
    } catch (err) {
      setProblem(explainError(err));
    }
  }
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
        <button type="button" className="secondary" onClick={() => void show()}>Show diff</button>
      </div>
      <ProblemMessage explanation={problem} />
      {diff ? (
        diff.identical ? <p>v{diff.from} and v{diff.to} have identical content.</p> : (
          <pre className="json diff-lines" aria-label={`Diff of v${diff.from} and v${diff.to}`}>
            {diff.lines.map((line, i) => (
              <span key={i} className={line.startsWith("+") && !line.startsWith("+++") ? "add" : line.startsWith("-") && !line.startsWith("---") ? "del" : ""}>
                {line}{"\n"}
              </span>
            ))}
          </pre>
        )
      ) : null}
    </div>
  );
}

export function Policies() {
  const { api, me } = useConsole();
  const { data, error, reload } = useReadModel<PoliciesModel>("/ui/policies");
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [flash, setFlash] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function transition(v: PolicyVersion, verb: string) {
    setBusy(true);
    setProblem(null);
    setFlash(null);
    try {
      await actions.policy(api, v.policy_id, v.version, verb);
      setFlash(`${VERB_LABEL[verb] ?? verb}: ${v.policy_id} v${v.version} done.`);
      void reload();
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
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
                          <button key={verb} type="button" className={verb === "retire" ? "secondary" : ""} disabled={busy}
                            onClick={() => void transition(v, verb)} aria-label={`${VERB_LABEL[verb] ?? verb} ${p.policy_id} v${v.version}`}>
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

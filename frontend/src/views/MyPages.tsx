import { useState } from "react";
import { actions } from "../actions";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useReadModel } from "../hooks";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import type { ContactMethod, MyOncall } from "../types";

const STATE: Record<ContactMethod["verification"], { label: string; badge: string }> = {
  VERIFIED: { label: "verified", badge: "badge-delivered" },
  UNVERIFIED: { label: "not verified", badge: "badge-pending" },
  FAILED: { label: "verification failed", badge: "badge-failed" },
};

function Methods({ items, onVerified }: { items: ContactMethod[]; onVerified: () => void }) {
  const { api } = useConsole();
  const [busy, setBusy] = useState<string | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [result, setResult] = useState<string | null>(null);

  async function verify(m: ContactMethod) {
    setBusy(m.id);
    setProblem(null);
    setResult(null);
    try {
      const answer = await actions.verifyContactMethod(api, m.id);
      setResult(answer.success
        ? `Test send through ${m.label || m.kind} succeeded: it is verified.`
        : `Test send through ${m.label || m.kind} failed: ${answer.error ?? "no reason given"}.`);
      onVerified();
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(null);
    }
  }

  return (
    <>
      {result ? <p className="flash" role="status">{result}</p> : null}
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
      {items.length ? (
        <div className="table-wrap">
          <table>
            <caption className="muted small">Tried in this order when you are paged; only verified methods are paged.</caption>
            <thead>
              <tr>
                <th scope="col">Order</th>
                <th scope="col">Method</th>
                <th scope="col">Delivers to</th>
                <th scope="col">State</th>
                <th scope="col">Last test</th>
                <th scope="col"><span className="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {items.map((m) => (
                <tr key={m.id} data-testid={`method-${m.id}`}>
                  <td>{m.position}</td>
                  <th scope="row">{m.label || m.kind}<div className="muted small">{m.kind}</div></th>
                  <td className="small">{m.delivers_to}</td>
                  <td>
                    <span className={`badge ${STATE[m.verification].badge}`}>{STATE[m.verification].label}</span>
                    {m.last_test_error ? <div className="small">{m.last_test_error}</div> : null}
                  </td>
                  <td><Time epoch={m.last_test_at} /></td>
                  <td>
                    <button type="button" className="secondary" disabled={busy !== null} onClick={() => void verify(m)}
                      aria-label={`Send test through ${m.label || m.kind}`}>
                      {busy === m.id ? "Sending…" : "Send test"}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : <p className="muted">You have no contact methods: you cannot be paged. Add one through the API (POST /api/v1/oncall/me/contact-methods).</p>}
    </>
  );
}

/** ``#/my-pages``: the notifications that paged me (the timeline's ONCALL_RESOLVED events naming
 *  me) and my contact methods with their verification state (a test send verifies one). */
export function MyPages() {
  const { data, error, refresh } = useReadModel<MyOncall>("/ui/oncall/me", { refetchInterval: 30_000 });
  return (
    <>
      <div className="view-head">
        <h1>My pages</h1>
      </div>
      <ProblemMessage explanation={error} />
      {data ? (
        <>
          <h2>Pages</h2>
          {data.pages.length ? (
            <div className="table-wrap">
              <table>
                <caption className="muted small">The notifications that paged {data.user}, newest first.</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Notification</th>
                    <th scope="col">Severity</th>
                    <th scope="col">Through</th>
                    <th scope="col">Status</th>
                  </tr>
                </thead>
                <tbody>
                  {data.pages.map((p) => (
                    <tr key={`${p.notification_id}-${p.at}`} data-testid={`page-${p.notification_id}`}>
                      <td><Time epoch={p.at} /></td>
                      <th scope="row"><a href={href({ name: "notification", id: p.notification_id })}>{p.title || p.notification_id}</a></th>
                      <td>{p.severity || <span className="muted">—</span>}</td>
                      <td>{p.target}</td>
                      <td><span className={`badge badge-${p.status.toLowerCase()}`}>{p.status}</span></td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          ) : <p className="muted">Nothing has paged you yet.</p>}
          <h2>My contact methods</h2>
          <Methods items={data.contact_methods} onVerified={() => void refresh().catch(() => undefined)} />
        </>
      ) : null}
    </>
  );
}

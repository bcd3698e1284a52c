import { useState } from "react";
import { actions } from "../actions";
import { Confirm } from "../components/Confirm";
import { ProblemMessage } from "../components/ProblemMessage";
import { SilenceForm, silenceCreated } from "../components/SilenceForm";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { useReadModel } from "../hooks";
import { explainError, type Explanation } from "../problems";
import type { SilenceItem, SilenceMatcher, SilencesModel } from "../types";

export function matcherText(m: SilenceMatcher): string {
  return `${m.name}${m.op}"${m.value}"`;
}

/** What ending ``s`` now means: an active silence expires (what it still holds is released), a
 *  pending one (a maintenance window not yet started) is cancelled and never holds anything. */
function ending(s: SilenceItem) {
  const what = s.matchers.map(matcherText).join(", ");
  if (s.state === "pending") {
    return { button: "Cancel", title: `Cancel the maintenance window ${what}?`, confirm: "Cancel the window",
      body: "It has not started: it will never hold anything.", done: `Maintenance window cancelled: ${what}.` };
  }
  const n = `${s.held} notification${s.held === 1 ? "" : "s"}`;
  return { button: "Expire now", title: `Expire the silence ${what} now?`, confirm: "Expire now",
    body: `It has held ${n}. Whatever it still holds is released now: deliveries still fresh are sent, `
      + "paused ACK deadlines resume and held escalations come due.",
    done: `Silence expired: ${what}.` };
}

function Table({ items, state, canManage, onExpire }: {
  items: SilenceItem[]; state: "active" | "pending" | "expired"; canManage: boolean; onExpire: (s: SilenceItem) => Promise<void>;
}) {
  const [asking, setAsking] = useState<SilenceItem | null>(null);
  const [busy, setBusy] = useState(false);
  const asked = asking ? ending(asking) : null;
  if (!items.length) return <p className="muted">None.</p>;
  return (
    <div className="table-wrap">
      <table data-testid={`silences-${state}`}>
        <caption className="visually-hidden">{state} silences</caption>
        <thead>
          <tr>
            <th scope="col">Matchers</th>
            <th scope="col">Starts</th>
            <th scope="col">Ends</th>
            <th scope="col">Comment</th>
            <th scope="col">Created by</th>
            <th scope="col">Held</th>
            {state !== "expired" && canManage ? <th scope="col"><span className="visually-hidden">Actions</span></th> : null}
          </tr>
        </thead>
        <tbody>
          {items.map((s) => (
            <tr key={s.id} data-testid={`silence-${s.id}`} data-state={s.state}>
              <th scope="row"><code>{s.matchers.map(matcherText).join(", ")}</code></th>
              <td><Time epoch={s.starts_at} /></td>
              <td><Time epoch={s.ends_at} />{s.expired_by ? <span className="muted small"> (expired by {s.expired_by})</span> : null}</td>
              <td>{s.comment}</td>
              <td>{s.created_by}</td>
              <td>{s.held}</td>
              {state !== "expired" && canManage ? (
                <td><button type="button" className="secondary" disabled={asking !== null}
                  onClick={() => setAsking(s)}>{ending(s).button}</button></td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
      {asking && asked ? (
        <Confirm title={asked.title} confirmLabel={asked.confirm} cancelLabel="Keep it" danger={state === "active"} busy={busy}
          onCancel={() => setAsking(null)}
          onConfirm={() => {
            setBusy(true);
            void onExpire(asking).finally(() => { setBusy(false); setAsking(null); });
          }}>
          <p>{asked.body}</p>
        </Confirm>
      ) : null}
    </div>
  );
}

export function Silences() {
  const { api, me } = useConsole();
  const { data, error, refresh } = useReadModel<SilencesModel>("/ui/silences", { refetchInterval: 5000 });
  const [creating, setCreating] = useState(false);
  const [flash, setFlash] = useState<string | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const canManage = me.capabilities.operate_dlq;

  async function expire(s: SilenceItem) {
    setProblem(null);
    try {
      await actions.expireSilence(api, s.id);
      setFlash(ending(s).done);
      await refresh();
    } catch (err) {
      setProblem(explainError(err));
    }
  }

  return (
    <>
      <div className="view-head">
        <h1>Silences</h1>
        {canManage && !creating ? <button type="button" onClick={() => setCreating(true)}>New silence</button> : null}
      </div>
      <p className="muted small">A silence holds the deliveries, escalations and ACK deadlines of the notifications it matches; they are still accepted (All lists them) and Held counts them here. When it ends, only notifications still fresh are sent.</p>
      {flash ? <p className="flash" role="status">{flash}</p> : null}
      <ProblemMessage explanation={error ?? problem} />
      {creating ? (
        <SilenceForm onCancel={() => setCreating(false)} onCreated={(s) => {
          setCreating(false);
          setFlash(silenceCreated(s));
          void refresh();
        }} />
      ) : null}
      {data ? (
        <>
          <section aria-labelledby="h-active"><h2 id="h-active">Active</h2>
            <Table items={data.active} state="active" canManage={canManage} onExpire={expire} /></section>
          <section aria-labelledby="h-pending"><h2 id="h-pending">Pending (maintenance windows)</h2>
            <Table items={data.pending} state="pending" canManage={canManage} onExpire={expire} /></section>
          <section aria-labelledby="h-expired"><h2 id="h-expired">Expired</h2>
            <Table items={data.expired} state="expired" canManage={canManage} onExpire={async () => undefined} /></section>
        </>
      ) : null}
    </>
  );
}

import { useState } from "react";
import { BULK_LABEL, previewBulk, runServerBulk, type BulkActionName, type BulkFilter } from "../bulk";
import { SNOOZE_CHOICES } from "../actions";
import { explainError, explainProblem, type Explanation } from "../problems";
import { useConsole } from "../context";
import { Confirm } from "./Confirm";
import { ProblemMessage } from "./ProblemMessage";
import type { BulkItemResult, BulkProgress } from "../types";

// What each bulk action does, said before it is confirmed.
const CONSEQUENCE: Record<BulkActionName, string> = {
  replay: "Each one starts a new delivery cycle.",
  resolve: "Each one leaves the dead-letter queue for good: UNS stops trying to deliver it. This cannot be undone.",
  ack: "Each one is acknowledged in your name. Approvals among them are skipped: each is decided on its own, with Approve or Deny.",
  snooze: "Each deadline moves to the chosen time from now. Approvals among them are skipped.",
};

interface Pending {
  action: BulkActionName;
  filter: BulkFilter;
  n: number;
  scope: string;
}

/** The selection bar: it appears once rows are selected and holds the bulk actions — "Replay /
 *  Resolve / Acknowledge / Snooze selected (N)…" and, once every shown row is selected, the same
 *  for "all matching" the filter — so the bulk actions never sit above a list as its most
 *  prominent controls. Each is settled by the server (``runServerBulk``) after a confirmation
 *  that shows N; then a result per item (the component stays mounted, the results stay on screen
 *  when the list empties). The first action is the primary one; ``resolve`` is destructive. */
export function BulkActions({ actions, filter, selected, titles, onFinished, onClear, allShownSelected = false,
  allMatching = true }: {
  actions: BulkActionName[];
  /** Offer "all matching": false when the view narrows the list further than the server's filter
   *  can (the DLQ's "Blocked only"), so N would not be what is shown. */
  allMatching?: boolean;
  /** Every shown row is selected: the bar then offers to act on all that match the filter. */
  allShownSelected?: boolean;
  /** The list's current filter: "all matching" acts on what it selects now. */
  filter: BulkFilter;
  /** Ids selected on screen ("… selected" acts on those still matching). */
  selected: string[];
  titles?: Map<string, string>;
  onFinished?: (progress: BulkProgress, results: BulkItemResult[]) => void;
  /** Clears the view's selection ("Clear selection"). */
  onClear?: () => void;
}) {
  const { api } = useConsole();
  const [pending, setPending] = useState<Pending | null>(null);
  const [busy, setBusy] = useState(false);
  const [progress, setProgress] = useState<BulkProgress | null>(null);
  const [results, setResults] = useState<BulkItemResult[] | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [seconds, setSeconds] = useState(String(SNOOZE_CHOICES[1].seconds));

  async function ask(action: BulkActionName, which: "all" | "selected") {
    setProblem(null);
    setResults(null);
    if (which === "selected") {
      const ids = selected ?? [];
      if (ids.length) setPending({ action, filter: { ids }, n: ids.length, scope: "selected" });
      return;
    }
    try {
      const preview = await previewBulk(api, action, filter);
      if (preview.matched === 0) {
        setProblem({ headline: "Nothing matches this filter now.", detail: null, code: null, status: 0, fields: [] });
        return;
      }
      const n = Math.min(preview.matched, preview.max_items);
      const scope = preview.matched > preview.max_items ? `matching (the first ${n} of ${preview.matched})` : "matching";
      setPending({ action, filter, n, scope });
    } catch (err) {
      setProblem(explainError(err));
    }
  }

  async function confirm() {
    if (!pending) return;
    setBusy(true);
    try {
      const out = await runServerBulk(api, {
        action: pending.action, filter: pending.filter, expected: pending.n,
        ...(pending.action === "snooze" ? { seconds: Number(seconds) } : {}),
      }, setProgress);
      setResults(out.results);
      onFinished?.(out.progress, out.results);
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
      setPending(null);
    }
  }

  const label = (a: BulkActionName) => BULK_LABEL[a].verb;
  const weight = (a: BulkActionName) => (a === "resolve" ? "btn-danger" : a === actions[0] ? "btn-primary" : "btn-secondary");
  const n = selected.length;
  return (
    <div className="bulk" role="group" aria-label="Bulk actions">
      {n > 0 && !pending ? (
        <div className="selection-bar" data-testid="selection-bar">
          <strong className="selection-count">{n} selected</strong>
          {actions.includes("snooze") ? (
            <span className="inline-field">
              <label htmlFor="bulk-snooze">Snooze for</label>
              <select id="bulk-snooze" value={seconds} onChange={(e) => setSeconds(e.target.value)} disabled={busy}>
                {SNOOZE_CHOICES.map((c) => <option key={c.seconds} value={c.seconds}>{c.label}</option>)}
              </select>
            </span>
          ) : null}
          {actions.map((a) => (
            <button key={a} type="button" className={weight(a)} disabled={busy} onClick={() => void ask(a, "selected")}>
              {label(a)} selected ({n})…
            </button>
          ))}
          {onClear ? <button type="button" className="link" disabled={busy} onClick={onClear}>Clear selection</button> : null}
          {allMatching && allShownSelected ? (
            <span className="all-matching">
              <span className="muted">Every row shown is selected. Or act on everything this filter matches:</span>
              {actions.map((a) => (
                <button key={a} type="button" className={a === "resolve" ? "btn-danger" : "btn-secondary"} disabled={busy}
                  onClick={() => void ask(a, "all")}>{label(a)} all matching…</button>
              ))}
            </span>
          ) : null}
        </div>
      ) : null}
      {pending ? (
        <Confirm title={`${label(pending.action)} all ${pending.n} ${pending.scope}?`} busy={busy}
          confirmLabel={`${label(pending.action)} ${pending.n}`} danger={pending.action === "resolve"}
          onConfirm={() => void confirm()} onCancel={() => setPending(null)}>
          <p>{CONSEQUENCE[pending.action]} Items that changed meanwhile are refused one by one, with the reason.</p>
        </Confirm>
      ) : null}
      {busy && progress ? (
        <p className="bulk-progress" role="status" data-testid="bulk-progress">
          {label(progress.action)}: {progress.settled + progress.refused} of {progress.total} done…
        </p>
      ) : null}
      <ProblemMessage explanation={problem} onDismiss={() => setProblem(null)} />
      {results && progress ? (
        <section className="card" aria-labelledby="h-bulk" role="status">
          <h2 id="h-bulk">Bulk {label(progress.action).toLowerCase()}: {progress.settled} of {progress.total} settled
            {progress.refused ? `, ${progress.refused} refused` : ""}</h2>
          <ul className="results" data-testid="bulk-results">
            {results.map((r) => (
              <li key={r.ordinal} className={r.result === "settled" ? "ok" : "bad"} data-ok={r.result === "settled"}>
                <strong>{titles?.get(r.notification_id) ?? r.notification_id}</strong>{" "}
                <code className="small">{r.notification_id.slice(0, 8)}</code>:{" "}
                {r.result === "settled" ? BULK_LABEL[progress.action].done : refusal(r)}
              </li>
            ))}
          </ul>
        </section>
      ) : null}
    </div>
  );
}

function refusal(r: BulkItemResult): string {
  if (r.code === "already_settled") return "Already done outside this bulk action.";
  const e = explainProblem({ status: 409, code: r.code ?? undefined, detail: r.detail ?? undefined });
  return e.detail ? `${e.headline} ${e.detail}` : e.headline;
}

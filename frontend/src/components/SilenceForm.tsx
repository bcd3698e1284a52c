import { useEffect, useState } from "react";
import { actions } from "../actions";
import { useConsole } from "../context";
import { MAX_SILENCE_COMMENT_LENGTH } from "../generated/limits";
import { explainError, type Explanation } from "../problems";
import { href } from "../router";
import { formatLocal } from "../time";
import type { SilenceItem, SilencePreview } from "../types";
import { ProblemMessage } from "./ProblemMessage";

export type Op = "=" | "!=" | "=~" | "!~";
export interface MatcherDraft {
  name: string;
  op: Op;
  value: string;
}

export const OPS: Op[] = ["=", "!=", "=~", "!~"];
export const DURATIONS: { label: string; seconds: number }[] = [
  { label: "30 minutes", seconds: 1800 },
  { label: "1 hour", seconds: 3600 },
  { label: "2 hours", seconds: 7200 },
  { label: "4 hours", seconds: 14400 },
  { label: "1 day", seconds: 86400 },
];

/** The note after ``SilenceForm`` created ``s``: until when, in the browser's zone (``formatLocal``). */
export function silenceCreated(s: { ends_at: number }): string {
  return `Silence created until ${formatLocal(s.ends_at)}.`;
}

/** The matchers "Silence similar…" starts from: the notification's own source, severity and
 *  dedup key (when it has one), each an equality. */
export function matchersFrom(n: { source: string; severity?: string | null; dedup_key?: string | null }): MatcherDraft[] {
  const out: MatcherDraft[] = [{ name: "source", op: "=", value: n.source }];
  if (n.severity) out.push({ name: "severity", op: "=", value: n.severity });
  if (n.dedup_key) out.push({ name: "dedup_key", op: "=", value: n.dedup_key });
  return out;
}

/** A new silence: matcher rows, a duration and a comment, with a live preview of the open
 *  notifications it would match now (``POST /api/v1/silences/preview``, re-asked 300 ms after
 *  the last change). Creating calls ``POST /api/v1/silences``; the server validates. */
export function SilenceForm({ initial, onCreated, onCancel }: {
  initial?: MatcherDraft[];
  onCreated: (s: SilenceItem) => void;
  onCancel?: () => void;
}) {
  const { api } = useConsole();
  const [matchers, setMatchers] = useState<MatcherDraft[]>(initial ?? [{ name: "source", op: "=", value: "" }]);
  const [seconds, setSeconds] = useState(String(DURATIONS[1].seconds));
  const [comment, setComment] = useState("");
  const [preview, setPreview] = useState<SilencePreview | null>(null);
  const [previewProblem, setPreviewProblem] = useState<Explanation | null>(null);
  const [problem, setProblem] = useState<Explanation | null>(null);
  const [busy, setBusy] = useState(false);

  const key = JSON.stringify(matchers);
  useEffect(() => {
    let live = true;
    const timer = setTimeout(() => {
      actions.previewSilence(api, matchers).then(
        (p) => { if (live) { setPreview(p as SilencePreview); setPreviewProblem(null); } },
        (err) => { if (live) { setPreview(null); setPreviewProblem(explainError(err)); } },
      );
    }, 300);
    return () => { live = false; clearTimeout(timer); };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [api, key]);

  function change(i: number, part: Partial<MatcherDraft>) {
    setMatchers((ms) => ms.map((m, j) => (j === i ? { ...m, ...part } : m)));
  }

  async function submit(e: React.FormEvent) {
    e.preventDefault();
    setBusy(true);
    setProblem(null);
    try {
      const made = await actions.createSilence(api, { matchers, duration_seconds: Number(seconds), comment });
      onCreated(made as unknown as SilenceItem);
    } catch (err) {
      setProblem(explainError(err));
    } finally {
      setBusy(false);
    }
  }

  return (
    <form className="card silence-form" onSubmit={submit} aria-label="New silence" data-testid="silence-form">
      <fieldset>
        <legend>Matchers (all must match)</legend>
        {matchers.map((m, i) => (
          <div className="matcher" key={i} data-testid={`matcher-${i}`}>
            <label>Field <input value={m.name} onChange={(e) => change(i, { name: e.target.value })}
              aria-label={`Matcher ${i + 1} field`} /></label>
            <label>Operator{" "}
              <select value={m.op} onChange={(e) => change(i, { op: e.target.value as Op })} aria-label={`Matcher ${i + 1} operator`}>
                {OPS.map((op) => <option key={op} value={op}>{op}</option>)}
              </select>
            </label>
            <label>Value <input value={m.value} onChange={(e) => change(i, { value: e.target.value })}
              aria-label={`Matcher ${i + 1} value`} /></label>
            <button type="button" className="secondary" disabled={matchers.length === 1}
              onClick={() => setMatchers((ms) => ms.filter((_, j) => j !== i))} aria-label={`Remove matcher ${i + 1}`}>Remove</button>
          </div>
        ))}
        <button type="button" className="secondary"
          onClick={() => setMatchers((ms) => [...ms, { name: "metadata.", op: "=", value: "" }])}>Add matcher</button>
        <p className="muted small">Fields: source, severity, dedup_key or metadata.&lt;key&gt;; =~ and !~ take a regular expression that must match the whole value.</p>
      </fieldset>
      <label>For{" "}
        <select value={seconds} onChange={(e) => setSeconds(e.target.value)} aria-label="Duration">
          {DURATIONS.map((d) => <option key={d.seconds} value={d.seconds}>{d.label}</option>)}
        </select>
      </label>{" "}
      <label>Comment <input required maxLength={MAX_SILENCE_COMMENT_LENGTH} value={comment} onChange={(e) => setComment(e.target.value)} aria-label="Comment"
        placeholder="why (a ticket, a migration)" /></label>
      <div className="preview" role="status" aria-live="polite" data-testid="silence-preview">
        {previewProblem ? <ProblemMessage explanation={previewProblem} /> : preview ? (
          <>
            <p>Would silence <strong data-testid="silence-preview-count">{preview.matched}</strong> open notification{preview.matched === 1 ? "" : "s"} now
              {preview.complete ? "" : ` (of the newest ${preview.scanned})`}.</p>
            {preview.sample.length ? (
              <ul className="small">
                {preview.sample.map((n) => {
                  const s = n as { id: string; title?: string; source?: string; status?: string };
                  return <li key={s.id}><a href={href({ name: "notification", id: s.id })}>{s.title ?? s.id}</a> <span className="muted">{s.source} · {s.status}</span></li>;
                })}
              </ul>
            ) : null}
          </>
        ) : <p className="muted">Checking what it would match…</p>}
      </div>
      <ProblemMessage explanation={problem} />
      <button type="submit" disabled={busy}>Create silence</button>{" "}
      {onCancel ? <button type="button" className="secondary" onClick={onCancel}>Cancel</button> : null}
    </form>
  );
}

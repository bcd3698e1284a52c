import type { Explanation } from "../problems";

/** A refusal or failure in plain words, announced to screen readers, with what was wrong with
 *  each field the server named. */
export function ProblemMessage({ explanation, onDismiss }: { explanation: Explanation | null; onDismiss?: () => void }) {
  if (!explanation) return null;
  return (
    <div className="problem" role="alert" data-code={explanation.code ?? undefined} data-status={explanation.status}>
      <strong>{explanation.headline}</strong>
      {explanation.detail ? <span className="problem-detail"> {explanation.detail}</span> : null}
      {explanation.fields.length ? (
        <ul className="problem-fields" data-testid="problem-fields">{explanation.fields.map((f) => <li key={f}>{f}</li>)}</ul>
      ) : null}
      {onDismiss ? (
        <button type="button" className="link" onClick={onDismiss} aria-label="Dismiss this message">
          ×
        </button>
      ) : null}
    </div>
  );
}

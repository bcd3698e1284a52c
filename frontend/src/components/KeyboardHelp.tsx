import { TRIAGE_HELP } from "../triage";

/** The keyboard shortcuts, opened with "?" (a non-modal panel: the list stays usable). */
export function KeyboardHelp({ open, onClose }: { open: boolean; onClose: () => void }) {
  if (!open) return null;
  return (
    <section className="card keyboard-help" role="dialog" aria-labelledby="h-keys" aria-modal="false">
      <h2 id="h-keys">Keyboard shortcuts</h2>
      <dl>
        {TRIAGE_HELP.map((h) => (
          <div key={h.key}>
            <dt><kbd>{h.key}</kbd></dt>
            <dd>{h.what}</dd>
          </div>
        ))}
      </dl>
      <button type="button" className="secondary" onClick={onClose}>Close</button>
    </section>
  );
}

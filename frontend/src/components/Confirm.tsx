import { useEffect, useRef, type ReactNode } from "react";

/** An inline confirmation: what is about to happen, a confirm button (focused) and Cancel
 *  (``cancelLabel``, when the action itself is a cancel). Escape cancels. Used before an action
 *  that cannot be undone or that affects many items. */
export function Confirm({ title, children, confirmLabel, cancelLabel = "Cancel", onConfirm, onCancel, busy = false, danger = false }: {
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  cancelLabel?: string;
  onConfirm: () => void;
  onCancel: () => void;
  busy?: boolean;
  danger?: boolean;
}) {
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => button.current?.focus(), []);
  return (
    <div className="confirm card" role="alertdialog" aria-label={title} aria-modal="false"
      onKeyDown={(e) => { if (e.key === "Escape") onCancel(); }}>
      <p className="confirm-title"><strong>{title}</strong></p>
      {children}
      <div className="actions">
        <button ref={button} type="button" className={danger ? "btn-danger-solid" : "btn-primary"} disabled={busy} onClick={onConfirm}>
          {confirmLabel}
        </button>
        <button type="button" className="btn-secondary" disabled={busy} onClick={onCancel}>{cancelLabel}</button>
      </div>
    </div>
  );
}

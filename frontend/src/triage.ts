// Keyboard triage for the list views: j/k move between rows, a = ACK, r = replay, x = select,
// ? = the help. Keys are ignored while typing in a field or with a modifier held. After an action
// removes a row, focus lands on the row that took its place (the next one), so three items can be
// worked through with j, a, a, a.
import { useCallback, useEffect, useRef, useState } from "react";

export interface TriageKeys {
  a?: () => void; // ACK the current row
  r?: () => void; // replay the current row
  x?: () => void; // select / deselect the current row
}

export const TRIAGE_HELP: { key: string; what: string }[] = [
  { key: "j", what: "next row" },
  { key: "k", what: "previous row" },
  { key: "a", what: "acknowledge the current row (inbox)" },
  { key: "r", what: "replay the current row (DLQ)" },
  { key: "x", what: "select or deselect the current row" },
  { key: "?", what: "show or hide this help" },
  { key: "Esc", what: "close this help" },
];

function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  const tag = target.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
}

/** The current row index (``cursor``) over ``ids`` and the key bindings; rows carry
 *  ``data-row-index`` and ``tabIndex=-1`` so focus can move to them. */
export function useTriage(ids: string[], listRef: React.RefObject<HTMLElement | null>, keys: TriageKeys) {
  const [cursor, setCursor] = useState(-1);
  const [help, setHelp] = useState(false);
  const latest = useRef({ ids, keys, cursor });
  latest.current = { ids, keys, cursor };
  const wantFocus = useRef(false);

  const focusRow = useCallback((index: number) => {
    const row = listRef.current?.querySelector<HTMLElement>(`[data-row-index="${index}"]`);
    row?.focus();
    row?.scrollIntoView?.({ block: "nearest" });
  }, [listRef]);

  const move = useCallback((index: number) => {
    const n = latest.current.ids.length;
    if (!n) return;
    const next = Math.max(0, Math.min(n - 1, index));
    setCursor(next);
    wantFocus.current = true;
  }, []);

  // Keep the cursor on a row when rows go away (an action here or a live update): when the
  // current row vanished, the same index is now the next row (past the end, the last one), and it
  // takes the focus if the focus was on the vanished row (now on nothing) or in the list.
  const currentId = useRef<string | null>(null);
  useEffect(() => {
    const was = currentId.current;
    if (was !== null && !ids.includes(was) && ids.length) {
      const active = document.activeElement;
      const lost = !active || active === document.body || (listRef.current?.contains(active) ?? false);
      const next = Math.min(Math.max(cursor, 0), ids.length - 1);
      if (next !== cursor) setCursor(next);
      if (lost) wantFocus.current = true;
      currentId.current = ids[next];
    } else {
      currentId.current = cursor >= 0 && cursor < ids.length ? ids[cursor] : null;
    }
  }, [ids, cursor, listRef]);

  useEffect(() => {
    if (wantFocus.current && cursor >= 0) {
      wantFocus.current = false;
      focusRow(cursor);
    }
  });

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
      const { cursor: at, keys: k } = latest.current;
      switch (e.key) {
        case "j":
          move(at + 1);
          break;
        case "k":
          move(at < 0 ? 0 : at - 1);
          break;
        case "?":
          setHelp((h) => !h);
          break;
        case "Escape":
          setHelp(false);
          return;
        case "a":
        case "r":
        case "x": {
          const fn = k[e.key];
          if (!fn || at < 0) return;
          fn();
          break;
        }
        default:
          return;
      }
      e.preventDefault();
    }
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [move]);

  /** Focus this row in the cursor (a click or Tab into a row makes it current). */
  const onRowFocus = useCallback((index: number) => setCursor(index), []);
  /** After a button's action removed its own row: focus the row that took its place. */
  const keepFocus = useCallback(() => {
    wantFocus.current = true;
  }, []);
  const current = cursor >= 0 && cursor < ids.length ? ids[cursor] : null;
  return { cursor, current, help, setHelp, onRowFocus, keepFocus };
}

/** "(3) Inbox · UNS" in the tab title while the view is open. */
export function useTitle(title: string): void {
  useEffect(() => {
    const before = document.title;
    document.title = title;
    return () => {
      document.title = before;
    };
  }, [title]);
}

// A list's selection of rows for the bulk actions (the selection bar, components/BulkActions):
// ids chosen on screen, kept only while their rows are shown (a live update that takes a row off
// takes it out of the selection too).
import { useCallback, useMemo, useState } from "react";

export interface Selection {
  /** The selected ids still shown, in the list's order. */
  ids: string[];
  has: (id: string) => boolean;
  toggle: (id: string) => void;
  /** Every shown (selectable) row is selected. */
  all: boolean;
  /** Select every shown row, or none. */
  setAll: (on: boolean) => void;
  /** Replace the selection (after a bulk action: the refused items stay selected). */
  replace: (ids: Iterable<string>) => void;
  clear: () => void;
}

/** ``shown``: the ids a user may select now, in screen order. */
export function useSelection(shown: string[]): Selection {
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const ids = useMemo(() => shown.filter((id) => picked.has(id)), [shown, picked]);
  const toggle = useCallback((id: string) => setPicked((s) => {
    const n = new Set(s);
    if (n.has(id)) n.delete(id);
    else n.add(id);
    return n;
  }), []);
  const setAll = useCallback((on: boolean) => setPicked(on ? new Set(shown) : new Set()), [shown]);
  const replace = useCallback((next: Iterable<string>) => setPicked(new Set(next)), []);
  const clear = useCallback(() => setPicked(new Set()), []);
  return {
    ids, toggle, setAll, replace, clear,
    has: (id) => picked.has(id),
    all: shown.length > 0 && ids.length === shown.length,
  };
}

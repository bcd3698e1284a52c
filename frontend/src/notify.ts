// Optional browser notifications for new critical items (off by default; the choice is kept in
// localStorage under "uns.notify-critical", which holds no secret).
import { useEffect, useRef, useState } from "react";

const KEY = "uns.notify-critical";

export function useNotifyChoice(): [boolean, (on: boolean) => Promise<void>] {
  const [on, setOn] = useState(() => typeof localStorage !== "undefined" && localStorage.getItem(KEY) === "1");
  async function choose(value: boolean) {
    if (value && typeof Notification !== "undefined" && Notification.permission !== "granted") {
      const answer = await Notification.requestPermission();
      if (answer !== "granted") value = false;
    }
    localStorage.setItem(KEY, value ? "1" : "0");
    setOn(value);
  }
  return [on, choose];
}

/** When enabled: a browser notification for each critical item that appears in ``items`` after
 *  the first load (never for what was already there). */
export function useCriticalAlerts(items: { id: string; title: string; severity?: string | null; source?: string | null }[],
  loaded: boolean, enabled: boolean) {
  const seen = useRef<Set<string> | null>(null);
  useEffect(() => {
    if (!loaded) return;
    if (seen.current === null) {
      seen.current = new Set(items.map((i) => i.id));
      return;
    }
    for (const item of items) {
      if (seen.current.has(item.id)) continue;
      seen.current.add(item.id);
      if (enabled && item.severity === "critical" && typeof Notification !== "undefined" && Notification.permission === "granted") {
        new Notification(`Critical: ${item.title}`, { body: item.source ?? "", tag: item.id });
      }
    }
  }, [items, loaded, enabled]);
}

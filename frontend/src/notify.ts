// Optional browser notifications for new critical items (off by default; the choice is kept in
// localStorage under "uns.notify-critical", which holds no secret).
import { useEffect, useRef, useState } from "react";

const KEY = "uns.notify-critical";

/** The operator's choice and a setter that asks the browser's permission first. The setter
 *  resolves to null, or to why the choice could not be turned on (the browser has no
 *  notifications, or the person or the browser refused them), for the view to say. */
export function useNotifyChoice(): [boolean, (on: boolean) => Promise<string | null>] {
  const [on, setOn] = useState(() => typeof localStorage !== "undefined" && localStorage.getItem(KEY) === "1");
  async function choose(value: boolean): Promise<string | null> {
    let refused: string | null = null;
    if (value && typeof Notification === "undefined") {
      value = false;
      refused = "This browser cannot show notifications.";
    } else if (value && Notification.permission !== "granted") {
      const answer = await Notification.requestPermission();
      if (answer !== "granted") {
        value = false;
        refused = "The browser blocked notifications for this site: allow them in its site settings, then tick again.";
      }
    }
    localStorage.setItem(KEY, value ? "1" : "0");
    setOn(value);
    return refused;
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

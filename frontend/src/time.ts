// Times arrive as Float epoch seconds (with an ISO-8601 UTC twin). The console shows them in the
// browser's time zone and keeps the raw UTC value for the hover title.

/** Whether ``epoch`` (seconds) is a time a Date can hold: not ``NaN`` (``Number("garbage")``) and
 *  within a Date's range. ``isoUtc`` throws for any other. */
export function isEpoch(epoch: number): boolean {
  return !Number.isNaN(new Date(epoch * 1000).getTime());
}

export function isoUtc(epoch: number): string {
  return new Date(epoch * 1000).toISOString();
}

export function formatLocal(epoch: number, timeZone?: string): string {
  return new Intl.DateTimeFormat(undefined, {
    year: "numeric",
    month: "short",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "short",
    timeZone,
  }).format(new Date(epoch * 1000));
}

/** A clock time in the browser's zone, 24-hour like ``formatLocal``: "18:05", or with the day
 *  ("Dec 3, 18:05") when ``withDay``. The charts' axes, tables and summaries all use it. */
export function formatClock(epoch: number, withDay = false): string {
  return new Intl.DateTimeFormat(undefined, {
    ...(withDay ? { month: "short", day: "numeric" } : {}),
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).format(new Date(epoch * 1000));
}

/** "45s", "12m 5s", "3h 20m", "2d 4h"; negative durations are written as "-…". */
export function formatDuration(seconds: number): string {
  const sign = seconds < 0 ? "-" : "";
  let s = Math.floor(Math.abs(seconds));
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d) return `${sign}${d}d ${h}h`;
  if (h) return `${sign}${h}h ${m}m`;
  if (m) return `${sign}${m}m ${s}s`;
  return `${sign}${s}s`;
}

/** "in 5m 3s" or "2m 10s ago", relative to now (epoch seconds). */
export function formatRelative(epoch: number, now: number): string {
  const delta = epoch - now;
  return delta >= 0 ? `in ${formatDuration(delta)}` : `${formatDuration(-delta)} ago`;
}

/** A ``datetime-local`` input's value (the browser's zone) as epoch seconds, "" for none. */
export function toEpoch(local: string): string {
  return local ? String(new Date(local).getTime() / 1000) : "";
}

/** Epoch seconds (a filter's value) as a ``datetime-local`` input's value, "" for none. */
export function toLocal(epoch: string | undefined): string {
  if (!epoch) return "";
  const d = new Date(Number(epoch) * 1000);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

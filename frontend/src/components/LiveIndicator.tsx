import type { LiveState } from "../live";
import { formatLocal } from "../time";

const TEXT: Record<LiveState, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  polling: "Refreshing every 2 s (live updates unavailable)",
};

/** The connection state, and "lagging" when the view has been behind the stream for longer than
 *  the refresh scheduler allows (a slow or failing read), with when it last caught up. */
export function LiveIndicator({ state, lagging = false, refreshedAt = null }: {
  state: LiveState;
  lagging?: boolean;
  refreshedAt?: number | null;
}) {
  const text = lagging
    ? `Lagging: this view is behind${refreshedAt ? ` (last up to date ${formatLocal(refreshedAt)})` : ""}`
    : TEXT[state];
  return (
    <span className={`live live-${lagging ? "lagging" : state}`} role="status" aria-live="polite" data-live-state={state}
      data-lagging={lagging ? "true" : "false"}>
      <span className="dot" aria-hidden="true" /> {text}
    </span>
  );
}

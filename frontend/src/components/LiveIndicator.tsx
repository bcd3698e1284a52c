import type { LiveState } from "../live";

const TEXT: Record<LiveState, string> = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  polling: "Refreshing every 2 s (live updates unavailable)",
};

export function LiveIndicator({ state }: { state: LiveState }) {
  return (
    <span className={`live live-${state}`} role="status" aria-live="polite" data-live-state={state}>
      <span className="dot" aria-hidden="true" /> {TEXT[state]}
    </span>
  );
}

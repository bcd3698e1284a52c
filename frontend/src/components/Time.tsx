import { formatLocal, isoUtc } from "../time";

/** A time in the browser's zone; the raw UTC value shows on hover (title) and in dateTime. */
export function Time({ epoch, className }: { epoch: number | null | undefined; className?: string }) {
  if (epoch === null || epoch === undefined) return <span className="muted">—</span>;
  const utc = isoUtc(epoch);
  return (
    <time dateTime={utc} title={`${utc} (UTC, epoch ${epoch})`} className={className}>
      {formatLocal(epoch)}
    </time>
  );
}

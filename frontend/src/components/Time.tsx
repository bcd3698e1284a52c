import { formatLocal, isEpoch, isoUtc } from "../time";

/** A time in the browser's zone; the raw UTC value shows on hover (title) and in dateTime.
 *  No time, or an epoch that is not one (``NaN`` from a hand-edited address's ``garbage``, or
 *  beyond what a Date can hold), reads "—". */
export function Time({ epoch, className }: { epoch: number | null | undefined; className?: string }) {
  if (epoch === null || epoch === undefined || !isEpoch(epoch)) {
    return <span className="muted">—</span>;
  }
  const utc = isoUtc(epoch);
  return (
    <time dateTime={utc} title={`${utc} (UTC, epoch ${epoch})`} className={className}>
      {formatLocal(epoch)}
    </time>
  );
}

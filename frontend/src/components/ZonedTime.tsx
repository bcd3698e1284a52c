import { formatLocal, isoUtc } from "../time";

/** An instant in the viewer's time zone and, beside it, in ``zone`` (a schedule's): a hand-off
 *  reads the same to a responder abroad and to the schedule's team. */
export function ZonedTime({ epoch, zone }: { epoch: number; zone: string }) {
  const utc = isoUtc(epoch);
  return (
    <span className="zoned-time">
      <time dateTime={utc} title={`${utc} (UTC)`}>{formatLocal(epoch)}</time>
      <span className="muted small"> · {zone}: {formatLocal(epoch, zone)}</span>
    </span>
  );
}

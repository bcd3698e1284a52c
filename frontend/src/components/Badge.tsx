export function StatusBadge({ value }: { value: string | null | undefined }) {
  const v = value ?? "—";
  return <span className={`badge badge-${v.toLowerCase().replace(/[^a-z_]/g, "")}`}>{v}</span>;
}

/** The delivery state as one reads it at a glance: a live failure in the DLQ is red ("FAILED" and
 *  "DLQ"); a dead letter an operator resolved ("RESOLVED": UNS stopped trying on purpose) and a
 *  notification never sent because its source resolved it first or a silence held it until it was
 *  stale ("WITHHELD") are neutral grey; anything else its status badge. */
export function DeliveryState({ status, deadLetter, resolved, withheld = false }:
  { status: string; deadLetter: boolean; resolved: boolean; withheld?: boolean }) {
  if (status === "FAILED" && resolved && !deadLetter) {
    return <span className="badge badge-resolved" title="Failed, then resolved by an operator without a replay">RESOLVED</span>;
  }
  if (status === "FAILED" && withheld && !deadLetter) {
    return (
      <span className="badge badge-resolved" title="Not sent: its source resolved it first, or a silence held it until it was stale">
        WITHHELD
      </span>
    );
  }
  return (
    <>
      <StatusBadge value={status} />
      {deadLetter ? <> <span className="badge badge-dlq">DLQ</span></> : null}
    </>
  );
}

export function StatusBadge({ value }: { value: string | null | undefined }) {
  const v = value ?? "—";
  return <span className={`badge badge-${v.toLowerCase().replace(/[^a-z_]/g, "")}`}>{v}</span>;
}

/** The delivery state as one reads it at a glance: a live failure in the DLQ is red ("FAILED" and
 *  "DLQ"), a dead letter an operator resolved is neutral grey ("RESOLVED": UNS stopped trying on
 *  purpose), anything else its status badge. */
export function DeliveryState({ status, deadLetter, resolved }: { status: string; deadLetter: boolean; resolved: boolean }) {
  if (status === "FAILED" && resolved && !deadLetter) {
    return <span className="badge badge-resolved" title="Failed, then resolved by an operator without a replay">RESOLVED</span>;
  }
  return (
    <>
      <StatusBadge value={status} />
      {deadLetter ? <> <span className="badge badge-dlq">DLQ</span></> : null}
    </>
  );
}

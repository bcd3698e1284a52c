import { useInfiniteQuery } from "@tanstack/react-query";
import { useMemo, useState, type FormEvent } from "react";
import { query } from "../api";
import { ProblemMessage } from "../components/ProblemMessage";
import { Time } from "../components/Time";
import { useConsole } from "../context";
import { explainError } from "../problems";
import { href } from "../router";
import { formatLocal } from "../time";
import type { AuditItem, Page } from "../types";

function bulkNote(meta: Record<string, unknown> | null | undefined): string {
  const inner = meta?.metadata as Record<string, unknown> | undefined;
  const id = meta?.bulk_action_id ?? inner?.bulk_action_id;
  return typeof id === "string" ? ` (bulk action ${id.slice(0, 8)})` : "";
}

/** What an audit row records, in words: a snooze is a PENDING -> PENDING row whose metadata
 *  says what it did, so it reads as the snooze it was. */
export function describe(item: AuditItem): string {
  if (item.kind === "ack") {
    const meta = item.metadata ?? null;
    if (meta?.action === "snooze" && typeof meta.seconds === "number") {
      const minutes = Math.round(meta.seconds / 60);
      return `Snoozed by ${item.actor} for ${minutes} min: deadline moved to ${typeof meta.deadline === "number" ? formatLocal(meta.deadline) : "?"}${bulkNote(meta)}`;
    }
    return `${item.old_status ?? "—"} → ${item.new_status} by ${item.actor}${bulkNote(meta)}`;
  }
  const failed = item.channels_failed?.length ? `; failed: ${item.channels_failed.join(", ")}` : "";
  return `${item.status} (${item.delivery_mode})${failed}${item.error_message ? ` — ${item.error_message}` : ""}`;
}

export function Audit() {
  const { api } = useConsole();
  const [filter, setFilter] = useState("");
  const [applied, setApplied] = useState("");
  const audit = useInfiniteQuery({
    queryKey: ["ui", "/ui/audit", { notification_id: applied }],
    queryFn: ({ pageParam, signal }) =>
      api.get<Page<AuditItem>>(`/ui/audit${query({ notification_id: applied, limit: 100, cursor: pageParam })}`, signal),
    initialPageParam: null as string | null,
    getNextPageParam: (last) => last.next ?? undefined,
  });
  const items = useMemo(() => audit.data?.pages.flatMap((p) => p.items) ?? [], [audit.data]);
  const error = useMemo(() => (audit.error ? explainError(audit.error) : null), [audit.error]);

  function submit(e: FormEvent) {
    e.preventDefault();
    setApplied(filter.trim());
  }

  return (
    <>
      <div className="view-head"><h1>Audit</h1></div>
      <p className="muted">Acknowledgement and delivery audit records, newest first.</p>
      <form className="filters" onSubmit={submit} role="search" aria-label="Filter the audit">
        <label htmlFor="audit-id">Notification id</label>
        <input id="audit-id" value={filter} onChange={(e) => setFilter(e.target.value)} />
        <button type="submit">Filter</button>
      </form>
      <ProblemMessage explanation={error} />
      <div className="table-wrap">
        <table>
          <caption className="visually-hidden">Audit records</caption>
          <thead><tr><th scope="col">When</th><th scope="col">Kind</th><th scope="col">Notification</th><th scope="col">What</th></tr></thead>
          <tbody>
            {items.map((item) => (
              <tr key={`${item.kind}-${item.id}`}>
                <td><Time epoch={item.at} /></td>
                <td>{item.kind}</td>
                <td><a href={href({ name: "notification", id: item.notification_id })}><code>{item.notification_id.slice(0, 8)}</code></a></td>
                <td>{describe(item)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {items.length === 0 ? <p className="empty">No audit records.</p> : null}
      {audit.hasNextPage ? (
        <button type="button" className="secondary" disabled={audit.isFetchingNextPage}
          onClick={() => void audit.fetchNextPage()}>Load more</button>
      ) : null}
    </>
  );
}

// Bulk actions, settled by the server (POST /api/v1/bulk-actions, then .../run in chunks of at
// most 100 until done): the set acted on is frozen when the operator confirms N, every item is
// settled through the runtime's own single-item transition, and each gets a result. A crash or
// a closed tab loses nothing: running the same bulk action again continues where it stopped.
import { ok, type Api } from "./api";
import type { BulkItemResult, BulkPreview, BulkProgress } from "./types";

export type BulkActionName = "replay" | "resolve" | "ack" | "snooze";

/** The list's own filters (the inbox's q, source, severity, channel, dedup_key; the DLQ's also
 *  reason: the server parses both with one parser) and/or a selection of ids. */
export interface BulkFilter {
  [name: string]: string | null | undefined | string[];
  ids?: string[];
}

function listFilters(filter: BulkFilter): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(filter)) {
    if (name !== "ids" && typeof value === "string" && value) out[name] = value;
  }
  return out;
}

export const BULK_LABEL: Record<BulkActionName, { verb: string; done: string }> = {
  replay: { verb: "Replay", done: "Replay requested" },
  resolve: { verb: "Resolve", done: "Resolved" },
  ack: { verb: "Acknowledge", done: "Acknowledged" },
  snooze: { verb: "Snooze", done: "Snoozed" },
};

/** How many items the bulk action would take with this filter now (the N to confirm). */
export function previewBulk(api: Api, action: BulkActionName, filter: BulkFilter): Promise<BulkPreview> {
  const q = new URLSearchParams({ ...listFilters(filter), action });
  return api.get<BulkPreview>(`/ui/bulk-actions/preview?${q.toString()}`);
}

/** Create the bulk action for the confirmed ``expected`` N and run it to the end, reporting
 *  progress after each chunk. Returns the final progress and every item's result. */
export async function runServerBulk(
  api: Api,
  body: { action: BulkActionName; filter: BulkFilter; expected: number; seconds?: number },
  onProgress: (p: BulkProgress) => void = () => undefined,
): Promise<{ progress: BulkProgress; results: BulkItemResult[] }> {
  const filter: BulkFilter = listFilters(body.filter);
  if (body.filter.ids) filter.ids = body.filter.ids;
  const created = await ok(api.v1.POST("/api/v1/bulk-actions", { body: { ...body, filter } }));
  onProgress(created);
  return continueBulk(api, created, onProgress);
}

/** Run an existing bulk action until no item is left (also to resume one). */
export async function continueBulk(
  api: Api,
  start: BulkProgress,
  onProgress: (p: BulkProgress) => void = () => undefined,
): Promise<{ progress: BulkProgress; results: BulkItemResult[] }> {
  const results: BulkItemResult[] = [];
  let progress = start;
  // Each run settles at most 100 items; a run that settles none (another run holds them) still
  // ends once the server says DONE.
  for (let guard = 0; progress.state !== "DONE" && guard < 10_000; guard++) {
    const out = await ok(api.v1.POST("/api/v1/bulk-actions/{bulk_id}/run", { params: { path: { bulk_id: progress.id } }, body: {} }));
    results.push(...out.results);
    progress = out;
    onProgress(progress);
  }
  results.sort((a, b) => a.ordinal - b.ordinal);
  return { progress, results };
}

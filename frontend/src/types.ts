// Shapes of the /ui read models: generated (src/generated/ui.ts, from console/schemas.py via
// scripts/gen_ui_types.sh; CI fails when they drift). Only shapes that are not /ui payloads are
// written by hand here. Times are epoch seconds.
import type { components } from "./generated/ui";

type S = components["schemas"];

export type Me = S["Me"];
export type Overview = S["Overview"];
export type Summary = Pick<S["DlqItem"], "id" | "title" | "source" | "severity" | "status" | "ack_status" | "dead_letter">;
export type InboxItem = S["InboxItem"];
export type ReplayBlocker = S["ReplayBlocker"];
export type DlqItem = S["DlqItem"];
export type ChannelAttempt = S["ChannelAttempt"];
export type ChannelResult = S["ChannelResult"];
export type DedupMember = S["DedupMember"];
export type MissingMember = S["MissingMember"];
export type TimelineEntry = S["TimelineEntry"];
export type NotificationDetail = S["NotificationDetail"];
export type PolicyVersion = S["PolicyVersion"];
export type Policies = S["Policies"] & { note?: string };
export type PolicyDiff = S["PolicyDiff"];
export type AuditItem = S["AckAuditItem"] | S["DeliveryAuditItem"];
export type SimulatedOutcome = S["SimulatedOutcome"];
export type ActivationPreview = S["ActivationPreview"];
export type BulkPreview = S["BulkPreview"];
export type BulkItemResult = S["BulkItemResult"];
export type BulkProgress = S["BulkProgress"];
export type BulkRun = S["BulkRun"];

/** Every /ui list: ``{items, next}`` (``now`` on the inbox and DLQ). */
export interface Page<T> {
  items: T[];
  next: string | null;
  now?: number;
}

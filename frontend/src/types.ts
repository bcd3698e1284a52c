// Shapes of the /ui read models: generated (src/generated/ui.ts, from console/schemas.py via
// scripts/gen_ui_types.sh), and of the /api/v1 answers the console reads (src/generated/api-v1.ts,
// from the /api/v1 OpenAPI document via scripts/gen_api_types.sh); CI fails when either drifts.
// Only shapes that are neither are written by hand here. Times are epoch seconds.
import type { components as V1 } from "./generated/api-v1";
import type { components } from "./generated/ui";

type S = components["schemas"];
type V = V1["schemas"];

export type Me = S["Me"];
export type Overview = S["Overview"];
/** ``GET /ui/series?window=`` (``console.selectors.series_window``): the charts' buckets. */
export type SeriesModel = S["Series"];
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
export type AuditItem = S["AuditItem"];
export type SimulatedOutcome = S["SimulatedOutcome"];
export type ActivationPreview = S["ActivationPreview"];
export type BulkPreview = S["BulkPreview"];
/** ``POST /api/v1/bulk-actions`` and ``.../run`` answer these (``runtime.bulk.progress``). */
export type BulkItemResult = V["BulkItemResult"];
export type BulkProgress = V["BulkProgress"];
export type BulkRun = V["BulkRun"];
export type ChannelHealth = S["ChannelHealth"];
/** ``GET /ui/channels`` (``console.selectors.channel_health``). */
export type ChannelsModel = S["Channels"];
/** ``GET /ui/silences`` (``console.selectors.silences``). */
export type SilencesModel = S["Silences"];
export type SilenceItem = S["SilenceItem"];
export type SilenceMatcher = S["SilenceMatcher"];
/** ``POST /api/v1/silences/preview`` (``runtime.silences.preview``). */
export type SilencePreview = V["SilencePreview"];
/** ``GET /ui/inbox/groups`` and ``/ui/dlq/groups``: the largest groups of a filtered list. */
export type Groups = S["Groups"];
/** One row of ``GET /ui/notifications`` (the listing API's item). */
export type NotificationListItem = S["ConsoleNotificationListItem"];

/** Every /ui list: ``{items, next}`` (``now`` on the inbox and DLQ). */
export interface Page<T> {
  items: T[];
  next: string | null;
  now?: number;
  /** Rows matching the list's filters, all pages together (the /ui lists count them). */
  total?: number;
  /** ``total`` is a lower bound: the server counts at most 10 000. */
  total_capped?: boolean;
}
/** ``GET /ui/oncall``: each schedule's on call now and next, and the teams. */
export type OncallBoard = S["OncallBoard"];
export type OncallScheduleSummary = S["OncallScheduleSummary"];
/** ``GET /ui/oncall/schedules/{name}/calendar``: shifts per layer and final, overrides. */
export type OncallCalendar = S["OncallCalendar"];
export type Shift = S["Shift"];
export type Override = S["Override"];
/** ``GET /ui/oncall/me``: my contact methods and my pages. */
export type MyOncall = S["MyOncall"];
export type ContactMethod = S["ContactMethod"];
/** ``POST /api/v1/oncall/me/contact-methods/{id}/verify``. */
export type ContactMethodVerification = V["ContactMethodVerification"];

// Shapes of the /ui read models (console/selectors.py). Times are epoch seconds.

export interface Me {
  username: string;
  groups: string[];
  is_superuser: boolean;
  capabilities: {
    view_console: boolean;
    respond: boolean;
    operate_dlq: boolean;
    send: boolean;
    manage_policies: boolean;
  };
  token_expiry: number | null;
  /** With a console session: the CSRF token its writes send (kept in memory only). */
  csrf_token?: string;
}

export interface Page<T> {
  items: T[];
  next: string | null;
  now?: number;
  /** Rows matching the list's filters, all pages together (the /ui lists count them). */
  total?: number;
  /** ``total`` is a lower bound: the server counts at most 10 000. */
  total_capped?: boolean;
}

export interface Overview {
  now: number;
  counts_by_status: Record<string, number>;
  counts_by_ack_status: Record<string, number>;
  total: number;
  dlq: { depth: number; oldest_failed_at: number | null; oldest_age_seconds: number | null };
  last_hour: { since: number; deliveries: number; failures: number; retries: number };
  pending_acks: number;
}

export interface Summary {
  id: string;
  title: string;
  source: string;
  severity: string;
  status: string;
  ack_status: string | null;
  dead_letter: boolean;
}

export interface InboxItem {
  id: string;
  title: string;
  source: string;
  severity: string;
  intent: string | null;
  status: string;
  ack_status: string | null;
  delivered_at: number;
  deadline: number;
  seconds_left: number;
  overdue: boolean;
  principal: string;
  channels: string[];
  dedup_key?: string | null;
}

/** ``GET /ui/inbox/groups`` and ``/ui/dlq/groups``: the largest groups of a filtered list. */
export interface Groups {
  by: string;
  groups: { value: string | string[] | null; count: number }[];
}

export interface ReplayBlocker {
  code: string;
  successor_id: string;
  successor_status: string | null;
  explanation: string;
}

export interface DlqItem extends Summary {
  principal: string;
  error_message: string | null;
  channels_failed: string[];
  channels_succeeded: string[];
  cycle: number;
  cycle_attempts: number;
  attempts: number;
  max_attempts: number | null;
  accepted_at: number;
  failed_at: number | null;
  replay_blocked: boolean;
  replay_blocker: ReplayBlocker | null;
  dedup_key?: string | null;
  /** Seconds since the failure, at the answer's ``now``. */
  age_seconds?: number | null;
  /** What usually causes this failure and what to check (server rule: notifications/failure_hints). */
  failure_hint?: string | null;
}

export interface ChannelAttempt {
  at: number;
  attempt: number;
  cycle: number;
  cycle_attempt: number;
  success: boolean;
  error: string | null;
  message_id: string | null;
  retryable: boolean | null;
  status_code: number | null;
  hint?: string | null;
  host?: string | null;
}

export interface ChannelResult {
  channel: string;
  attempts: ChannelAttempt[];
  last: ChannelAttempt | null;
  succeeded: boolean;
}

export interface DedupMember extends Summary {
  role: string;
  owner_id: string | null;
  generation: number | null;
  successor_id: string | null;
  missing?: boolean;
}

export interface TimelineEntry {
  id: string;
  kind: string;
  at: number;
  at_iso: string;
  payload: Record<string, unknown>;
}

export interface NotificationDetail extends Summary {
  principal: string;
  request: Record<string, unknown>;
  resolution: {
    policy_id?: string;
    policy_hash?: string;
    revision?: number;
    effective?: Record<string, unknown>;
    effective_hash?: string;
    rule?: string | null;
    why: string;
  };
  outcome: { channels_attempted: string[]; channels_succeeded: string[]; channels_failed: string[]; error_message: string | null };
  attempts: number;
  cycle: number;
  cycle_attempts: number;
  max_attempts: number | null;
  leased: boolean;
  actor: string | null;
  response_metadata: Record<string, unknown> | null;
  channels: ChannelResult[];
  dedup: {
    dedup_key: string;
    generation: number | null;
    role: string;
    leader: DedupMember;
    followers: DedupMember[];
    successor: DedupMember | null;
  } | null;
  timeline: TimelineEntry[];
  replay_blocker: ReplayBlocker | null;
  next_attempt: number;
  delivered_at: number | null;
  deadline: number | null;
  responded_at: number | null;
  /** What usually causes the outcome's error and what to check (notifications/failure_hints). */
  failure_hint?: string | null;
}

export interface PolicyVersion {
  policy_id: string;
  version: number;
  status: string;
  description: string;
  cloned_from: string | null;
  created_by: string;
  created_at: number;
  activated_by: string | null;
  activated_at: number | null;
  retired_by: string | null;
  retired_at: number | null;
  content_hash: string | null;
  content: unknown;
  transitions: string[];
}

export interface Policies {
  available: boolean;
  note?: string;
  current_revision: { revision: number; updated_by: string; updated_at: number } | null;
  policies: { policy_id: string; versions: PolicyVersion[]; active_version: number | null }[];
  revisions: { revision: number; reason: string; created_by: string; created_at: number; active: string[] }[];
  transitions: { policy_id: string; version: number; action: string; from_status: string | null; to_status: string; actor: string; at: number; revision: number | null }[];
}

export interface PolicyDiff {
  policy_id: string;
  from: number;
  to: number;
  identical: boolean;
  lines: string[];
}

export interface AuditItem {
  kind: "ack" | "delivery";
  id: string;
  notification_id: string;
  at: number;
  old_status?: string | null;
  new_status?: string;
  actor?: string;
  status?: string;
  channels_failed?: string[];
  channels_succeeded?: string[];
  error_message?: string | null;
  delivery_mode?: string;
}

/** One row of ``GET /ui/notifications`` (the listing API's item). */
export interface NotificationListItem {
  id: string;
  principal: string;
  source: string;
  title: string;
  severity: string;
  dedup_key: string | null;
  require_ack: boolean;
  status: string;
  dead_letter: boolean;
  dedup_role: string;
  attempts: number;
  cycle: number;
  ack_status: string | null;
  actor: string | null;
  accepted_at: number;
  delivered_at?: number | null;
  deadline?: number | null;
}

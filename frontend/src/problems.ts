// Turns an RFC 9457 problem from the server into words a person understands: a headline that
// says what happened and what to do, then the server's own detail.
import { ApiError, type Problem } from "./api";
import { PROBLEM_CODES, type ProblemCode } from "./generated/problem-codes";

/** Codes the console gives its own failures (no server answered). */
type ClientCode = "network_error";

/** The headline of each code that has one; the codes are the server's catalog (generated from
 *  core/codes.py), so a message for a code the server never sends does not compile. */
const MESSAGES: Partial<Record<ProblemCode | ClientCode, string>> = {
  ack_conflict: "Someone else already responded to this notification.",
  ack_timed_out: "Too late: the acknowledgement deadline has passed.",
  ack_not_required: "This notification does not need an acknowledgement.",
  not_awaiting_ack: "This notification is not waiting for an acknowledgement yet (it has not been delivered).",
  not_dead_lettered: "This notification is no longer in the dead-letter queue.",
  replay_blocked: "Replay is blocked: another notification already carries this obligation.",
  replay_lineage_unknown: "Replay is blocked: the notification that took over this obligation can no longer be found.",
  concurrent_change: "The notification changed while you were acting on it. Reload and try again.",
  invalid_credentials: "The username or password is not right.",
  console_access_denied: "This account may not use the console.",
  policy_retired: "A retired policy version cannot be changed; clone it instead.",
  policy_not_draft: "Only a draft policy version can be changed; clone it instead.",
  invalid_transition: "That lifecycle change is not allowed for this policy version.",
  default_policy_required: "The default policy cannot be retired, only replaced: activate another version of it.",
  policy_conflict: "The policy version changed while you were acting on it. Reload and try again.",
  bulk_nothing_matches: "Nothing matches this filter any more.",
  bulk_action_not_found: "That bulk action does not exist.",
  approval_not_explicit: "This is an approval: use Approve or Deny.",
  approval_skipped: "Approvals are decided one at a time: this bulk action skipped it.",
  approval_not_snoozable: "An approval cannot be snoozed: approve or deny it before its deadline.",
  self_approval: "You asked for this approval, so you cannot approve it.",
  no_escalation_target: "This notification's policy names no escalation target.",
  channel_routed: "The active policy routes to this channel, so it cannot be disabled: change the policy first.",
  throttled: "Too many attempts. Wait a minute and try again.",
  network_error: "The server could not be reached. Check the connection and try again.",
};

function isKnownCode(code: string): code is ProblemCode | ClientCode {
  return code in PROBLEM_CODES || code === "network_error";
}

/** The headline for ``code``, or undefined when it has none. */
function byCode(code: string | null): string | undefined {
  return code !== null && isKnownCode(code) ? MESSAGES[code] : undefined;
}

const BY_STATUS: Record<number, string> = {
  400: "The request was not accepted.",
  401: "Your session has ended. Log in again.",
  403: "You are not allowed to do this.",
  404: "It does not exist (any more).",
  405: "This action is not available here.",
  409: "This could not be done because of its current state.",
  413: "The request is too large.",
  422: "The request could not be processed.",
  429: "Too many attempts. Wait a minute and try again.",
  503: "The service is not available right now. Try again shortly.",
};

export interface Explanation {
  headline: string;
  detail: string | null;
  code: string | null;
  status: number;
  /** What was wrong with each field the server named (``fieldErrors``): "comment: must be at most 2000 characters". */
  fields: string[];
}

/** A problem's ``errors`` as "field: message" lines, whatever shape it came in: the runtime's
 *  ``[{field, message}]`` (``core.schema.errors_of``), pydantic's ``[{loc, msg}]``, DRF's
 *  ``{field: [messages]}``, or plain strings. An entry without a field is its message alone. */
export function fieldErrors(errors: unknown): string[] {
  const line = (field: string, message: string) => (field ? `${field}: ${message}` : message);
  const text = (m: unknown) => (Array.isArray(m) ? m.map(String).join(" ") : typeof m === "string" ? m : "");
  if (Array.isArray(errors)) {
    return errors.map((e) => {
      if (typeof e === "string") return e;
      const x = (e ?? {}) as { field?: unknown; loc?: unknown; message?: unknown; msg?: unknown };
      const field = typeof x.field === "string" ? x.field : Array.isArray(x.loc) ? x.loc.join(".") : "";
      return line(field, text(x.message) || text(x.msg));
    }).filter(Boolean);
  }
  if (errors && typeof errors === "object") {
    return Object.entries(errors).map(([field, m]) => line(field === "non_field_errors" ? "" : field, text(m))).filter(Boolean);
  }
  return [];
}

export function explainProblem(problem: Problem): Explanation {
  const code = typeof problem.code === "string" ? problem.code : null;
  let headline =
    byCode(code) ||
    BY_STATUS[problem.status] ||
    (problem.status >= 500 ? "The server failed. Try again; if it keeps failing, tell the UNS operators." : "The request failed.");
  if (problem.status === 403 && code && !byCode(code)) headline = BY_STATUS[403];
  let detail = typeof problem.detail === "string" && problem.detail ? problem.detail : null;
  const ackStatus = problem.ack_status;
  if (code === "ack_conflict" && typeof ackStatus === "string") {
    headline = `Someone else already responded: the notification is ${ackStatus}.`;
  }
  if ((code === "replay_blocked" || code === "replay_lineage_unknown") && typeof problem.successor_id === "string") {
    const status = typeof problem.successor_status === "string" ? ` (${problem.successor_status})` : "";
    detail = `${detail ? detail + " " : ""}Successor: ${problem.successor_id}${status}.`;
  }
  if (code !== null && !byCode(code) && problem.status === 409) {
    // The generic refusal names what was refused: a policy version or a notification.
    const noun = typeof problem.policy_id === "string" ? "the policy version's" : "the notification's";
    headline = `This could not be done because of ${noun} current state.`;
  }
  const fields = fieldErrors(problem.errors);
  // A detail that only repeats the one field error (or the headline) would read as two errors.
  if (detail && (same(detail, headline) || fields.some((f) => same(f, detail as string)))) detail = null;
  return { headline, detail, code, status: problem.status, fields };
}

/** The same sentence, whatever its case and final full stop (a server detail often repeats the
 *  headline: printed twice, it reads as two errors). */
function same(a: string, b: string): boolean {
  const norm = (x: string) => x.trim().replace(/[.!]+$/, "").toLowerCase();
  return norm(a) === norm(b);
}

export function explainError(err: unknown): Explanation {
  if (err instanceof ApiError) return explainProblem(err.problem);
  return { headline: "Something went wrong in the console.", detail: String(err), code: null, status: 0, fields: [] };
}

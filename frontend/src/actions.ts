// Every mutation the console can ask for, each a capability-gated /api/v1/* endpoint, typed on
// the generated /api/v1 types (paths, bodies and answers). The buttons only appear for users
// whose /ui/me capabilities allow them; the server still decides.
import { ok, type Api } from "./api";

const n = (id: string) => ({ params: { path: { notification_id: id } } });

/** The policy lifecycle verbs a version's ``transitions`` may offer. */
export type PolicyVerb = "activate" | "retire" | "clone";

export const actions = {
  ack: (api: Api, id: string) => ok(api.v1.POST("/api/v1/notifications/{notification_id}/ack", { ...n(id), body: {} })),
  // An ACK approves a governance approval only when it says so explicitly (approve: true).
  approve: (api: Api, id: string) =>
    ok(api.v1.POST("/api/v1/notifications/{notification_id}/ack", { ...n(id), body: { approve: true } })),
  dismiss: (api: Api, id: string) => ok(api.v1.POST("/api/v1/notifications/{notification_id}/dismiss", { ...n(id), body: {} })),
  snooze: (api: Api, id: string, seconds: number) =>
    ok(api.v1.POST("/api/v1/notifications/{notification_id}/snooze", { ...n(id), body: { seconds } })),
  escalate: (api: Api, id: string, reason: string) =>
    ok(api.v1.POST("/api/v1/notifications/{notification_id}/escalate", { ...n(id), body: { reason } })),
  replay: (api: Api, id: string) => ok(api.v1.POST("/api/v1/dlq/{notification_id}/replay", { ...n(id), body: {} })),
  resolve: (api: Api, id: string) => ok(api.v1.POST("/api/v1/dlq/{notification_id}/resolve", { ...n(id), body: {} })),
  // Channel management (operators: notifications.operate_dlq): the same endpoints as uns_channel.
  channelTest: (api: Api, name: string) =>
    ok(api.v1.POST("/api/v1/channels/{name}/test", { params: { path: { name } }, body: {} })),
  channelEnable: (api: Api, name: string) =>
    ok(api.v1.POST("/api/v1/channels/{name}/enable", { params: { path: { name } }, body: {} })),
  channelDisable: (api: Api, name: string) =>
    ok(api.v1.POST("/api/v1/channels/{name}/disable", { params: { path: { name } }, body: {} })),
  createSilence: (api: Api, body: { matchers: { name: string; op: "=" | "!=" | "=~" | "!~"; value: string }[];
    duration_seconds: number; comment: string }) => ok(api.v1.POST("/api/v1/silences", { body })),
  previewSilence: (api: Api, matchers: { name: string; op: "=" | "!=" | "=~" | "!~"; value: string }[]) =>
    ok(api.v1.POST("/api/v1/silences/preview", { body: { matchers } })),
  expireSilence: (api: Api, id: string) =>
    ok(api.v1.POST("/api/v1/silences/{silence_id}/expire", { params: { path: { silence_id: id } } })),
  /** This person on call in ``schedule`` instead, from ``start`` to ``end`` (epoch seconds). */
  addOverride: (api: Api, schedule: string, user: string, start: number, end: number) =>
    ok(api.v1.POST("/api/v1/oncall/schedules/{name}/overrides", {
      params: { path: { name: schedule } }, body: { user, start, end },
    })),
  deleteOverride: (api: Api, schedule: string, overrideId: string) =>
    ok(api.v1.DELETE("/api/v1/oncall/schedules/{name}/overrides/{override_id}", {
      params: { path: { name: schedule, override_id: overrideId } },
    })),
  /** A test send through one of my contact methods (VERIFIED on success). */
  verifyContactMethod: (api: Api, methodId: string) =>
    ok(api.v1.POST("/api/v1/oncall/me/contact-methods/{method_id}/verify", { params: { path: { method_id: methodId } } })),
  policy: (api: Api, policyId: string, version: number, verb: PolicyVerb) => {
    const at = { params: { path: { policy_id: policyId, version } }, body: {} };
    switch (verb) {
      case "activate":
        return ok(api.v1.POST("/api/v1/policies/{policy_id}/versions/{version}/activate", at));
      case "retire":
        return ok(api.v1.POST("/api/v1/policies/{policy_id}/versions/{version}/retire", at));
      case "clone":
        return ok(api.v1.POST("/api/v1/policies/{policy_id}/versions/{version}/clone", at));
    }
  },
};

export const SNOOZE_CHOICES: { label: string; seconds: number }[] = [
  { label: "5 minutes", seconds: 300 },
  { label: "15 minutes", seconds: 900 },
  { label: "1 hour", seconds: 3600 },
  { label: "4 hours", seconds: 14400 },
];

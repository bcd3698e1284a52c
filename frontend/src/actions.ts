// Every mutation the console can ask for, each a capability-gated /api/v1/* endpoint. The
// buttons only appear for users whose /ui/me capabilities allow them; the server still decides.
import type { Api } from "./api";

const n = (id: string) => `/api/v1/notifications/${encodeURIComponent(id)}`;

export const actions = {
  ack: (api: Api, id: string) => api.post(`${n(id)}/ack`, {}),
  // An ACK approves a governance approval only when it says so explicitly (approve: true).
  approve: (api: Api, id: string) => api.post(`${n(id)}/ack`, { approve: true }),
  dismiss: (api: Api, id: string) => api.post(`${n(id)}/dismiss`, {}),
  snooze: (api: Api, id: string, seconds: number) => api.post(`${n(id)}/snooze`, { seconds }),
  escalate: (api: Api, id: string, reason: string) => api.post(`${n(id)}/escalate`, { reason }),
  replay: (api: Api, id: string) => api.post(`/api/v1/runtime/notifications/${encodeURIComponent(id)}/replay`, {}),
  resolve: (api: Api, id: string) => api.delete(`/api/v1/dlq/${encodeURIComponent(id)}`),
  policy: (api: Api, policyId: string, version: number, verb: string) =>
    api.post(`/api/v1/policies/${encodeURIComponent(policyId)}/versions/${version}/${verb}`, {}),
};

export const SNOOZE_CHOICES: { label: string; seconds: number }[] = [
  { label: "5 minutes", seconds: 300 },
  { label: "15 minutes", seconds: 900 },
  { label: "1 hour", seconds: 3600 },
  { label: "4 hours", seconds: 14400 },
];

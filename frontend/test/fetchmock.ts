// A scripted fetch for view tests: routes keyed "METHOD /path" (query ignored) answer a JSON body,
// a Response, or a function of (url, init) returning either.
import { vi } from "vitest";
import type { Me } from "../src/types";

type Answer = unknown | Response | ((url: string, init?: RequestInit) => unknown);

export function respond(routes: Record<string, Answer>) {
  return vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const key = `${init?.method ?? "GET"} ${url.split("?")[0]}`;
    let body = routes[key];
    if (typeof body === "function") body = (body as (u: string, i?: RequestInit) => unknown)(url, init);
    if (body === undefined) return new Response(JSON.stringify({ status: 404, code: "not_found" }), { status: 404 });
    if (body instanceof Response) return body;
    return new Response(JSON.stringify(body), { status: 200, headers: { "Content-Type": "application/json" } });
  });
}

export function problem(status: number, body: Record<string, unknown>): Response {
  return new Response(JSON.stringify({ status, ...body }), { status, headers: { "Content-Type": "application/problem+json" } });
}

export const me = (caps: Partial<Me["capabilities"]>): Me => ({
  username: "u", groups: [], is_superuser: false, token_expiry: null, token_expiry_iso: null,
  capabilities: { view_console: true, respond: false, operate_dlq: false, send: false, manage_policies: false, ...caps },
});

export function calls(fetchMock: ReturnType<typeof respond>, key: string): { url: string; body: unknown }[] {
  return fetchMock.mock.calls
    .filter(([input, init]) => `${init?.method ?? "GET"} ${String(input).split("?")[0]}` === key)
    .map(([input, init]) => ({ url: String(input), body: init?.body ? JSON.parse(String(init.body)) : undefined }));
}

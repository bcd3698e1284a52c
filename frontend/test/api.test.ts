// @vitest-environment jsdom
import { describe, expect, it, vi } from "vitest";
import { actions } from "../src/actions";
import { Api, ApiError, query } from "../src/api";

function json(status: number, body: unknown, type = "application/json") {
  return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "Content-Type": type } });
}

describe("Api", () => {
  it("logs in with the session cookie, sends the CSRF token on writes only and no Authorization", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { username: "op", expiry: 2e9, csrf_token: "csrf-1" }))
      .mockResolvedValueOnce(json(200, { ok: true }))
      .mockResolvedValueOnce(json(200, { ok: true }));
    const api = new Api(fetchMock);
    const session = await api.login("op", "pw");
    expect(session.username).toBe("op");
    expect(api.authenticated).toBe(true);
    await api.get("/ui/overview");
    const [, read] = fetchMock.mock.calls[1];
    expect(read.headers.Authorization).toBeUndefined();
    expect(read.headers["X-CSRFToken"]).toBeUndefined();
    expect(read.credentials).toBe("same-origin");
    await actions.ack(api, "n");
    const [path, write] = fetchMock.mock.calls[2];
    expect([path, write.method, write.body]).toEqual(["/api/v1/notifications/n/ack", "POST", "{}"]);
    expect(write.headers["X-CSRFToken"]).toBe("csrf-1");
    expect(write.credentials).toBe("same-origin");
  });

  it("resumes a session after a reload from /ui/me, or finds none", async () => {
    const api = new Api(vi.fn()
      .mockResolvedValueOnce(json(200, { username: "op", token_expiry: 2e9, csrf_token: "csrf-2" }))
      .mockResolvedValueOnce(json(200, {})));
    expect((await api.resume())?.username).toBe("op");
    expect(api.authenticated).toBe(true);
    await actions.ack(api, "x");
    const none = new Api(vi.fn().mockResolvedValue(json(401, { status: 401, code: "not_authenticated" })));
    const onUnauthorized = vi.fn();
    none.onUnauthorized = onUnauthorized;
    expect(await none.resume()).toBeNull();
    expect(none.authenticated).toBe(false);
    expect(onUnauthorized).not.toHaveBeenCalled();
  });

  it("keeps the CSRF token out of web storage and cookies", async () => {
    const api = new Api(vi.fn().mockResolvedValue(json(200, { csrf_token: "secret-csrf", username: "op", expiry: 2e9 })));
    await api.login("op", "pw");
    expect(JSON.stringify({ ...localStorage })).not.toContain("secret-csrf");
    expect(JSON.stringify({ ...sessionStorage })).not.toContain("secret-csrf");
    expect(document.cookie).not.toContain("secret-csrf");
  });

  it("raises problem details as ApiError", async () => {
    const api = new Api(vi.fn().mockResolvedValue(json(409, { status: 409, code: "ack_conflict", detail: "already ACKED" }, "application/problem+json")));
    const err = (await actions.ack(api, "x").catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.problem.code).toBe("ack_conflict");
    expect(err.status).toBe(409);
  });

  it("forgets the session and tells the app on 401", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { csrf_token: "c", username: "op", expiry: 2e9 }))
      .mockResolvedValueOnce(json(401, { status: 401, code: "authentication_failed" }));
    const api = new Api(fetchMock);
    const onUnauthorized = vi.fn();
    api.onUnauthorized = onUnauthorized;
    await api.login("op", "pw");
    await expect(api.get("/ui/me")).rejects.toBeInstanceOf(ApiError);
    expect(onUnauthorized).toHaveBeenCalledOnce();
    expect(api.authenticated).toBe(false);
  });

  it("turns a network failure into a problem", async () => {
    const api = new Api(vi.fn().mockRejectedValue(new TypeError("Failed to fetch")));
    const err = (await api.get("/ui/me").catch((e: unknown) => e)) as ApiError;
    expect(err.problem.code).toBe("network_error");
  });

  it("logs out on the server and forgets the session even when that fails", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { csrf_token: "c", username: "op", expiry: 2e9 }))
      .mockResolvedValueOnce(json(500, {}));
    const api = new Api(fetchMock);
    await api.login("op", "pw");
    await api.logout();
    expect(fetchMock.mock.calls[1][0]).toBe("/api/v1/auth/logout");
    expect(api.authenticated).toBe(false);
  });

  it("builds query strings from set values only", () => {
    expect(query({ q: "disk", source: "", cursor: null, limit: 10 })).toBe("?q=disk&limit=10");
    expect(query({})).toBe("");
  });
});

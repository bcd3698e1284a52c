// @vitest-environment jsdom
import { describe, expect, it, vi } from "vitest";
import { Api, ApiError, query } from "../src/api";

function json(status: number, body: unknown, type = "application/json") {
  return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: { "Content-Type": type } });
}

describe("Api", () => {
  it("logs in, then sends the token as a Bearer header and never a cookie", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { token: "t0k", username: "op", expiry: 2e9 }))
      .mockResolvedValueOnce(json(200, { ok: true }));
    const api = new Api(fetchMock);
    const session = await api.login("op", "pw");
    expect(session.username).toBe("op");
    expect(api.bearer).toBe("t0k");
    await api.get("/ui/overview");
    const [, init] = fetchMock.mock.calls[1];
    expect(init.headers.Authorization).toBe("Bearer t0k");
    expect(init.credentials).toBe("omit");
    const [, loginInit] = fetchMock.mock.calls[0];
    expect(loginInit.headers.Authorization).toBeUndefined();
  });

  it("keeps the token out of web storage", async () => {
    const api = new Api(vi.fn().mockResolvedValue(json(200, { token: "secret-token", username: "op", expiry: 2e9 })));
    await api.login("op", "pw");
    expect(JSON.stringify({ ...localStorage })).not.toContain("secret-token");
    expect(JSON.stringify({ ...sessionStorage })).not.toContain("secret-token");
    expect(document.cookie).not.toContain("secret-token");
  });

  it("raises problem details as ApiError", async () => {
    const api = new Api(vi.fn().mockResolvedValue(json(409, { status: 409, code: "ack_conflict", detail: "already ACKED" }, "application/problem+json")));
    const err = (await api.post("/api/v1/notifications/x/ack").catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.problem.code).toBe("ack_conflict");
    expect(err.status).toBe(409);
  });

  it("drops the token and tells the app on 401", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { token: "t", username: "op", expiry: 2e9 }))
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

  it("logs out on the server and forgets the token even when that fails", async () => {
    const fetchMock = vi.fn()
      .mockResolvedValueOnce(json(200, { token: "t", username: "op", expiry: 2e9 }))
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

// The console's HTTP client. Reads come only from the /ui/* read models (INV-UI-001); writes go
// to the capability-gated /api/v1/* endpoints. The credential is the server's session cookie
// (HttpOnly, SameSite=Strict: no script reads it, no other site's request carries it), so a reload
// keeps the session; every write sends the CSRF token, which this object holds in memory only
// (from the login or /ui/me answer), never in localStorage, sessionStorage or a readable cookie.

export interface Problem {
  type?: string;
  title?: string;
  status: number;
  detail?: string;
  code?: string;
  errors?: unknown;
  [extra: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;

  constructor(problem: Problem) {
    super(problem.detail || problem.title || `HTTP ${problem.status}`);
    this.name = "ApiError";
    this.status = problem.status;
    this.problem = problem;
  }
}

export interface Session {
  username: string;
  expiry: number; // epoch seconds
  csrf_token?: string;
}

type Fetch = typeof fetch;

async function readProblem(response: Response): Promise<Problem> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (body && typeof body === "object" && !Array.isArray(body)) {
    return { status: response.status, ...(body as object) } as Problem;
  }
  return { status: response.status, title: response.statusText || "Request failed" };
}

export class Api {
  private session = false;
  private csrf: string | null = null;
  onUnauthorized: (() => void) | null = null;

  constructor(private readonly fetchImpl: Fetch = (...args) => fetch(...args)) {}

  get authenticated(): boolean {
    return this.session;
  }

  async login(username: string, password: string): Promise<Session> {
    const session = await this.request<Session>("POST", "/api/v1/auth/login", { username, password }, false);
    this.session = true;
    this.csrf = session.csrf_token ?? null;
    return session;
  }

  /** After a reload: the session the cookie still carries, or null (no session, or it ended). */
  async resume<T extends { username: string; token_expiry: number | null; csrf_token?: string | null }>(): Promise<T | null> {
    try {
      const me = await this.request<T>("GET", "/ui/me", undefined, false);
      this.session = true;
      this.csrf = me.csrf_token ?? null;
      return me;
    } catch (err) {
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return null;
      throw err;
    }
  }

  async logout(): Promise<void> {
    try {
      if (this.session) await this.request("POST", "/api/v1/auth/logout", undefined, true);
    } catch {
      // Forgotten here either way; an expired session is already gone on the server.
    } finally {
      this.forget();
    }
  }

  /** Forget the session without calling the server (expiry). */
  forget(): void {
    this.session = false;
    this.csrf = null;
  }

  get<T>(path: string): Promise<T> {
    return this.request<T>("GET", path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>("POST", path, body ?? {});
  }

  delete<T>(path: string): Promise<T> {
    return this.request<T>("DELETE", path);
  }

  async request<T>(method: string, path: string, body?: unknown, auth = true): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && method !== "HEAD" && this.csrf) headers["X-CSRFToken"] = this.csrf;
    let response: Response;
    try {
      response = await this.fetchImpl(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "same-origin", // the session cookie; never sent to another origin
        cache: "no-store",
      });
    } catch (err) {
      throw new ApiError({ status: 0, title: "Network error", code: "network_error", detail: String(err) });
    }
    if (!response.ok) {
      const problem = await readProblem(response);
      if (response.status === 401 && auth && this.session) {
        this.forget();
        this.onUnauthorized?.();
      }
      throw new ApiError(problem);
    }
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }
}

/** Query string from defined, non-empty values. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

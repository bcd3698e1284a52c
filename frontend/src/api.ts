// The console's HTTP client. Reads come only from the /ui/* read models (INV-UI-001); writes go
// to the capability-gated /api/v1/* endpoints. The token lives in this object's memory only:
// never in localStorage, sessionStorage or a cookie.

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
  token: string;
  username: string;
  expiry: number; // epoch seconds
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
  private token: string | null = null;
  onUnauthorized: (() => void) | null = null;

  constructor(private readonly fetchImpl: Fetch = (...args) => fetch(...args)) {}

  get authenticated(): boolean {
    return this.token !== null;
  }

  /** The token for the WebSocket URL; null when logged out. */
  get bearer(): string | null {
    return this.token;
  }

  async login(username: string, password: string): Promise<Session> {
    const session = await this.request<Session>("POST", "/api/v1/auth/login", { username, password }, false);
    this.token = session.token;
    return session;
  }

  async logout(): Promise<void> {
    const had = this.token;
    try {
      if (had) await this.request("POST", "/api/v1/auth/logout", undefined, true);
    } catch {
      // The token is dropped from memory either way; an expired one is already gone.
    } finally {
      this.token = null;
    }
  }

  /** Forget the token without calling the server (expiry). */
  forget(): void {
    this.token = null;
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
    if (auth && this.token) headers.Authorization = `Bearer ${this.token}`;
    let response: Response;
    try {
      response = await this.fetchImpl(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit", // no cookies: the Bearer token is the only credential
        cache: "no-store",
      });
    } catch (err) {
      throw new ApiError({ status: 0, title: "Network error", code: "network_error", detail: String(err) });
    }
    if (!response.ok) {
      const problem = await readProblem(response);
      if (response.status === 401 && auth && this.token) {
        this.token = null;
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

// The console's HTTP client. Reads come only from the /ui/* read models (INV-UI-001); writes go
// to the capability-gated /api/v1/* endpoints, through ``api.v1``: an openapi-fetch client typed
// on the types generated from the /api/v1 OpenAPI document (src/generated/api-v1.ts), unwrapped
// by ``ok``. The credential is the server's session cookie (HttpOnly, SameSite=Strict: no script
// reads it, no other site's request carries it), so a reload keeps the session; every write
// sends the CSRF token, which this object holds in memory only (from the login or /ui/me answer),
// never in localStorage, sessionStorage or a readable cookie.
import createClient, { type Client } from "openapi-fetch";
import type { paths as V1Paths } from "./generated/api-v1";

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

/** Whether ``err`` is a refusal that asking again unchanged would only repeat: a 4xx answer,
 *  except 408 and 429 (which say "later", not "no"). */
export function isRefusal(err: unknown): boolean {
  return err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429;
}

/** Whether a failed read is worth retrying: no answer (``network_error``) or a 5xx. */
export function isTransient(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 0 || err.status >= 500);
}

export interface Session {
  username: string;
  expiry: number; // epoch seconds
  csrf_token?: string;
}

type Fetch = typeof fetch;

/** The problem of a refused answer: its problem+json body, or one made from the status. */
function problemOf(response: Response, body: unknown): Problem {
  if (body && typeof body === "object" && !Array.isArray(body)) {
    return { status: response.status, ...(body as object) } as Problem;
  }
  return { status: response.status, title: response.statusText || "Request failed" };
}

async function readProblem(response: Response): Promise<Problem> {
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  return problemOf(response, body);
}

/** What an openapi-fetch call resolves to (its ``FetchResponse``, for any operation). */
type Answer<D> = { data?: D; error?: unknown; response: Response };

/** The body of a successful /api/v1 answer; a refusal raises its problem as an ``ApiError``. */
export async function ok<D>(call: Promise<Answer<D>>): Promise<D> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(problemOf(response, error));
  return data as D;
}

// openapi-fetch builds a Request, which needs an absolute URL; the console only ever talks to its
// own origin, and the transport below sends the path alone.
const ORIGIN = typeof location !== "undefined" && location.origin.startsWith("http") ? location.origin : "http://console.invalid";

export class Api {
  private session = false;
  private csrf: string | null = null;
  onUnauthorized: (() => void) | null = null;
  /** Every /api/v1 call, typed on the generated types: ``ok(api.v1.POST("/api/v1/...", {...}))``. */
  readonly v1: Client<V1Paths>;

  constructor(private readonly fetchImpl: Fetch = (...args) => fetch(...args)) {
    this.v1 = createClient<V1Paths>({
      baseUrl: ORIGIN,
      fetch: async (request: Request) => {
        const url = new URL(request.url);
        const body = request.method === "GET" || request.method === "HEAD" ? undefined : (await request.text()) || undefined;
        return this.send(request.method, url.pathname + url.search, body);
      },
    });
  }

  get authenticated(): boolean {
    return this.session;
  }

  async login(username: string, password: string): Promise<Session> {
    const session = await ok(this.v1.POST("/api/v1/auth/login", { body: { username, password } }));
    this.session = true;
    this.csrf = session.csrf_token ?? null;
    return session;
  }

  /** After a reload: the session the cookie still carries, or null (no session, or it ended). */
  async resume<T extends { username: string; token_expiry: number | null; csrf_token?: string | null }>(): Promise<T | null> {
    try {
      const me = await this.get<T>("/ui/me");
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
      if (this.session) await ok(this.v1.POST("/api/v1/auth/logout"));
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

  /** GET a /ui read model; ``signal`` cancels it (a newer read took its place). */
  async get<T>(path: string, signal?: AbortSignal): Promise<T> {
    const response = await this.send("GET", path, undefined, signal);
    if (!response.ok) throw new ApiError(await readProblem(response));
    if (response.status === 204) return undefined as T;
    return (await response.json()) as T;
  }

  /** The one transport: the session cookie, the CSRF token on writes, a network failure as a
   *  problem, and a 401 while logged in ends the session (``onUnauthorized``). Returns the answer,
   *  refused or not. */
  private async send(method: string, path: string, body?: string, signal?: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (method !== "GET" && method !== "HEAD" && this.csrf) headers["X-CSRFToken"] = this.csrf;
    let response: Response;
    try {
      response = await this.fetchImpl(path, {
        method,
        headers,
        body,
        signal,
        credentials: "same-origin", // the session cookie; never sent to another origin
        cache: "no-store",
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new ApiError({ status: 0, title: "Network error", code: "network_error", detail: String(err) });
    }
    if (response.status === 401 && this.session) {
      this.forget();
      this.onUnauthorized?.();
    }
    return response;
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

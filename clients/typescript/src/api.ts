// A client of Freshen's HTTP API (refresh/http/openapi.json) for the insert
// side: create, update and trigger models, so that an application can say
// "this thumbnail changed" in one call. It uses the global fetch (Node 18+).

/** PolicyInput: when a model refreshes and what happens on failure. */
export interface Policy {
  schedule?: string;
  timezone?: string;
  timeout?: string;
  retry?: {
    delays?: string[];
    backoff?: { strategy?: string; base?: string; multiplier?: number; max_delay?: string; max_retries?: number };
    jitter?: number;
    align?: boolean;
    retry_on?: string[];
    non_retryable?: string[];
  };
  on_exhausted?: string;
  give_up_after?: string;
  disabled_message?: string;
  max_age?: string;
  trigger_debounce?: string | { quiet?: string; max_wait?: string };
  max_snooze?: string;
  spread?: string;
  max_lateness?: string;
}

/** The body of PUT and PATCH /models/{id}. */
export interface ModelInput {
  queue?: string;
  payload?: unknown;
  policy?: Policy;
  /** Ask for a refresh now, on create and replace alike. */
  trigger?: boolean;
  reason?: string;
  upstreams?: string[];
  upstreams_mode?: string;
}

/** A model as the API answers it (the members used most; the answer holds every member of the schema Model). */
export interface Model {
  id: string;
  queue: string;
  payload?: unknown;
  policy: Record<string, unknown>;
  state: string;
  running: boolean;
  refresh_at?: string | null;
  disabled: boolean;
  disabled_reason?: string;
  status_message?: string;
  last_success_at?: string | null;
  last_error?: { kind: string; message: string; at: string } | null;
  [member: string]: unknown;
}

/** The answer of an action (POST /models/{id}/trigger). */
export interface ActResult {
  model: Model;
  decision?: { event: string; rule: string; why: string };
  changed: boolean;
}

/** An answer other than 2xx: its status, the API's error text and the refusals by field. */
export class APIError extends Error {
  constructor(readonly status: number, readonly error: string, readonly fields: Array<{ field: string; rule: string }> = []) {
    super(`freshen API: ${status}: ${error}`);
    this.name = "APIError";
  }
}

/** Calls the API at baseUrl (e.g. "http://freshen:8080") with a token of `freshen token new` (scope write). */
export class Client {
  private readonly base: string;
  constructor(baseUrl: string, private readonly token = "") {
    this.base = baseUrl.replace(/\/+$/, "");
  }

  /** Creates or replaces the whole model id. */
  putModel(id: string, model: ModelInput): Promise<Model> {
    return this.call("PUT", `/models/${encodeURIComponent(id)}`, model);
  }

  /** Changes part of model id (a JSON merge patch). */
  patchModel(id: string, changes: ModelInput): Promise<Model> {
    return this.call("PATCH", `/models/${encodeURIComponent(id)}`, changes);
  }

  getModel(id: string): Promise<Model> {
    return this.call("GET", `/models/${encodeURIComponent(id)}`);
  }

  /** Asks for a refresh of model id now ("this changed"): a running attempt is superseded. */
  trigger(id: string, reason = ""): Promise<ActResult> {
    return this.call("POST", `/models/${encodeURIComponent(id)}/trigger`, reason ? { reason } : undefined);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const res = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    if (!res.ok) {
      let doc: { error?: string; fields?: Array<{ field: string; rule: string }> } = {};
      try {
        doc = JSON.parse(text);
      } catch {
        // not JSON: the status says enough
      }
      throw new APIError(res.status, doc?.error || res.statusText, doc?.fields ?? []);
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }
}

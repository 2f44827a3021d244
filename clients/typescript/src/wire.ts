// The wire format of queue/WIRE.md: keys, strict decoding of jobs, encoding
// of outcomes and dead-letter entries. Pure: no I/O.

/** Bounds of one message; use the scheduler's. */
export interface Limits {
  maxBytes: number;
  maxIdBytes: number;
  maxKindBytes: number;
  maxMessageBytes: number;
}

export const defaultLimits: Limits = { maxBytes: 1 << 20, maxIdBytes: 200, maxKindBytes: 64, maxMessageBytes: 4096 };

export const TRUNCATED_MARKER = "\u2026 [truncated]";

const namePattern = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$/;

/** Throws if name may not be a queue name or a worker id. */
export function validateName(what: string, name: string): void {
  if (typeof name !== "string" || !namePattern.test(name)) {
    throw new Error(`${what}: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got ${JSON.stringify(name)}`);
  }
}

/** The Redis keys of one prefix, queue and worker. */
export class Keys {
  readonly base: string;
  readonly jobs: string;
  readonly working: string;
  readonly workers: string;
  readonly outcomes: string;
  readonly dead: string;
  constructor(prefix: string, readonly queue: string, worker: string) {
    this.base = `${prefix}:{${prefix}}:`;
    this.jobs = `${this.base}jobs:${queue}`;
    this.working = this.workingOf(worker);
    this.workers = `${this.base}workers:${queue}`;
    this.outcomes = `${this.base}outcomes`;
    this.dead = `${this.base}dead`;
  }
  workingOf(worker: string): string {
    return `${this.base}working:${this.queue}:${worker}`;
  }
  revoked(uid: string): string {
    return `${this.base}revoked:${uid}`;
  }
  /** The prefix of the revocation keys, revoked(uid) without the uid. */
  get revokedPrefix(): string {
    return `${this.base}revoked:`;
  }
}

// ---- texts ----------------------------------------------------------------

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const loneSurrogates = new RegExp(loneSurrogate.source, "g");

/** s cut to at most max bytes of UTF-8 on a character boundary, ending with the marker. */
export function cutText(s: string, max: number): string {
  const b = Buffer.from(s, "utf8");
  if (b.length <= max) return s;
  let n = max - Buffer.byteLength(TRUNCATED_MARKER);
  while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
  return b.subarray(0, n).toString("utf8") + TRUNCATED_MARKER;
}

/** String(v), or, for a value String cannot convert (an object without a prototype), its type. */
export function describe(v: unknown): string {
  try {
    return String(v);
  } catch {
    return `[${typeof v}]`;
  }
}

/** A text the scheduler accepts: NUL and lone surrogates become U+FFFD, cut to max bytes. */
export function cleanText(s: unknown, max: number): string {
  const t = s == null ? "" : describe(s);
  return cutText(t.replace(/\u0000/g, "\ufffd").replace(loneSurrogates, "\ufffd"), max);
}

function validKind(kind: unknown, lim: Limits): kind is string {
  return typeof kind === "string" && kind !== "" && !kind.includes("\u0000") && !loneSurrogate.test(kind) && Buffer.byteLength(kind) <= lim.maxKindBytes;
}

/** t in RFC 3339, UTC, with milliseconds. */
export function formatTime(t: Date): string {
  return t.toISOString();
}

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** The RFC 3339 time s, or undefined if it is not one. */
export function parseTime(s: string): Date | undefined {
  const m = rfc3339.exec(s);
  if (!m) return undefined;
  const frac = m[7] ? m[7].slice(0, 4).padEnd(4, "0") : "";
  const t = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${frac}${m[8].toUpperCase()}`);
  return Number.isNaN(t.getTime()) ? undefined : t;
}

// ---- jobs -----------------------------------------------------------------

/** A job as the scheduler pushed it (WIRE.md, "Jobs"). */
export interface Job {
  modelId: string;
  attemptUid: string;
  attemptNo: number;
  queue: string;
  payload: unknown;
  startedAt?: Date;
  deadlineAt?: Date;
}

const fatal = new TextDecoder("utf-8", { fatal: true });

function validUtf8(b: Uint8Array): boolean {
  try {
    fatal.decode(b);
    return true;
  } catch {
    return false;
  }
}

const SPACE = new Set([0x20, 0x09, 0x0a, 0x0d]);

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && SPACE.has(b[i])) i++;
  return i;
}

function stringEnd(b: Buffer, i: number): number {
  for (i++; i < b.length; i++) {
    if (b[i] === 0x5c) i++;
    else if (b[i] === 0x22) return i + 1;
  }
  return i;
}

function valueEnd(b: Buffer, i: number): number {
  if (b[i] === 0x22) return stringEnd(b, i);
  if (b[i] === 0x7b || b[i] === 0x5b) {
    let depth = 0;
    while (i < b.length) {
      const c = b[i];
      if (c === 0x22) {
        i = stringEnd(b, i);
        continue;
      }
      if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    return i;
  }
  while (i < b.length && !(b[i] === 0x2c || b[i] === 0x7d || b[i] === 0x5d || SPACE.has(b[i]))) i++;
  return i;
}

/** The top-level members of the valid JSON object raw, as written. */
function members(raw: Buffer): Array<{ name: Buffer; value: Buffer }> {
  const out: Array<{ name: Buffer; value: Buffer }> = [];
  let i = skipSpace(raw, 0) + 1;
  for (;;) {
    i = skipSpace(raw, i);
    if (raw[i] === 0x7d || i >= raw.length) return out;
    const end = stringEnd(raw, i);
    const name = raw.subarray(i, end);
    i = skipSpace(raw, skipSpace(raw, end) + 1);
    const vend = valueEnd(raw, i);
    out.push({ name, value: raw.subarray(i, vend) });
    i = skipSpace(raw, vend);
    if (raw[i] === 0x2c) i++;
  }
}

function fieldName(name: string): string {
  return /^[A-Za-z0-9_.-]{1,64}$/.test(name) ? name : JSON.stringify(cutText(name, 64));
}

function short(v: string): string {
  return cutText(v, 64);
}

function textReason(s: string): string {
  if (s.includes("\u0000")) return "must not contain NUL (\\u0000)";
  const m = loneSurrogate.exec(s);
  if (m) return `must be valid UTF-8 (lone surrogate \\u${m[0].charCodeAt(0).toString(16).padStart(4, "0")})`;
  return "";
}

function kindOf(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (v === null) return "null";
  return { string: "a string", object: "an object", boolean: "a boolean" }[typeof v as string] ?? "a number";
}

// The string fields of a job, checked in this order.
const jobStrings = ["model_id", "attempt_uid", "queue", "started_at", "deadline_at"];

/**
 * The values of the top-level members of the JSON object raw, as written,
 * by name; or the reason a name breaks a rule (invalid UTF-8, a NUL or a
 * lone surrogate, given twice) or a value is not valid UTF-8. The values
 * are kept as slices of raw, decoded only when one is refused.
 */
function checkMembers(raw: Buffer): Record<string, Buffer> | string {
  const valid = validUtf8(raw);
  const seen = new Set<string>();
  const rawValue: Record<string, Buffer> = {};
  for (const m of members(raw)) {
    if (!valid && !validUtf8(m.name)) return "field name: must be valid UTF-8";
    const name = m.name.includes(0x5c) ? (JSON.parse(m.name.toString("utf8")) as string) : m.name.toString("utf8", 1, m.name.length - 1);
    const reason = textReason(name);
    if (reason) return `field name ${short(m.name.toString("utf8"))}: ${reason}`;
    if (!valid && !validUtf8(m.value)) return `${fieldName(name)}: must be valid UTF-8`;
    if (seen.has(name)) return `${fieldName(name)}: duplicate field`;
    seen.add(name);
    rawValue[name] = m.value;
  }
  return rawValue;
}

/** The job raw, or the reason (a string) it breaks a rule of the wire format. */
export function decodeJob(raw: Buffer, lim: Limits = defaultLimits): Job | string {
  if (raw.length > lim.maxBytes) return `too large: must be at most ${lim.maxBytes} bytes, got ${raw.length}`;
  const text = raw.toString("utf8");
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    return `invalid json: ${(e as Error).message}`;
  }
  if (typeof obj !== "object" || obj === null || Array.isArray(obj)) return "must be a JSON object, got " + kindOf(obj);
  // The text of a member's value as written.
  let valueText: (name: string) => string;
  if (!text.includes("\ufffd") && !text.includes("\\u") && JSON.stringify(obj) === text) {
    // Written as JSON.stringify writes it again (as the scheduler writes
    // jobs), decoded without a replacement character and without \u
    // escapes: its names are unique (a second one would be lost), the
    // whole is valid UTF-8, no name holds a NUL or a lone surrogate, and
    // each value is written as JSON.stringify writes it.
    valueText = (name) => JSON.stringify((obj as Record<string, unknown>)[name]);
  } else {
    const reason = checkMembers(raw);
    if (typeof reason === "string") return reason;
    valueText = (name) => reason[name].toString("utf8");
  }
  const written = (name: string) => short(valueText(name));
  const o = obj as Record<string, unknown>;
  const job: Job = { modelId: "", attemptUid: "", attemptNo: 0, queue: "", payload: o.payload ?? null };
  for (const name of jobStrings) {
    const v = o[name];
    if (v == null) continue;
    if (typeof v !== "string") return `${name}: must be a string, got ${written(name)}`;
    const reason = textReason(v);
    if (reason) return `${name}: ${reason}`;
    if (name === "model_id") job.modelId = v;
    else if (name === "attempt_uid") job.attemptUid = v;
    else if (name === "queue") job.queue = v;
    else {
      const t = parseTime(v);
      if (!t) return `${name}: must be an RFC 3339 time, got ${written(name)}`;
      if (name === "started_at") job.startedAt = t;
      else job.deadlineAt = t;
    }
  }
  if (o.attempt_no != null) {
    const v = valueText("attempt_no");
    if (!/^-?\d+$/.test(v)) return `attempt_no: must be an integer, got ${written("attempt_no")}`;
    job.attemptNo = Number(v);
  }
  for (const [name, v] of [["model_id", job.modelId], ["attempt_uid", job.attemptUid]]) {
    if (v === "") return `${name}: missing`;
    const n = Buffer.byteLength(v);
    if (n > lim.maxIdBytes) return `${name}: must be at most ${lim.maxIdBytes} bytes, got ${n}`;
  }
  return job;
}

/** The dead-letter entry of raw, set aside at at for reason. */
export function deadEntry(reason: string, raw: Buffer, at: Date, lim: Limits = defaultLimits): string {
  const message = raw.toString("utf8");
  const keep = Math.max(Math.floor(lim.maxBytes / 8), lim.maxMessageBytes);
  if (raw.length > keep) return JSON.stringify({ reason, message: cutText(message, lim.maxMessageBytes), at: formatTime(at), cut: true });
  return JSON.stringify({ reason, message, at: formatTime(at) });
}

// ---- outcomes -------------------------------------------------------------

/** Throw it from a handler to report a failure of a kind of your choosing. */
export class Failure extends Error {
  readonly kind: string;
  readonly retryable: boolean;
  readonly userMessage: string;
  constructor(kind: string, message = "", opts: { retryable?: boolean; userMessage?: string } = {}) {
    super(message);
    this.name = "Failure";
    this.kind = kind;
    this.retryable = opts.retryable ?? true;
    this.userMessage = opts.userMessage ?? "";
  }
}

/** What a handler may return besides nothing (a success). */
export type Result = { snooze: { forMs?: number; until?: Date } } | { unchanged: true };

/** Try again after forMs milliseconds, or at until, without counting a failure. */
export function snooze(when: { forMs: number } | { until: Date }): Result {
  return { snooze: when };
}

/** A success whose data did not change: dependents are not triggered. */
export function unchanged(): Result {
  return { unchanged: true };
}

export interface Outcome {
  model_id: string;
  attempt_uid: string;
  outcome: "success" | "failure" | "status" | "snooze";
  kind?: string;
  message?: string;
  retryable?: boolean;
  user_message?: string;
  until?: string;
  for?: string;
  unchanged?: boolean;
}

/** The class name of a thrown value, the kind of its failure. */
function className(err: unknown): string {
  if (err instanceof Error) return err.constructor?.name && err.constructor.name !== "Error" ? err.constructor.name : err.name || "Error";
  return "error";
}

/** The outcome of job whose handler returned result, or threw err (thrown true). */
export function outcomeOf(job: Job, result: unknown, thrown: boolean, err: unknown, lim: Limits = defaultLimits): Outcome {
  const o: Outcome = { model_id: job.modelId, attempt_uid: job.attemptUid, outcome: "success" };
  if (thrown) {
    const f = err instanceof Failure ? err : undefined;
    const kind = f ? f.kind : className(err);
    o.outcome = "failure";
    o.kind = validKind(kind, lim) ? kind : "error";
    const message = cleanText(err instanceof Error ? err.message || kind : err, lim.maxMessageBytes);
    if (message) o.message = message;
    if (f && !f.retryable) o.retryable = false;
    if (f && f.userMessage) o.user_message = cleanText(f.userMessage, lim.maxMessageBytes);
    return o;
  }
  const r = result as Partial<{ snooze: { forMs?: number; until?: Date }; unchanged: boolean }> | undefined;
  if (r && r.snooze) {
    o.outcome = "snooze";
    if (r.snooze.until) o.until = formatTime(r.snooze.until);
    else o.for = `${Math.max(1, Math.round(r.snooze.forMs ?? 0))}ms`;
  } else if (r && r.unchanged) {
    o.unchanged = true;
  }
  return o;
}

export function statusOutcome(job: Job, message: string, lim: Limits = defaultLimits): string {
  return JSON.stringify({ model_id: job.modelId, attempt_uid: job.attemptUid, outcome: "status", message: cleanText(message, lim.maxMessageBytes) });
}

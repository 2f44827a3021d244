// The worker: takes the jobs of one queue from Redis and runs a handler on
// each, up to `concurrency` at once, as queue/WIRE.md says.

import { createHash, randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { lua } from "./lua.generated.js";
import {
  Job,
  Keys,
  Limits,
  Result,
  decodeJob,
  deadEntry,
  defaultLimits,
  describe,
  outcomeOf,
  statusOutcome,
  validateName,
} from "./wire.js";

export type LogLevel = "debug" | "info" | "warn" | "error";
/** A hook for structured logging: a message and its fields. */
export type Logger = (level: LogLevel, message: string, fields: Record<string, unknown>) => void;

export const consoleLogger: Logger = (level, message, fields) => {
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg: message, ...fields });
  if (level === "error" || level === "warn") console.error(line);
  else if (level !== "debug") console.error(line);
};

export interface WorkerOptions {
  /** A Redis URL, or an ioredis client of your own (the worker makes a second connection, for its blocking takes, with duplicate()). */
  redis: string | Redis;
  /** The queue (default "default"). */
  queue?: string;
  /** Handlers run at once (default 1). */
  concurrency?: number;
  /** The worker's name among the queue's workers (default host-pid-random); keep it across restarts. */
  id?: string;
  /** The key prefix; must be the scheduler's (default "freshen"). */
  prefix?: string;
  /** Milliseconds the worker may go unseen before others give back its jobs (default 10000); it beats every lease/5. */
  leaseMs?: number;
  /** Milliseconds between two checks of the running jobs' revocation (default 500). */
  revokedCheckMs?: number;
  /** Milliseconds one take waits on Redis (default 1000); stopping takes up to this. */
  blockMs?: number;
  limits?: Partial<Limits>;
  logger?: Logger;
}

/** Why a running job was stopped: its attempt was revoked, or its deadline passed. */
export class JobCancelled extends Error {
  /** superseded, cancelled, deleted (or another reason the scheduler gave), or deadline. */
  readonly reason: string;
  constructor(reason: string) {
    super(`job stopped: ${reason}`);
    this.name = "JobCancelled";
    this.reason = reason;
  }
}

/** The handle a handler gets. */
export class RunningJob implements Job {
  readonly modelId: string;
  readonly attemptUid: string;
  readonly attemptNo: number;
  readonly queue: string;
  readonly payload: unknown;
  readonly startedAt?: Date;
  readonly deadlineAt?: Date;
  // Made when first asked for (an AbortController costs more than the rest
  // of a quick job), aborted at once if the job was cancelled before.
  private controller?: AbortController;
  private cancelled?: JobCancelled;
  private readonly waiters = new Set<() => void>();

  /** @internal */
  constructor(private readonly worker: Worker, job: Job) {
    this.modelId = job.modelId;
    this.attemptUid = job.attemptUid;
    this.attemptNo = job.attemptNo;
    this.queue = job.queue;
    this.payload = job.payload;
    this.startedAt = job.startedAt;
    this.deadlineAt = job.deadlineAt;
  }

  /** Aborted, with a JobCancelled as its reason, when the job must stop. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort(this.cancelled);
    }
    return this.controller.signal;
  }

  /** superseded, cancelled, deleted or deadline once the job must stop; undefined before. */
  get cancelReason(): string | undefined {
    return this.cancelled?.reason;
  }

  /** @internal */
  cancel(reason: string): boolean {
    if (this.cancelled) return false;
    this.cancelled = new JobCancelled(reason);
    this.controller?.abort(this.cancelled);
    for (const wake of this.waiters) wake();
    return true;
  }

  /** Posts a progress message, shown to customers while the job runs. */
  async status(message: string): Promise<void> {
    await this.worker.postStatus(this, message);
  }

  /** Waits up to ms milliseconds; true if the job was cancelled meanwhile. */
  wait(ms: number): Promise<boolean> {
    if (this.cancelled) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (v: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(onCancel);
        resolve(v);
      };
      const onCancel = () => done(true);
      const timer = setTimeout(() => done(false), ms);
      this.waiters.add(onCancel);
    });
  }
}

/**
 * A handler returns nothing (success), unchanged() or snooze(...), or
 * throws a Failure; anything else it throws is a failure whose kind is the
 * error's class name.
 */
export type Handler = (job: RunningJob) => Promise<Result | void> | Result | void;

class Script {
  readonly sha: string;
  constructor(readonly src: string) {
    this.sha = createHash("sha1").update(src).digest("hex");
  }
  async run(r: Redis, keys: string[], args: Array<string | number | Buffer>): Promise<unknown> {
    // ioredis has a Buffer variant of every command, untyped for these.
    const c = r as unknown as Record<"evalshaBuffer" | "evalBuffer", (...a: Array<string | number | Buffer>) => Promise<unknown>>;
    try {
      return await c.evalshaBuffer(this.sha, keys.length, ...keys, ...args);
    } catch (e) {
      if (!String((e as Error).message).startsWith("NOSCRIPT")) throw e;
      return await c.evalBuffer(this.src, keys.length, ...keys, ...args);
    }
  }
}

const scripts = {
  move: new Script(lua.move),
  post: new Script(lua.post),
  requeue: new Script(lua.requeue),
  dead: new Script(lua.dead),
  giveBack: new Script(lua.give_back),
};

interface Task {
  raw: Buffer;
  // The job, or why it is refused; decoded once.
  job?: Job | string;
  // The revocation of its attempt as read when it was taken (undefined: not
  // read), and the uid it was read for, which must be the decoded one for
  // that value to count.
  revoked?: string | null;
  readUid?: string;
  handle?: RunningJob;
}

/** A job done: its task and its outcome (none for a job dropped unrun). */
type Done = [Task, string | undefined];

export interface WorkerStats {
  taken: number;
  succeeded: number;
  failed: number;
  snoozed: number;
  expired: number;
  revoked: number;
  stopped: number;
  deadLettered: number;
  givenBack: number;
  recovered: number;
}

const MAX_BATCH = 1000;

/**
 * The tasks of a reply of move.lua with a revocation prefix: the messages,
 * then for each the attempt uid the script read (null if none) and the
 * value of its revocation key.
 */
function tasksOf(reply: Array<Buffer | null>): Task[] {
  const m = reply.length / 3;
  const tasks: Task[] = new Array(m);
  for (let i = 0; i < m; i++) {
    const uid = reply[m + 2 * i];
    const revoked = reply[m + 2 * i + 1];
    tasks[i] = uid === null ? { raw: reply[i]! } : { raw: reply[i]!, readUid: uid.toString(), revoked: revoked === null ? null : revoked.toString() };
  }
  return tasks;
}

function defaultId(): string {
  let host = hostname().replace(/[^A-Za-z0-9._@-]/g, "-").slice(0, 100);
  if (!/^[A-Za-z0-9]/.test(host)) host = "worker" + host;
  return `${host}-${process.pid}-${randomBytes(4).toString("hex")}`;
}

// Options for the connections the worker makes: a command is never sent
// again on its own (WIRE.md, "Failover"): a take whose reply was lost
// would run twice.
const connectionOptions = { autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1 };

export class Worker {
  readonly id: string;
  readonly stats: WorkerStats = { taken: 0, succeeded: 0, failed: 0, snoozed: 0, expired: 0, revoked: 0, stopped: 0, deadLettered: 0, givenBack: 0, recovered: 0 };
  private readonly r: Redis;
  private readonly blocking: Redis;
  private readonly own: boolean;
  private readonly keys: Keys;
  private readonly lim: Limits;
  private readonly log: Logger;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly revokedCheckMs: number;
  private readonly blockMs: number;
  private readonly active = new Set<Task>();
  private handlers = 0; // running
  private done: Done[] = [];
  private posting: Promise<void> | undefined;
  // True while the fetch loop will take again without waiting on Redis: the
  // outcomes that come meanwhile go with that take, in one write.
  private carrying = false;
  private free: number;
  private takes = 0; // odd while a take is under way
  private stopping = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly handler: Handler, opts: WorkerOptions) {
    const queue = opts.queue || "default";
    validateName("queue", queue);
    this.id = opts.id || defaultId();
    validateName("id", this.id);
    this.concurrency = opts.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new Error(`concurrency: must be an integer >= 1, got ${opts.concurrency}`);
    this.leaseMs = opts.leaseMs ?? 10000;
    this.revokedCheckMs = opts.revokedCheckMs ?? 500;
    this.blockMs = opts.blockMs ?? 1000;
    for (const [name, v] of [["leaseMs", this.leaseMs], ["revokedCheckMs", this.revokedCheckMs], ["blockMs", this.blockMs]] as const) {
      if (!(v > 0)) throw new Error(`${name}: must be > 0, got ${v}`);
    }
    this.lim = { ...defaultLimits, ...opts.limits };
    this.log = opts.logger ?? consoleLogger;
    this.keys = new Keys(opts.prefix || "freshen", queue, this.id);
    this.own = typeof opts.redis === "string";
    this.r = typeof opts.redis === "string" ? new Redis(opts.redis, connectionOptions) : opts.redis;
    this.blocking = this.r.duplicate();
    this.free = this.concurrency;
    this.tick();
  }

  /** Takes no more jobs; run resolves once the running ones are done and their outcomes posted. */
  stop(): void {
    this.stopping = true;
    this.tick();
  }

  /**
   * Runs until stop (or, with handleSignals, SIGTERM or SIGINT; a second
   * one exits at once without posting: the jobs are given back by the
   * lease, or at once to a worker started again with the same id).
   */
  async run(opts: { handleSignals?: boolean } = {}): Promise<void> {
    const onSignal = (sig: string) => {
      if (this.stopping) {
        this.log("warn", "second signal: exiting without posting", { signal: sig });
        process.exit(1);
      }
      this.log("info", "stopping: finishing the running jobs", { signal: sig });
      this.stop();
    };
    if (opts.handleSignals) {
      process.on("SIGTERM", onSignal);
      process.on("SIGINT", onSignal);
    }
    await this.giveBackAll();
    await this.beat();
    let closed = false;
    const beatLoop = (async () => {
      while (!closed) {
        await this.sleepUnlessClosed(this.leaseMs / 5, () => closed);
        if (closed) return;
        try {
          await this.beat();
        } catch (e) {
          this.log("error", "heartbeat", { err: String(e) });
        }
        await this.reconcile();
      }
    })();
    const watch = setInterval(() => void this.watch(), 100);
    try {
      this.carrying = true;
      await this.fetchLoop();
    } finally {
      this.carry(false);
      while (this.handlers > 0) await this.changed();
      await this.flush();
      closed = true;
      clearInterval(watch);
      await beatLoop;
      await this.giveBackAll();
      this.blocking.disconnect();
      if (this.own) await this.r.quit();
      if (opts.handleSignals) {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      }
    }
  }

  /** Wakes whoever waits in changed(). */
  private tick(): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves at the next tick: a slot freed, a take returned, stop. */
  private changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private async sleepUnlessClosed(ms: number, closed: () => boolean): Promise<void> {
    const end = Date.now() + ms;
    while (!closed() && Date.now() < end) await new Promise((r) => setTimeout(r, Math.min(100, end - Date.now())));
  }

  // ---- taking ----------------------------------------------------------

  private async fetchLoop(): Promise<void> {
    while (!this.stopping) {
      while (this.free === 0 && !this.stopping) await this.changed();
      // Let the handlers that are finishing free their slots too: one take
      // for all of them.
      await new Promise((r) => setImmediate(r));
      if (this.stopping) return;
      const n = Math.min(this.free, MAX_BATCH);
      this.free -= n;
      this.takes++;
      const tasks: Task[] = [];
      let failed = false;
      try {
        // While jobs wait, move.lua moves up to n of them (sent with the
        // outcomes waiting to be posted); when none does, BLMOVE waits for
        // the first, and move.lua takes more.
        const acks = this.posting ? [] : this.done.splice(0, MAX_BATCH);
        tasks.push(...(await this.take(n, acks)));
        if (tasks.length === 0) {
          this.carry(false);
          const raw = await this.blocking.blmoveBuffer(this.keys.jobs, this.keys.working, "RIGHT", "LEFT", this.blockMs / 1000);
          this.carrying = true;
          if (raw) {
            const first: Task = { raw };
            tasks.push(first);
            tasks.push(...(await this.take(n - 1, [], first)));
          }
        }
      } catch (e) {
        this.log("error", "take jobs", { err: String(e) });
        failed = true;
      }
      for (const t of tasks) this.active.add(t);
      this.takes++;
      this.free += n - tasks.length;
      this.stats.taken += tasks.length;
      this.tick();
      if (this.stopping) {
        for (const t of tasks) this.active.delete(t); // taken while stopping: run gives them back
        this.free += tasks.length;
        return;
      }
      await this.start(tasks);
      if (failed) {
        this.carry(false);
        await this.reconcile();
        await this.sleepUnlessClosed(this.blockMs, () => this.stopping);
        this.carrying = true;
      }
    }
  }

  /** Sets whether the fetch loop carries the outcomes; when it stops, the post loop posts those waiting. */
  private carry(on: boolean): void {
    this.carrying = on;
    if (!on && !this.posting && this.done.length > 0) this.posting = this.postLoop();
  }

  /**
   * Dead-letters the tasks whose job is refused, drops those past their
   * deadline or revoked (reading, with one MGET, the revocations the take
   * did not read), and runs the others.
   */
  private async start(tasks: Task[]): Promise<void> {
    const now = Date.now();
    const run: Array<[Task, Job]> = [];
    const unread: Array<[Task, Job]> = [];
    for (const t of tasks) {
      const job = (t.job ??= decodeJob(t.raw, this.lim));
      if (typeof job === "string") {
        await this.deadLetter(t, "job: " + job);
        continue;
      }
      if (job.deadlineAt && job.deadlineAt.getTime() <= now) {
        this.stats.expired++;
        this.log("info", "dropped job past its deadline", { model_id: job.modelId, attempt_uid: job.attemptUid });
        this.finish(t, undefined);
        continue;
      }
      if (t.readUid !== job.attemptUid) t.revoked = undefined;
      run.push([t, job]);
      if (t.revoked === undefined) unread.push([t, job]);
    }
    if (unread.length > 0) {
      try {
        const vals = await this.r.mget(unread.map(([, job]) => this.keys.revoked(job.attemptUid)));
        unread.forEach(([t], i) => (t.revoked = vals[i]));
      } catch (e) {
        this.log("error", "check whether the attempts were revoked", { err: String(e) }); // a revocation is seen while they run
      }
    }
    for (const [t, job] of run) {
      if (t.revoked != null) {
        this.stats.revoked++;
        this.log("info", "dropped job: attempt revoked", { model_id: job.modelId, attempt_uid: job.attemptUid, reason: t.revoked });
        this.finish(t, undefined);
        continue;
      }
      t.handle = new RunningJob(this, job);
      this.handlers++;
      void this.runOne(t, job);
    }
  }

  /** Runs the handler on t and has its outcome posted. */
  private async runOne(t: Task, job: Job): Promise<void> {
    let result: unknown, err: unknown, thrown = false;
    try {
      result = await this.handler(t.handle!);
    } catch (e) {
      thrown = true;
      err = e;
    }
    const o = outcomeOf(job, result, thrown, err, this.lim);
    if (o.outcome === "success") this.stats.succeeded++;
    else if (o.outcome === "snooze") this.stats.snoozed++;
    else {
      this.stats.failed++;
      this.log("info", "job failed", { model_id: o.model_id, attempt_uid: o.attempt_uid, kind: o.kind, err: describe(err) });
    }
    t.handle = undefined;
    this.handlers--;
    this.finish(t, JSON.stringify(o));
  }

  /** Has t acknowledged (with its outcome, if any) and frees its slot; t stays active until then. */
  private finish(t: Task, outcome: string | undefined): void {
    this.done.push([t, outcome]);
    this.free++;
    this.tick();
    if (!this.posting && !this.carrying) this.posting = this.postLoop();
  }

  private async deadLetter(t: Task, reason: string): Promise<void> {
    try {
      const [n] = (await scripts.dead.run(this.r, [this.keys.working, this.keys.dead], [0, t.raw, deadEntry(reason, t.raw, new Date(), this.lim)])) as number[];
      this.stats.deadLettered += n;
    } catch (e) {
      this.log("error", "dead-letter job", { err: String(e) });
    }
    this.log("warn", "dead-lettered job", { reason, message: t.raw.subarray(0, 200).toString("utf8") });
    this.active.delete(t);
    this.free++;
    this.tick();
  }

  // ---- acknowledging ---------------------------------------------------

  private async postLoop(): Promise<void> {
    await new Promise((r) => setImmediate(r)); // gather what finishes in this turn
    while (this.done.length > 0) {
      const batch = this.done.splice(0, MAX_BATCH);
      await this.post(batch);
    }
    this.posting = undefined;
  }

  private async flush(): Promise<void> {
    while (this.posting) await this.posting;
  }

  /** The arguments of post.lua for batch: the outcomes, then the jobs. */
  private postArgs(batch: Done[]): Array<string | Buffer | number> {
    const outcomes: string[] = [];
    for (const [, o] of batch) if (o !== undefined) outcomes.push(o);
    const args: Array<string | Buffer | number> = [outcomes.length, ...outcomes];
    // As strings (a job acknowledged was decoded: its bytes are valid
    // UTF-8), which ioredis writes without copying them into a Buffer.
    for (const [t] of batch) args.push(t.raw.toString());
    return args;
  }

  /**
   * Pushes the outcomes of batch and drops its jobs from the working list
   * in one step (post.lua); a job whose outcome could not be posted stays
   * there, and the reconciliation gives it back.
   */
  private async post(batch: Done[]): Promise<void> {
    let delay = 100;
    for (let attempt = 1; ; attempt++) {
      try {
        await scripts.post.run(this.r, [this.keys.outcomes, this.keys.working], this.postArgs(batch));
        break;
      } catch (e) {
        if (attempt === 5) {
          this.log("error", "post outcomes: giving up", { count: batch.length, err: String(e) });
          break;
        }
        this.log("error", "post outcomes", { count: batch.length, err: String(e), retry_in_ms: delay });
        await new Promise((r) => setTimeout(r, delay));
        delay *= 2;
      }
    }
    for (const [t] of batch) this.active.delete(t);
  }

  /**
   * Takes up to n jobs with move.lua, which also reads their revocations,
   * and returns them; in the same write, it posts acks (post.lua) and reads
   * the revocation of first, a job taken already. If posting acks failed,
   * they are posted as post does, before the take's error, if any, is
   * thrown.
   */
  private async take(n: number, acks: Done[], first?: Task): Promise<Task[]> {
    const keys = [this.keys.jobs, this.keys.working];
    const args = [n, 8 * this.lim.maxBytes, "", "", this.keys.revokedPrefix];
    const commands: unknown[][] = [];
    if (acks.length > 0) commands.push(["evalshaBuffer", scripts.post.sha, 2, this.keys.outcomes, this.keys.working, ...this.postArgs(acks)]);
    if (n > 0) commands.push(["evalshaBuffer", scripts.move.sha, 2, ...keys, ...args]);
    if (first) {
      first.job = decodeJob(first.raw, this.lim);
      if (typeof first.job === "object") {
        first.readUid = first.job.attemptUid;
        commands.push(["get", this.keys.revoked(first.job.attemptUid)]);
      }
    }
    if (commands.length === 0) return [];
    let res: Array<[Error | null, unknown]> | null = null;
    try {
      res = await this.r.pipeline(commands).exec();
    } catch (e) {
      this.log("error", "post outcomes and take jobs", { err: String(e) });
    }
    let i = 0;
    if (acks.length > 0) {
      const posted = res?.[i++];
      if (!posted || posted[0]) await this.post(acks);
      else for (const [t] of acks) this.active.delete(t);
    }
    let taken: Task[] = [];
    if (n > 0) {
      const reply = res?.[i++];
      if (!reply) throw new Error("take jobs: no reply");
      if (reply[0] && !String(reply[0].message).startsWith("NOSCRIPT")) throw reply[0];
      taken = tasksOf((reply[0] ? await scripts.move.run(this.r, keys, args) : reply[1]) as Array<Buffer | null>);
    }
    if (first?.readUid !== undefined) {
      const got = res?.[i++];
      if (got && !got[0]) first.revoked = got[1] as string | null;
    }
    return taken;
  }

  /** @internal */
  async postStatus(job: RunningJob, message: string): Promise<void> {
    await this.r.lpush(this.keys.outcomes, statusOutcome(job, message, this.lim));
  }

  // ---- heartbeat, recovery, revocation, deadlines ----------------------

  private async beat(): Promise<void> {
    const now = Date.now();
    await this.r.zadd(this.keys.workers, now, this.id);
    const cutoff = now - this.leaseMs;
    let moved = 0;
    for (const member of await this.r.zrangebyscore(this.keys.workers, "-inf", cutoff)) {
      if (member === this.id) continue;
      const n = (await scripts.requeue.run(this.r, [this.keys.workingOf(member), this.keys.jobs, this.keys.workers], [member, cutoff])) as number;
      moved += Math.max(0, n);
    }
    if (moved > 0) {
      this.stats.recovered += moved;
      this.log("info", "gave back jobs of dead workers", { count: moved });
    }
  }

  /** Gives back the jobs of the working list this worker does not run (a take's reply was lost, or an outcome could not be posted). */
  private async reconcile(): Promise<void> {
    try {
      const under = this.takes % 2 === 1 ? this.takes : undefined;
      const items = await this.r.lrangeBuffer(this.keys.working, 0, -1);
      if (items.length === 0) return;
      while (under !== undefined && this.takes === under) await this.changed();
      const held = new Map<string, number>();
      for (const t of this.active) held.set(t.raw.toString("latin1"), (held.get(t.raw.toString("latin1")) ?? 0) + 1);
      const stranded: Buffer[] = [];
      for (const raw of items) {
        const k = raw.toString("latin1");
        const n = held.get(k) ?? 0;
        if (n > 0) held.set(k, n - 1);
        else stranded.push(raw);
      }
      if (stranded.length === 0) return;
      const n = (await scripts.giveBack.run(this.r, [this.keys.working, this.keys.jobs], stranded)) as number;
      this.stats.givenBack += n;
      if (n > 0) this.log("warn", "gave back jobs held but not running", { count: n });
    } catch (e) {
      this.log("error", "reconcile working list", { err: String(e) });
    }
  }

  private lastRevokedCheck = 0;
  private checking = false;

  /** Stops the running jobs whose deadline passed (every 100 ms) or whose attempt was revoked (every revokedCheckMs). */
  private async watch(): Promise<void> {
    const now = Date.now();
    const running = [...this.active].filter((t) => t.handle && !t.handle.cancelReason);
    for (const t of running) {
      const d = t.handle!.deadlineAt;
      if (d && d.getTime() <= now) this.cancel(t, "deadline");
    }
    if (this.checking || now - this.lastRevokedCheck < this.revokedCheckMs) return;
    const live = running.filter((t) => t.handle && !t.handle.cancelReason);
    if (live.length === 0) return;
    this.lastRevokedCheck = now;
    this.checking = true;
    try {
      const vals = await this.r.mget(live.map((t) => this.keys.revoked(t.handle!.attemptUid)));
      live.forEach((t, i) => {
        if (vals[i] != null) {
          this.stats.stopped++;
          this.cancel(t, vals[i]!);
        }
      });
    } catch (e) {
      this.log("error", "check revoked attempts", { err: String(e) });
    } finally {
      this.checking = false;
    }
  }

  private cancel(t: Task, reason: string): void {
    const h = t.handle;
    if (h?.cancel(reason)) this.log("info", "stopping job", { model_id: h.modelId, attempt_uid: h.attemptUid, reason });
  }

  private async giveBackAll(): Promise<void> {
    const n = (await scripts.requeue.run(this.r, [this.keys.working, this.keys.jobs, this.keys.workers], [this.id, ""])) as number;
    if (n > 0) {
      this.stats.givenBack += n;
      this.log("info", "gave back unfinished jobs", { count: n });
    }
  }
}

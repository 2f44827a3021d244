// The worker against a real Redis (REDIS_URL, as scripts/with-servers.sh exports it).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, describe, test } from "node:test";
import { Redis } from "ioredis";
import { Worker } from "../dist/esm/index.js";
import { handle } from "../examples/conformance.mjs";

const URL = process.env.REDIS_URL;
const quiet = () => {};

describe("worker", { skip: URL ? false : "REDIS_URL is not set: run under scripts/with-servers.sh" }, () => {
  const r = URL ? new Redis(URL) : undefined;
  after(() => r?.quit());

  function setup() {
    const prefix = "t" + randomBytes(5).toString("hex");
    const p = `${prefix}:{${prefix}}:`;
    const workers = [];
    const ctx = {
      p,
      start(opts = {}) {
        const w = new Worker(
          async (job) => {
            if (job.payload?.conformance?.abortable) {
              const signal = job.signal; // aborted when the job must stop
              await new Promise((res) => signal.addEventListener("abort", res));
              throw signal.reason;
            }
            if (job.payload?.conformance?.bare) throw Object.create(null); // String() cannot convert it
            if (job.payload?.conformance?.raise) {
              class KeyError extends Error {}
              throw new KeyError(job.payload.conformance.raise);
            }
            return handle(job);
          },
          { redis: URL, prefix, queue: "q", blockMs: 200, concurrency: 4, logger: quiet, ...opts },
        );
        const done = w.run();
        workers.push({ w, done });
        return { w, stop: () => (w.stop(), done) };
      },
      async push(model, { uid, deadline = 3600, ...conformance } = {}) {
        uid ??= randomBytes(8).toString("hex");
        const job = { model_id: model, attempt_uid: uid, attempt_no: 1, queue: "q", payload: { conformance }, deadline_at: new Date(Date.now() + deadline * 1000).toISOString() };
        await r.lpush(p + "jobs:q", JSON.stringify(job));
        return uid;
      },
      async outcomes(n, timeout = 10000) {
        const end = Date.now() + timeout;
        while (Date.now() < end) {
          const got = await r.lrange(p + "outcomes", 0, -1);
          if (got.length >= n) return got.reverse().map((o) => JSON.parse(o));
          await new Promise((res) => setTimeout(res, 20));
        }
        assert.fail(`fewer than ${n} outcomes after ${timeout} ms`);
      },
      async cleanup() {
        for (const { w, done } of workers) {
          w.stop();
          await done;
        }
        const keys = await r.keys(p.replace(/[{}]/g, "\\$&") + "*");
        if (keys.length) await r.del(...keys);
      },
    };
    return ctx;
  }
  const byModel = (outs) => Object.fromEntries(outs.filter((o) => o.outcome !== "status").map((o) => [o.model_id, o]));

  test("outcomes", async () => {
    const c = setup();
    const { w, stop } = c.start();
    await c.push("ok");
    await c.push("raise", { raise: "boom" });
    await c.push("fail", { do: "fail", kind: "validation", message: "row 3: no date", retryable: false, user_message: "Row 3 of your file has no date." });
    await c.push("snooze", { do: "snooze", snooze_for: 90 });
    await c.push("same", { status: ["downloading"], unchanged: true });
    await c.push("long", { do: "fail", message: "x".repeat(5000) });
    await c.push("bare", { bare: true });
    const got = byModel(await c.outcomes(8));
    await stop();
    assert.equal(got.ok.outcome, "success");
    assert.deepEqual([got.raise.outcome, got.raise.kind], ["failure", "KeyError"]);
    assert.equal(got.fail.user_message, "Row 3 of your file has no date.");
    assert.equal(got.fail.retryable, false);
    assert.equal(got.snooze.for, "90000ms");
    assert.equal(got.same.unchanged, true);
    assert.equal(Buffer.byteLength(got.long.message), 4096);
    assert.deepEqual([got.bare.outcome, got.bare.kind, got.bare.message], ["failure", "error", "[object]"]);
    assert.equal(await r.llen(`${c.p}working:q:${w.id}`), 0);
    assert.equal(await r.zscore(`${c.p}workers:q`, w.id), null, "a stopped worker leaves the set");
    await c.cleanup();
  });

  test("a malformed job is dead-lettered", async () => {
    const c = setup();
    c.start();
    await r.lpush(c.p + "jobs:q", '{"model_id":"m","attempt_uid":"u","attempt_no":"2"}');
    await c.push("after");
    await c.outcomes(1);
    const dead = (await r.lrange(c.p + "dead", 0, -1)).map((e) => JSON.parse(e).reason);
    assert.deepEqual(dead, ['job: attempt_no: must be an integer, got "2"']);
    await c.cleanup();
  });

  test("revoked and expired jobs are dropped unrun", async () => {
    const c = setup();
    const uid = randomBytes(8).toString("hex");
    await r.set(c.p + "revoked:" + uid, "cancelled");
    await c.push("revoked", { uid });
    await c.push("expired", { deadline: -1 });
    await c.push("last");
    const { w, stop } = c.start({ concurrency: 1 });
    assert.deepEqual((await c.outcomes(1)).map((o) => o.model_id), ["last"]);
    await stop();
    assert.deepEqual([w.stats.revoked, w.stats.expired], [1, 1]);
    assert.equal(await r.llen(c.p + "outcomes"), 1);
    await c.cleanup();
  });

  test("a revoked job is dropped unrun however it is taken", async () => {
    // The take reads the revocation of the jobs it moves; of one that came
    // with BLMOVE, in the same write; of one whose uid the take read
    // otherwise than the decoder (an escape, a member of the payload of the
    // same name written first), with an MGET.
    const c = setup();
    try {
      const revoke = async (uid) => (await r.set(c.p + "revoked:" + uid, "cancelled"), uid);
      const job = (model, uid) => ({ model_id: model, attempt_uid: uid, attempt_no: 1, queue: "q", deadline_at: new Date(Date.now() + 3600e3).toISOString() });
      await c.push("moved", { uid: await revoke("moved-1") });
      await revoke("escaped-1");
      await r.lpush(c.p + "jobs:q", JSON.stringify(job("escaped", "escaped-1")).replace('"escaped-1"', '"escaped\\u002d1"'));
      await revoke("decoy-1");
      await r.lpush(c.p + "jobs:q", JSON.stringify({ payload: { attempt_uid: "not-revoked" }, ...job("decoy", "decoy-1") }));
      await c.push("first");
      const { w, stop } = c.start({ concurrency: 2 });
      assert.deepEqual((await c.outcomes(1)).map((o) => o.model_id), ["first"]);
      // Then it waits in BLMOVE.
      const end = Date.now() + 5000;
      while (w.stats.taken < 4 || !/ cmd=blmove /.test(await r.client("LIST"))) {
        assert.ok(Date.now() < end, "the worker does not wait in BLMOVE");
        await new Promise((res) => setTimeout(res, 20));
      }
      await c.push("blocked", { uid: await revoke("blocked-1") });
      await c.push("last");
      assert.deepEqual((await c.outcomes(2)).map((o) => o.model_id), ["first", "last"]);
      await stop();
      assert.deepEqual([w.stats.taken, w.stats.revoked], [6, 4]);
      assert.equal(await r.llen(c.p + "outcomes"), 2);
      assert.equal(await r.llen(`${c.p}working:q:${w.id}`), 0);
    } finally {
      await c.cleanup();
    }
  });

  test("a revocation stops a running job within a second", async () => {
    const c = setup();
    const { w } = c.start();
    const uid = await c.push("long", { sleep: 30 });
    while (w.stats.taken === 0) await new Promise((res) => setTimeout(res, 20));
    await new Promise((res) => setTimeout(res, 100));
    const t0 = Date.now();
    await r.set(c.p + "revoked:" + uid, "superseded");
    const [o] = await c.outcomes(1);
    assert.ok(Date.now() - t0 < 1000, `${Date.now() - t0} ms`);
    assert.equal(o.outcome, "failure");
    assert.equal(w.stats.stopped, 1);
    await c.cleanup();
  });

  test("the job's signal aborts with the reason", async () => {
    const c = setup();
    const { w } = c.start();
    const uid = await c.push("abortable", { abortable: true });
    while (w.stats.taken === 0) await new Promise((res) => setTimeout(res, 20));
    await r.set(c.p + "revoked:" + uid, "cancelled");
    const [o] = await c.outcomes(1);
    assert.deepEqual([o.kind, o.message], ["JobCancelled", "job stopped: cancelled"]);
    await c.cleanup();
  });

  test("the deadline stops a running job", async () => {
    const c = setup();
    c.start();
    await c.push("late", { deadline: 0.5, sleep: 30 });
    const t0 = Date.now();
    const [o] = await c.outcomes(1);
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(o.outcome, "failure");
    await c.cleanup();
  });

  test("the jobs of a dead worker are given back", async () => {
    const c = setup();
    await r.lpush(c.p + "working:q:dead-1", JSON.stringify({ model_id: "orphan", attempt_uid: "u1" }));
    await r.zadd(c.p + "workers:q", Date.now() - 60000, "dead-1");
    const { w, stop } = c.start({ leaseMs: 1000 });
    assert.equal((await c.outcomes(1))[0].model_id, "orphan");
    await stop();
    assert.equal(w.stats.recovered, 1);
    assert.equal(await r.zscore(c.p + "workers:q", "dead-1"), null);
    await c.cleanup();
  });

  test("a job held but not run is given back", async () => {
    const c = setup();
    const { w, stop } = c.start({ leaseMs: 500 });
    await r.lpush(`${c.p}working:q:${w.id}`, JSON.stringify({ model_id: "stranded", attempt_uid: "u1" }));
    assert.equal((await c.outcomes(1))[0].model_id, "stranded");
    await stop();
    assert.ok(w.stats.givenBack >= 1);
    await c.cleanup();
  });

  test("a restarted worker gives back its previous life's jobs", async () => {
    const c = setup();
    await r.lpush(c.p + "working:q:w1", JSON.stringify({ model_id: "again", attempt_uid: "u1" }));
    c.start({ id: "w1" });
    assert.equal((await c.outcomes(1))[0].model_id, "again");
    await c.cleanup();
  });

  test("stop lets running jobs finish and posts their outcomes", async () => {
    const c = setup();
    const { w, stop } = c.start({ concurrency: 2 });
    await c.push("a", { status: ["running"], sleep: 0.5 });
    await c.push("b", { status: ["running"], sleep: 0.5 });
    await c.outcomes(2); // both statuses: both jobs run
    await stop();
    assert.deepEqual(Object.keys(byModel(await c.outcomes(4, 100))).sort(), ["a", "b"]);
    assert.equal(await r.llen(`${c.p}working:q:${w.id}`), 0);
    await c.cleanup();
  });

  test("many jobs with concurrency", async () => {
    const c = setup();
    c.start({ concurrency: 16 });
    for (let i = 0; i < 500; i++) await c.push(`m${i}`);
    assert.equal(new Set((await c.outcomes(500)).map((o) => o.model_id)).size, 500);
    await c.cleanup();
  });
});

"""The workers against a real Redis (REDIS_URL, as scripts/with-servers.sh
exports it); each test runs on the threaded worker and on the asyncio one."""

import asyncio
import json
import os
import sys
import threading
import time
import unittest
import uuid
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))

import redis  # noqa: E402

import freshen  # noqa: E402
import freshen.aio  # noqa: E402
from conformance import handle, handle_async  # noqa: E402

URL = os.environ.get("REDIS_URL", "")


def sync_handler(job):
    c = (job.payload or {}).get("conformance") or {}
    if c.get("raise"):
        raise KeyError(c["raise"])
    return handle(job)


async def async_handler(job):
    c = (job.payload or {}).get("conformance") or {}
    if c.get("raise"):
        raise KeyError(c["raise"])
    return await handle_async(job)


class Running:
    """A worker of either kind running in a thread of its own."""

    def __init__(self, aio, **opts):
        self.aio = aio
        if aio:
            self.loop = asyncio.new_event_loop()
            self.w = freshen.aio.Worker(async_handler, url=URL, **opts)
            self.t = threading.Thread(target=self.loop.run_until_complete, args=(self.w.run(),))
        else:
            self.w = freshen.Worker(sync_handler, url=URL, **opts)
            self.t = threading.Thread(target=self.w.run)
        self.t.start()

    def stop(self):
        if self.aio:
            self.loop.call_soon_threadsafe(self.w.stop)
        else:
            self.w.stop()
        self.t.join(10)
        assert not self.t.is_alive(), "the worker did not stop"


@unittest.skipUnless(URL, "REDIS_URL is not set: run under scripts/with-servers.sh")
class WorkerTests:
    aio = False

    def setUp(self):
        self.r = redis.Redis.from_url(URL)
        self.prefix = "t" + uuid.uuid4().hex[:10]
        self.p = f"{self.prefix}:{{{self.prefix}}}:"
        self.workers = []

    def tearDown(self):
        for w in self.workers:
            if w.t.is_alive():
                w.stop()
        for k in self.r.scan_iter(self.p.replace("{", "\\{").replace("}", "\\}") + "*"):
            self.r.delete(k)

    def start(self, **opts):
        opts.setdefault("queue", "q")
        opts.setdefault("block", 0.2)
        opts.setdefault("concurrency", 4)
        w = Running(self.aio, prefix=self.prefix, **opts)
        self.workers.append(w)
        return w

    def push(self, model, uid=None, deadline=3600, **conformance):
        uid = uid or uuid.uuid4().hex
        job = {"model_id": model, "attempt_uid": uid, "attempt_no": 1, "queue": "q",
               "payload": {"conformance": conformance},
               "deadline_at": (datetime.now(timezone.utc) + timedelta(seconds=deadline)).isoformat()}
        self.r.lpush(self.p + "jobs:q", json.dumps(job))
        return uid

    def outcomes(self, n, timeout=10):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = self.r.lrange(self.p + "outcomes", 0, -1)
            if len(got) >= n:
                return [json.loads(o) for o in reversed(got)]
            time.sleep(0.02)
        self.fail(f"{len(self.r.lrange(self.p + 'outcomes', 0, -1))} outcomes after {timeout}s, want {n}")

    def by_model(self, outs):
        return {o["model_id"]: o for o in outs if o["outcome"] != "status"}

    def test_outcomes(self):
        w = self.start()
        self.push("ok")
        self.push("raise", **{"raise": "boom"})
        self.push("fail", do="fail", kind="validation", message="row 3: no date", retryable=False,
                  user_message="Row 3 of your file has no date.")
        self.push("snooze", do="snooze", snooze_for=90)
        self.push("same", status=["downloading"], unchanged=True)
        self.push("long", do="fail", message="x" * 5000)
        got = self.by_model(self.outcomes(7))
        w.stop()
        self.assertEqual(got["ok"]["outcome"], "success")
        self.assertEqual((got["raise"]["kind"], got["raise"]["outcome"]), ("KeyError", "failure"))
        self.assertEqual(got["fail"]["user_message"], "Row 3 of your file has no date.")
        self.assertIs(got["fail"]["retryable"], False)
        self.assertEqual(got["snooze"]["for"], "90000ms")
        self.assertIs(got["same"]["unchanged"], True)
        self.assertEqual(len(got["long"]["message"].encode()), 4096)
        self.assertEqual(self.r.llen(self.p + "working:q:" + w.w.id), 0)
        self.assertIsNone(self.r.zscore(self.p + "workers:q", w.w.id), "a stopped worker leaves the set")

    def test_malformed_job_is_dead_lettered(self):
        self.start()
        self.r.lpush(self.p + "jobs:q", b'{"model_id":"m","attempt_uid":"u","attempt_no":"2"}')
        self.push("after")
        self.outcomes(1)
        dead = [json.loads(e) for e in self.r.lrange(self.p + "dead", 0, -1)]
        self.assertEqual([d["reason"] for d in dead], ['job: attempt_no: must be an integer, got "2"'])

    def test_revoked_and_expired_jobs_are_dropped_unrun(self):
        uid = uuid.uuid4().hex
        self.r.set(self.p + "revoked:" + uid, "cancelled")
        self.push("revoked", uid=uid)
        self.push("expired", deadline=-1)
        self.push("last")
        w = self.start(concurrency=1)
        self.assertEqual([o["model_id"] for o in self.outcomes(1)], ["last"])
        w.stop()
        self.assertEqual((w.w.stats.revoked, w.w.stats.expired), (1, 1))
        self.assertEqual(self.r.llen(self.p + "outcomes"), 1)

    def test_revocation_stops_a_running_job_within_a_second(self):
        w = self.start()
        uid = self.push("long", sleep=30)
        end = time.monotonic() + 5
        while self.r.llen(self.p + f"working:q:{w.w.id}") == 0 and time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.1)
        t0 = time.monotonic()
        self.r.set(self.p + "revoked:" + uid, "superseded")
        o = self.outcomes(1)[0]
        self.assertLess(time.monotonic() - t0, 1.0)
        self.assertEqual(o["outcome"], "failure")
        self.assertEqual(w.w.stats.stopped, 1)

    def test_deadline_stops_a_running_job(self):
        self.start()
        self.push("late", deadline=0.5, sleep=30)
        t0 = time.monotonic()
        o = self.outcomes(1)[0]
        self.assertLess(time.monotonic() - t0, 2.0)
        self.assertEqual(o["outcome"], "failure")

    def test_jobs_of_a_dead_worker_are_given_back(self):
        job = json.dumps({"model_id": "orphan", "attempt_uid": "u1"})
        self.r.lpush(self.p + "working:q:dead-1", job)
        self.r.zadd(self.p + "workers:q", {"dead-1": int(time.time() * 1000) - 60000})
        w = self.start(lease=1)
        self.assertEqual(self.outcomes(1)[0]["model_id"], "orphan")
        w.stop()
        self.assertEqual(w.w.stats.recovered, 1)
        self.assertIsNone(self.r.zscore(self.p + "workers:q", "dead-1"))

    def test_a_job_held_but_not_run_is_given_back(self):
        w = self.start(lease=0.5)
        job = json.dumps({"model_id": "stranded", "attempt_uid": "u1"})
        self.r.lpush(self.p + f"working:q:{w.w.id}", job)  # as if a take's reply was lost
        self.assertEqual(self.outcomes(1)[0]["model_id"], "stranded")
        w.stop()
        self.assertGreaterEqual(w.w.stats.given_back, 1)

    def test_a_restarted_worker_gives_back_its_previous_lifes_jobs(self):
        self.r.lpush(self.p + "working:q:w1", json.dumps({"model_id": "again", "attempt_uid": "u1"}))
        self.start(id="w1")
        self.assertEqual(self.outcomes(1)[0]["model_id"], "again")

    def test_stop_lets_running_jobs_finish_and_posts_their_outcomes(self):
        w = self.start(concurrency=2)
        self.push("a", status=["running"], sleep=0.5)
        self.push("b", status=["running"], sleep=0.5)
        self.outcomes(2)  # both statuses: both jobs run
        w.stop()
        self.assertEqual(sorted(self.by_model(self.outcomes(4, timeout=1))), ["a", "b"])
        self.assertEqual(self.r.llen(self.p + f"working:q:{w.w.id}"), 0)

    def test_many_jobs_with_concurrency(self):
        w = self.start(concurrency=16)
        for i in range(500):
            self.push(f"m{i}")
        self.assertEqual(len({o["model_id"] for o in self.outcomes(500)}), 500)
        w.stop()
        self.assertEqual(self.r.llen(self.p + "jobs:q"), 0)


class ThreadedWorkerTest(WorkerTests, unittest.TestCase):
    aio = False


class AsyncWorkerTest(WorkerTests, unittest.TestCase):
    aio = True


if __name__ == "__main__":
    unittest.main()

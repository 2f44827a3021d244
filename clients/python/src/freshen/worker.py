"""The threaded worker: handlers run on a pool of threads."""

from __future__ import annotations

import collections
import queue as queues
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional

import redis as redislib

from . import wire
from .common import MAX_BATCH, JobFields, Options, Stats, Task, count_outcome


class RunningJob(JobFields):
    """The handle a handler gets: the job's fields, its cancellation and a
    way to post status messages."""

    def __init__(self, worker: "Worker", task: Task):
        super().__init__(task)
        self._worker = worker
        # Set when the job must stop: its attempt was revoked or its deadline
        # passed (cancel_reason says which).
        self.cancelled = threading.Event()

    def wait(self, seconds: float) -> bool:
        """Waits up to seconds; True if the job was cancelled meanwhile."""
        return self.cancelled.wait(seconds)

    def status(self, message: str) -> None:
        """Posts a progress message, shown to customers while the job runs."""
        self._worker._redis.lpush(
            self._worker._keys.outcomes, wire.status_outcome(self._task.job, message, self._worker._opt.limits)
        )


Handler = Callable[[RunningJob], Any]


class Worker:
    """Takes the jobs of one queue, runs handler on each, up to concurrency at
    once, and posts their outcomes, as queue/WIRE.md says.

    handler(job) returns None (success), wire.Unchanged() or wire.Snooze(...),
    or raises wire.Failure(kind, message, retryable=..., user_message=...);
    any other exception is a failure whose kind is the exception's class name.
    """

    def __init__(self, handler: Handler, *, redis: Optional[redislib.Redis] = None, url: Optional[str] = None, **options: Any):
        self._opt = Options(**options).check()
        self._own = redis is None  # made here: closed when run returns
        if redis is None:
            if not url:
                raise ValueError("redis or url: one is required")
            redis = redislib.Redis.from_url(url, socket_timeout=self._opt.block + 10)
        self._redis = redis
        self._keys = self._opt.keys()
        self._handler = handler
        self._log = self._opt.log
        self.stats = Stats()
        self._move = redis.register_script(wire.lua("move"))
        self._requeue = redis.register_script(wire.lua("requeue"))
        self._dead = redis.register_script(wire.lua("dead"))
        self._give_back = redis.register_script(wire.lua("give_back"))
        self._lock = threading.Condition()
        self._active: Dict[int, Task] = {}
        self._free = self._opt.concurrency
        self._takes = 0  # odd while a take is under way
        self._stopping = threading.Event()  # take no more jobs
        self._closed = threading.Event()  # every job is done with: stop the loops
        self._done: "queues.Queue[Optional[tuple]]" = queues.Queue()
        self._reconcile = threading.Event()

    @property
    def id(self) -> str:
        return self._opt.id

    def stop(self) -> None:
        """Takes no more jobs; run returns once the running ones are done and
        their outcomes posted."""
        self._stopping.set()
        with self._lock:
            self._lock.notify_all()

    def run(self, handle_signals: bool = False) -> None:
        """Runs until stop (or, with handle_signals, SIGTERM or SIGINT; a second
        one exits at once without posting: the jobs are given back by the
        lease, or at once to a worker started again with the same id)."""
        if handle_signals:
            self._install_signals()
        self._give_back_all()
        self._beat()
        threads = [threading.Thread(target=f, daemon=True) for f in (self._beat_loop, self._watch_loop, self._ack_loop)]
        for t in threads:
            t.start()
        pool = ThreadPoolExecutor(self._opt.concurrency, thread_name_prefix="freshen-handler")
        try:
            self._fetch_loop(pool)
        finally:
            pool.shutdown(wait=True)
            self._done.put(None)
            threads[2].join()
            self._stopping.set()
            self._closed.set()
            threads[0].join()
            threads[1].join()
            self._give_back_all()
            if self._own:
                self._redis.close()

    # ---- taking ----------------------------------------------------------

    def _fetch_loop(self, pool: ThreadPoolExecutor) -> None:
        while not self._stopping.is_set():
            with self._lock:
                while self._free == 0 and not self._stopping.is_set():
                    self._lock.wait(0.5)
                n, self._free = self._free, 0
                self._takes += 1
            if self._stopping.is_set():
                with self._lock:
                    self._takes += 1
                    self._free += n
                    self._lock.notify_all()
                return
            raws: List[bytes] = []
            try:
                # While jobs wait, one script moves up to n of them; when none
                # does, BLMOVE waits for the first, and the script takes more.
                move = [self._keys.jobs, self._keys.working]
                raws += self._move(keys=move, args=[min(n, MAX_BATCH), self._opt.limits.batch_bytes()])
                if not raws:
                    raw = self._redis.blmove(self._keys.jobs, self._keys.working, self._opt.block, "RIGHT", "LEFT")
                    if raw is not None:
                        raws.append(raw)
                        if n > 1:
                            raws += self._move(keys=move, args=[min(n, MAX_BATCH) - 1, self._opt.limits.batch_bytes()])
            except redislib.RedisError as e:
                self._log("error", "take jobs", {"err": str(e)})
                self._reconcile.set()
                self._stopping.wait(self._opt.block)
            tasks = [Task(r) for r in raws]
            with self._lock:
                for t in tasks:
                    self._active[id(t)] = t
                self._takes += 1
                self._free += n - len(tasks)
                self._lock.notify_all()
            self.stats.taken += len(tasks)
            if self._stopping.is_set():
                # Taken while stopping: run gives them back.
                with self._lock:
                    for t in tasks:
                        del self._active[id(t)]
                    self._free += len(tasks)
                return
            self._start(pool, tasks)

    def _start(self, pool: ThreadPoolExecutor, tasks: List[Task]) -> None:
        now = datetime.now(timezone.utc)
        run = []
        for t in tasks:
            job = wire.decode_job(t.raw, self._opt.limits)
            if isinstance(job, str):
                self._dead_letter(t, "job: " + job)
                continue
            t.job = job
            if job.deadline_at is not None and job.deadline_at <= now:
                self.stats.expired += 1
                self._log("info", "dropped job past its deadline", {"model_id": job.model_id, "attempt_uid": job.attempt_uid})
                self._finish(t, None)
                continue
            run.append(t)
        if not run:
            return
        try:
            revoked = self._redis.mget([self._keys.revoked(t.job.attempt_uid) for t in run])
        except redislib.RedisError as e:
            self._log("error", "check whether the attempts were revoked", {"err": str(e)})
            revoked = [None] * len(run)  # a revocation is seen while they run
        for t, reason in zip(run, revoked):
            if reason is not None:
                self.stats.revoked += 1
                self._log("info", "dropped job: attempt revoked", {"model_id": t.job.model_id, "attempt_uid": t.job.attempt_uid, "reason": reason.decode()})
                self._finish(t, None)
                continue
            t.handle = RunningJob(self, t)
            pool.submit(self._run_one, t)

    def _run_one(self, t: Task) -> None:
        result, error = None, None
        try:
            result = self._handler(t.handle)
        except BaseException as e:  # a handler's exception is its failure
            error = e
        o, kind = wire.outcome_of(t.job, result, error, self._opt.limits)
        count_outcome(self.stats, kind)
        if error is not None:
            self._log("info", "job failed", {"model_id": t.job.model_id, "attempt_uid": t.job.attempt_uid, "kind": o["kind"], "err": str(error)})
        t.handle = None
        self._finish(t, wire.encode_outcome(o))

    def _finish(self, t: Task, outcome: Optional[bytes]) -> None:
        """Hands t to the acknowledger and frees its slot; t stays active (held
        in the working list) until its outcome is posted."""
        self._done.put((t, outcome))
        with self._lock:
            self._free += 1
            self._lock.notify_all()

    def _dead_letter(self, t: Task, reason: str) -> None:
        entry = wire.dead_entry(reason, t.raw, datetime.now(timezone.utc), self._opt.limits)
        try:
            n, _ = self._dead(keys=[self._keys.working, self._keys.dead], args=[0, t.raw, entry])
            self.stats.dead_lettered += n
        except redislib.RedisError as e:
            self._log("error", "dead-letter job", {"err": str(e)})
        self._log("warning", "dead-lettered job", {"reason": reason, "message": t.raw[:200].decode("utf-8", "replace")})
        with self._lock:
            self._active.pop(id(t), None)
            self._free += 1
            self._lock.notify_all()

    # ---- acknowledging ---------------------------------------------------

    def _ack_loop(self) -> None:
        closing = False
        while not closing:
            item = self._done.get()
            batch = []
            while item is not None:
                batch.append(item)
                if len(batch) >= MAX_BATCH:
                    break
                try:
                    item = self._done.get_nowait()
                except queues.Empty:
                    break
            else:
                closing = True
            if batch:
                self._post(batch)

    def _post(self, batch: List[tuple]) -> None:
        """Pushes the outcomes of batch and drops its jobs from the working
        list in one transaction; a job whose outcome could not be posted stays
        there, and the reconciliation gives it back."""
        outcomes = [o for _, o in batch if o is not None]
        delay = 0.1
        for attempt in range(1, 6):
            try:
                p = self._redis.pipeline(transaction=True)
                if outcomes:
                    p.lpush(self._keys.outcomes, *outcomes)
                for t, _ in batch:
                    p.lrem(self._keys.working, -1, t.raw)
                p.execute()
                break
            except redislib.RedisError as e:
                if attempt == 5:
                    self._log("error", "post outcomes: giving up", {"count": len(batch), "err": str(e)})
                    self._reconcile.set()
                    break
                self._log("error", "post outcomes", {"count": len(batch), "err": str(e), "retry_in": delay})
                time.sleep(delay)
                delay *= 2
        with self._lock:
            for t, _ in batch:
                self._active.pop(id(t), None)

    # ---- heartbeat, recovery, revocation, deadlines ----------------------

    def _now_ms(self) -> int:
        return int(time.time() * 1000)

    def _beat(self) -> None:
        now = self._now_ms()
        self._redis.zadd(self._keys.workers, {self._opt.id: now})
        cutoff = now - int(self._opt.lease * 1000)
        moved = 0
        for member in self._redis.zrangebyscore(self._keys.workers, "-inf", cutoff):
            member = member.decode()
            if member == self._opt.id:
                continue
            moved += max(0, self._requeue(keys=[self._keys.working_of(member), self._keys.jobs, self._keys.workers], args=[member, cutoff]))
        if moved:
            self.stats.recovered += moved
            self._log("info", "gave back jobs of dead workers", {"count": moved})

    def _beat_loop(self) -> None:
        # It goes on while the last jobs finish after stop: they keep the lease.
        while not self._closed.wait(self._opt.lease / 5):
            try:
                self._beat()
            except redislib.RedisError as e:
                self._log("error", "heartbeat", {"err": str(e)})
            self._reconcile_once()

    def _reconcile_once(self) -> None:
        """Gives back the jobs of the working list this worker does not run
        (a take's reply was lost, or an outcome could not be posted)."""
        self._reconcile.clear()
        try:
            with self._lock:
                under = self._takes if self._takes % 2 else None
            items = self._redis.lrange(self._keys.working, 0, -1)
            if not items:
                return
            with self._lock:
                while under is not None and self._takes == under:
                    self._lock.wait()
                held = collections.Counter(t.raw for t in self._active.values())
                stranded = []
                for raw in items:
                    if held[raw] > 0:
                        held[raw] -= 1
                    else:
                        stranded.append(raw)
                if stranded:
                    n = self._give_back(keys=[self._keys.working, self._keys.jobs], args=stranded)
                    self.stats.given_back += n
                    if n:
                        self._log("warning", "gave back jobs held but not running", {"count": n})
        except redislib.RedisError as e:
            self._log("error", "reconcile working list", {"err": str(e)})

    def _watch_loop(self) -> None:
        """Stops the running jobs whose deadline passed (every 100 ms) or whose
        attempt was revoked (every revoked_check)."""
        last = 0.0
        while not self._closed.wait(0.1):
            now = datetime.now(timezone.utc)
            with self._lock:
                running = [t for t in self._active.values() if t.handle is not None and t.reason is None]
            for t in running:
                if t.job.deadline_at is not None and t.job.deadline_at <= now:
                    self._cancel(t, "deadline")
            if self._reconcile.is_set():
                self._reconcile_once()
            if time.monotonic() - last < self._opt.revoked_check:
                continue
            last = time.monotonic()
            running = [t for t in running if t.reason is None]
            if not running:
                continue
            try:
                vals = self._redis.mget([self._keys.revoked(t.job.attempt_uid) for t in running])
            except redislib.RedisError as e:
                self._log("error", "check revoked attempts", {"err": str(e)})
                continue
            for t, v in zip(running, vals):
                if v is not None:
                    self.stats.stopped += 1
                    self._cancel(t, v.decode("utf-8", "replace"))

    def _cancel(self, t: Task, reason: str) -> None:
        h = t.handle
        if h is None:
            return
        t.reason = reason
        self._log("info", "stopping job", {"model_id": t.job.model_id, "attempt_uid": t.job.attempt_uid, "reason": reason})
        h.cancelled.set()

    def _give_back_all(self) -> None:
        n = self._requeue(keys=[self._keys.working, self._keys.jobs, self._keys.workers], args=[self._opt.id, ""])
        if n > 0:
            self.stats.given_back += n
            self._log("info", "gave back unfinished jobs", {"count": n})

    def _install_signals(self) -> None:
        def on_signal(signum, frame):
            if self._stopping.is_set():
                self._log("warning", "second signal: exiting without posting", {"signal": signum})
                import os

                os._exit(1)
            self._log("info", "stopping: finishing the running jobs", {"signal": signum})
            self.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

"""The asyncio worker: handlers are coroutines, run as tasks on one loop."""

from __future__ import annotations

import asyncio
import collections
import time
from datetime import datetime, timezone
from typing import Any, Awaitable, Callable, Dict, List, Optional

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from . import wire
from .common import MAX_BATCH, JobFields, Options, Stats, Task, count_outcome
from .wire import Failure, Snooze, Unchanged  # noqa: F401 (the handler's results, here too)


class RunningJob(JobFields):
    """The handle an async handler gets: the job's fields, its cancellation
    and a way to post status messages. When the job must stop (its attempt
    revoked, its deadline passed) `cancelled` is set and the handler's task
    is cancelled: an await in it raises asyncio.CancelledError, whose
    failure is posted (the scheduler ignores it as stale or late)."""

    def __init__(self, worker: "Worker", task: Task):
        super().__init__(task)
        self._worker = worker
        # Set when the job must stop: its attempt was revoked or its deadline
        # passed (cancel_reason says which).
        self.cancelled = asyncio.Event()

    async def wait(self, seconds: float) -> bool:
        """Waits up to seconds; True if the job was cancelled meanwhile."""
        try:
            await asyncio.wait_for(self.cancelled.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    async def status(self, message: str) -> None:
        """Posts a progress message, shown to customers while the job runs."""
        w = self._worker
        await w._redis.lpush(w._keys.outcomes, wire.status_outcome(self._task.job, message, w._opt.limits))


Handler = Callable[[RunningJob], Awaitable[Any]]


class Worker:
    """The asyncio twin of freshen.Worker: the same options, outcomes and
    guarantees; handler is a coroutine function."""

    def __init__(self, handler: Handler, *, redis: Optional[aioredis.Redis] = None, url: Optional[str] = None, **options: Any):
        self._opt = Options(**options).check()
        self._own = redis is None  # made here: closed when run returns
        if redis is None:
            if not url:
                raise ValueError("redis or url: one is required")
            redis = aioredis.Redis.from_url(url, socket_timeout=self._opt.block + 10)
        self._redis = redis
        self._keys = self._opt.keys()
        self._handler = handler
        self._log = self._opt.log
        self.stats = Stats()
        self._move = redis.register_script(wire.lua("move"))
        self._requeue = redis.register_script(wire.lua("requeue"))
        self._dead = redis.register_script(wire.lua("dead"))
        self._give_back = redis.register_script(wire.lua("give_back"))
        self._active: Dict[int, Task] = {}
        self._running: Dict[int, asyncio.Task] = {}
        self._free = self._opt.concurrency
        self._takes = 0  # odd while a take is under way
        self._tick: Optional[asyncio.Event] = None  # set, and replaced, at every change
        self._stopping: Optional[asyncio.Event] = None
        self._closed: Optional[asyncio.Event] = None
        self._done: "Optional[asyncio.Queue]" = None
        self._reconcile = False

    @property
    def id(self) -> str:
        return self._opt.id

    def stop(self) -> None:
        """Takes no more jobs; run returns once the running ones are done and
        their outcomes posted. Call it from the worker's loop."""
        if self._stopping is not None:
            self._stopping.set()
            self._notify()

    async def run(self) -> None:
        """Runs until stop."""
        self._tick, self._stopping, self._closed = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._done = asyncio.Queue()
        await self._give_back_all()
        await self._beat()
        loops = [asyncio.ensure_future(f()) for f in (self._beat_loop, self._watch_loop)]
        acker = asyncio.ensure_future(self._ack_loop())
        try:
            await self._fetch_loop()
        finally:
            while self._running:
                await asyncio.gather(*list(self._running.values()), return_exceptions=True)
            await self._done.put(None)
            await acker
            self._closed.set()
            await asyncio.gather(*loops, return_exceptions=True)
            await self._give_back_all()
            if self._own:
                await self._redis.close()
                await self._redis.connection_pool.disconnect()

    def _notify(self) -> None:
        """Wakes whoever waits for a slot or for a take to end."""
        self._tick.set()
        self._tick = asyncio.Event()

    async def _fetch_loop(self) -> None:
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            while not self._stopping.is_set():
                while self._free == 0 and not self._stopping.is_set():
                    await self._tick.wait()
                # Let the handlers that are finishing free their slots too:
                # one take for all of them.
                await asyncio.sleep(0)
                if self._stopping.is_set():
                    return
                n, self._free = self._free, 0
                self._takes += 1
                raws: List[bytes] = []
                try:
                    # While jobs wait, one script moves up to n of them; when
                    # none does, BLMOVE waits for the first, and the script
                    # takes more.
                    move = [self._keys.jobs, self._keys.working]
                    raws += await self._move(keys=move, args=[min(n, MAX_BATCH), self._opt.limits.batch_bytes()])
                    if not raws:
                        raw = await self._redis.blmove(self._keys.jobs, self._keys.working, self._opt.block, "RIGHT", "LEFT")
                        if raw is not None:
                            raws.append(raw)
                            if n > 1:
                                raws += await self._move(keys=move, args=[min(n, MAX_BATCH) - 1, self._opt.limits.batch_bytes()])
                except RedisError as e:
                    self._log("error", "take jobs", {"err": str(e)})
                    self._reconcile = True
                    await asyncio.wait([stop], timeout=self._opt.block)
                tasks = [Task(r) for r in raws]
                for t in tasks:
                    self._active[id(t)] = t
                self._takes += 1
                self._free += n - len(tasks)
                self.stats.taken += len(tasks)
                self._notify()
                if self._stopping.is_set():
                    for t in tasks:  # taken while stopping: run gives them back
                        del self._active[id(t)]
                    self._free += len(tasks)
                    return
                await self._start(tasks)
        finally:
            stop.cancel()

    async def _start(self, tasks: List[Task]) -> None:
        now = datetime.now(timezone.utc)
        run = []
        for t in tasks:
            job = wire.decode_job(t.raw, self._opt.limits)
            if isinstance(job, str):
                await self._dead_letter(t, "job: " + job)
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
            revoked = await self._redis.mget([self._keys.revoked(t.job.attempt_uid) for t in run])
        except RedisError as e:
            self._log("error", "check whether the attempts were revoked", {"err": str(e)})
            revoked = [None] * len(run)
        for t, reason in zip(run, revoked):
            if reason is not None:
                self.stats.revoked += 1
                self._log("info", "dropped job: attempt revoked", {"model_id": t.job.model_id, "attempt_uid": t.job.attempt_uid, "reason": reason.decode()})
                self._finish(t, None)
                continue
            t.handle = RunningJob(self, t)
            self._running[id(t)] = asyncio.ensure_future(self._run_one(t))

    async def _run_one(self, t: Task) -> None:
        result, error = None, None
        try:
            result = await self._handler(t.handle)
        except BaseException as e:  # a handler's exception is its failure
            error = e
        o, kind = wire.outcome_of(t.job, result, error, self._opt.limits)
        count_outcome(self.stats, kind)
        if error is not None:
            self._log("info", "job failed", {"model_id": t.job.model_id, "attempt_uid": t.job.attempt_uid, "kind": o["kind"], "err": str(error)})
        t.handle = None
        self._running.pop(id(t), None)
        self._finish(t, wire.encode_outcome(o))

    def _finish(self, t: Task, outcome: Optional[bytes]) -> None:
        self._done.put_nowait((t, outcome))
        self._free += 1
        self._notify()

    async def _dead_letter(self, t: Task, reason: str) -> None:
        entry = wire.dead_entry(reason, t.raw, datetime.now(timezone.utc), self._opt.limits)
        try:
            n, _ = await self._dead(keys=[self._keys.working, self._keys.dead], args=[0, t.raw, entry])
            self.stats.dead_lettered += n
        except RedisError as e:
            self._log("error", "dead-letter job", {"err": str(e)})
        self._log("warning", "dead-lettered job", {"reason": reason, "message": t.raw[:200].decode("utf-8", "replace")})
        self._active.pop(id(t), None)
        self._free += 1
        self._notify()

    async def _ack_loop(self) -> None:
        closing = False
        while not closing:
            item = await self._done.get()
            batch = []
            while item is not None:
                batch.append(item)
                if len(batch) >= MAX_BATCH or self._done.empty():
                    break
                item = self._done.get_nowait()
            else:
                closing = True
            if batch:
                await self._post(batch)

    async def _post(self, batch: List[tuple]) -> None:
        outcomes = [o for _, o in batch if o is not None]
        delay = 0.1
        for attempt in range(1, 6):
            try:
                p = self._redis.pipeline(transaction=True)
                if outcomes:
                    p.lpush(self._keys.outcomes, *outcomes)
                for t, _ in batch:
                    p.lrem(self._keys.working, -1, t.raw)
                await p.execute()
                break
            except RedisError as e:
                if attempt == 5:
                    self._log("error", "post outcomes: giving up", {"count": len(batch), "err": str(e)})
                    self._reconcile = True
                    break
                self._log("error", "post outcomes", {"count": len(batch), "err": str(e), "retry_in": delay})
                await asyncio.sleep(delay)
                delay *= 2
        for t, _ in batch:
            self._active.pop(id(t), None)

    async def _beat(self) -> None:
        now = int(time.time() * 1000)
        await self._redis.zadd(self._keys.workers, {self._opt.id: now})
        cutoff = now - int(self._opt.lease * 1000)
        moved = 0
        for member in await self._redis.zrangebyscore(self._keys.workers, "-inf", cutoff):
            member = member.decode()
            if member != self._opt.id:
                n = await self._requeue(keys=[self._keys.working_of(member), self._keys.jobs, self._keys.workers], args=[member, cutoff])
                moved += max(0, n)
        if moved:
            self.stats.recovered += moved
            self._log("info", "gave back jobs of dead workers", {"count": moved})

    async def _sleep_or_close(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self._closed.wait(), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    async def _beat_loop(self) -> None:
        while not await self._sleep_or_close(self._opt.lease / 5):
            try:
                await self._beat()
            except RedisError as e:
                self._log("error", "heartbeat", {"err": str(e)})
            await self._reconcile_once()

    async def _reconcile_once(self) -> None:
        self._reconcile = False
        try:
            under = self._takes if self._takes % 2 else None
            items = await self._redis.lrange(self._keys.working, 0, -1)
            if not items:
                return
            while under is not None and self._takes == under:
                await self._tick.wait()
            held = collections.Counter(t.raw for t in self._active.values())
            stranded = []
            for raw in items:
                if held[raw] > 0:
                    held[raw] -= 1
                else:
                    stranded.append(raw)
            if stranded:
                n = await self._give_back(keys=[self._keys.working, self._keys.jobs], args=stranded)
                self.stats.given_back += n
                if n:
                    self._log("warning", "gave back jobs held but not running", {"count": n})
        except RedisError as e:
            self._log("error", "reconcile working list", {"err": str(e)})

    async def _watch_loop(self) -> None:
        last = 0.0
        while not await self._sleep_or_close(0.1):
            now = datetime.now(timezone.utc)
            running = [t for t in self._active.values() if t.handle is not None and t.reason is None]
            for t in running:
                if t.job.deadline_at is not None and t.job.deadline_at <= now:
                    self._cancel(t, "deadline")
            if self._reconcile:
                await self._reconcile_once()
            if time.monotonic() - last < self._opt.revoked_check:
                continue
            last = time.monotonic()
            running = [t for t in running if t.reason is None]
            if not running:
                continue
            try:
                vals = await self._redis.mget([self._keys.revoked(t.job.attempt_uid) for t in running])
            except RedisError as e:
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
        task = self._running.get(id(t))
        if task is not None:
            task.cancel()

    async def _give_back_all(self) -> None:
        n = await self._requeue(keys=[self._keys.working, self._keys.jobs, self._keys.workers], args=[self._opt.id, ""])
        if n > 0:
            self.stats.given_back += n
            self._log("info", "gave back unfinished jobs", {"count": n})

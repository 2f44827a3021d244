"""What the threaded and the asyncio workers share besides the wire format:
options, the job handle's state, logging and counters."""

from __future__ import annotations

import logging
import os
import random
import re
import socket
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from .wire import Job, Keys, Limits, validate_name

# log(level, message, fields): level is "debug", "info", "warning" or "error".
LogHook = Callable[[str, str, Dict[str, Any]], None]

_logger = logging.getLogger("freshen")


def default_log(level: str, message: str, fields: Dict[str, Any]) -> None:
    """Logs to the standard logger "freshen", the fields as key=value and in
    the record's `fields` attribute."""
    text = " ".join([message] + [f"{k}={v!r}" for k, v in fields.items()])
    _logger.log(getattr(logging, level.upper(), logging.INFO), text, extra={"fields": fields})


def default_id() -> str:
    """host-pid-random, with the host reduced to what a worker id may hold."""
    host = re.sub(r"[^A-Za-z0-9._@-]", "-", socket.gethostname())[:100]
    if not host or not re.match(r"[A-Za-z0-9]", host):
        host = "worker" + host
    return f"{host}-{os.getpid()}-{random.getrandbits(32):08x}"


@dataclass
class Options:
    """Settings common to both workers; see Worker for their meaning."""

    queue: str = "default"
    concurrency: int = 1
    id: str = ""
    prefix: str = "freshen"
    lease: float = 10.0
    revoked_check: float = 0.5
    block: float = 1.0
    limits: Limits = field(default_factory=Limits)
    log: LogHook = default_log

    def check(self) -> "Options":
        self.queue = self.queue or "default"
        validate_name("queue", self.queue)
        self.id = self.id or default_id()
        validate_name("id", self.id)
        self.prefix = self.prefix or "freshen"
        if self.concurrency < 1:
            raise ValueError(f"concurrency: must be >= 1, got {self.concurrency}")
        for name in ("lease", "revoked_check", "block"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be > 0, got {getattr(self, name)}")
        return self

    def keys(self) -> Keys:
        return Keys(self.prefix, self.queue, self.id)


@dataclass
class Stats:
    """What a worker has done since it was made."""

    taken: int = 0
    succeeded: int = 0
    failed: int = 0
    snoozed: int = 0
    expired: int = 0
    revoked: int = 0
    stopped: int = 0
    dead_lettered: int = 0
    given_back: int = 0
    recovered: int = 0


class Task:
    """A job taken, as taken (raw), until its outcome is acknowledged."""

    __slots__ = ("raw", "job", "reason", "handle")

    def __init__(self, raw: bytes):
        self.raw = raw
        self.job: Optional[Job] = None
        # Why the running job was stopped: superseded, cancelled, deleted
        # (or another reason the scheduler gave), or deadline.
        self.reason: Optional[str] = None
        self.handle: Any = None


def count_outcome(stats: Stats, kind: str) -> None:
    if kind == "success":
        stats.succeeded += 1
    elif kind == "snooze":
        stats.snoozed += 1
    else:
        stats.failed += 1


MAX_BATCH = 1000


class JobFields:
    """What both workers' job handles share: the job's fields and why it was
    stopped."""

    def __init__(self, task: Task):
        self._task = task
        job = task.job
        self.model_id = job.model_id
        self.attempt_uid = job.attempt_uid
        self.attempt_no = job.attempt_no
        self.queue = job.queue
        self.payload = job.payload
        self.started_at = job.started_at
        self.deadline_at = job.deadline_at

    @property
    def cancel_reason(self) -> Optional[str]:
        """superseded, cancelled, deleted (or another reason the scheduler
        gave) or deadline; None while the job may go on."""
        return self._task.reason

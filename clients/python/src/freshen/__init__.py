"""Freshen workers and API client.

Workers take the jobs of a queue from Redis and report outcomes, as
queue/WIRE.md in the Freshen repository says: freshen.Worker runs handlers on
threads, freshen.aio.Worker on asyncio. freshen.api.Client creates, updates and
triggers models through the HTTP API.
"""

from .common import Stats
from .wire import Failure, Job, Limits, Snooze, Unchanged
from .worker import RunningJob, Worker

__all__ = ["Failure", "Job", "Limits", "RunningJob", "Snooze", "Stats", "Unchanged", "Worker"]

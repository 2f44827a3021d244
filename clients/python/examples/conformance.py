"""The conformance handler (docs/workers.md, "Conformance") on freshen.Worker,
or with --aio on freshen.aio.Worker; `freshen conformance` runs it:

    freshen conformance -- /usr/bin/python3 clients/python/examples/conformance.py [--aio]
"""

import asyncio
import logging
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import freshen  # noqa: E402
import freshen.aio  # noqa: E402


def options():
    return dict(
        url=os.environ["REDIS_URL"],
        queue=os.environ.get("FRESHEN_QUEUE", "default"),
        prefix=os.environ.get("FRESHEN_REDIS_PREFIX", "freshen"),
        id=os.environ.get("FRESHEN_ID", ""),
        lease=float(os.environ.get("FRESHEN_LEASE", "10s").rstrip("s")),
        concurrency=int(os.environ.get("FRESHEN_CONCURRENCY", "1")),
    )


def result(c):
    if c.get("do") == "fail":
        raise freshen.Failure(
            c.get("kind") or "error",
            c.get("message") or "",
            retryable=c.get("retryable", True) is not False,
            user_message=c.get("user_message") or "",
        )
    if c.get("do") == "snooze":
        return freshen.Snooze(seconds=c.get("snooze_for") or 0)
    if c.get("unchanged"):
        return freshen.Unchanged()
    return None


def handle(job):
    c = (job.payload or {}).get("conformance") or {}
    for s in c.get("status") or []:
        job.status(s)
    if c.get("sleep") and job.wait(c["sleep"]):
        raise freshen.Failure("interrupted", "stopped: " + str(job.cancel_reason))
    return result(c)


async def handle_async(job):
    c = (job.payload or {}).get("conformance") or {}
    for s in c.get("status") or []:
        await job.status(s)
    if c.get("sleep") and await job.wait(c["sleep"]):
        raise freshen.Failure("interrupted", "stopped: " + str(job.cancel_reason))
    return result(c)


def main():
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s")
    if "--aio" in sys.argv[1:]:
        async def run():
            w = freshen.aio.Worker(handle_async, **options())
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, w.stop)
            await w.run()

        asyncio.run(run())
    else:
        freshen.Worker(handle, **options()).run(handle_signals=True)


if __name__ == "__main__":
    main()

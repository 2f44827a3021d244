#!/usr/bin/env python3
"""A Freshen worker written from queue/WIRE.md alone, with the standard library.

    worker.py REDIS_URL PREFIX QUEUE

It takes jobs reliably (BLMOVE to a working list of its own, heartbeats in
the workers set), and answers each one as its payload's "action" says:

    succeed     a status outcome, then a success
    reject      a non-retryable failure of kind "validation" carrying the
                payload's "user_message"
    fail_first  a retryable failure of kind "http_503" on attempt 1, then a
                success

Every outcome is pushed and its job dropped from the working list in one
EVAL. It prints one line per job on stdout and runs until it is killed.
"""

import datetime
import json
import os
import socket
import sys
import urllib.parse


class Redis:
    """The few bits of RESP 2 a worker needs."""

    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 6379))
        self.reader = self.sock.makefile("rb")
        if u.password:
            if u.username:
                self.call("AUTH", u.username, u.password)
            else:
                self.call("AUTH", u.password)
        db = u.path.lstrip("/") or "0"
        self.call("SELECT", db)

    def call(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            b = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(parts))
        return self.reply()

    def reply(self):
        line = self.reader.readline()
        if not line:
            raise ConnectionError("redis closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            return self.reader.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            return [self.reply() for _ in range(n)]
        raise RuntimeError("unexpected reply %r" % line)


# Push the outcome and drop the job from the working list atomically.
POST = "redis.call('LPUSH', KEYS[1], ARGV[1]); return redis.call('LREM', KEYS[2], 1, ARGV[2])"


def now_ms():
    return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def outcomes_for(job):
    """The outcomes to post for job, in order; the last one ends the attempt."""
    payload = job.get("payload") or {}
    action = payload.get("action", "succeed")
    base = {"model_id": job["model_id"], "attempt_uid": job["attempt_uid"]}
    if action == "reject":
        return [dict(base, outcome="failure", kind="validation", message="row 1: no header",
                     retryable=False, user_message=payload.get("user_message", ""))]
    if action == "fail_first" and job["attempt_no"] == 1:
        return [dict(base, outcome="failure", kind="http_503", message="upstream answered 503")]
    return [dict(base, outcome="status", message="halfway there"), dict(base, outcome="success")]


def main():
    url, prefix, queue = sys.argv[1:4]
    p = "%s:{%s}:" % (prefix, prefix)
    jobs, outcomes = p + "jobs:" + queue, p + "outcomes"
    workers = p + "workers:" + queue
    me = "py-%s-%d" % (socket.gethostname(), os.getpid())
    working = p + "working:" + queue + ":" + me
    r = Redis(url)
    print("worker %s taking jobs from %s" % (me, jobs), flush=True)
    while True:
        r.call("ZADD", workers, now_ms(), me)
        raw = r.call("BLMOVE", jobs, working, "RIGHT", "LEFT", 1)
        if raw is None:
            continue
        job = json.loads(raw)
        deadline = datetime.datetime.fromisoformat(job["deadline_at"].replace("Z", "+00:00"))
        if deadline <= datetime.datetime.now(datetime.timezone.utc):
            r.call("LREM", working, 1, raw)
            print("dropped %s: past its deadline" % job["model_id"], flush=True)
            continue
        outs = outcomes_for(job)
        for o in outs[:-1]:
            r.call("LPUSH", outcomes, json.dumps(o))
        r.call("EVAL", POST, 2, outcomes, working, json.dumps(outs[-1]), raw)
        print("%s attempt %d: %s" % (job["model_id"], job["attempt_no"], outs[-1]["outcome"]), flush=True)


if __name__ == "__main__":
    main()

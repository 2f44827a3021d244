"""Occurrences of schedules by python-dateutil, the oracle of
dateutil_test.go.

Reads JSON lines {"id", "text", "zone", "created", "limit", "budget"} on
stdin and writes JSON lines {"id", "occurrences": [Unix seconds...]}, {"id",
"error"}, or {"id", "timeout": true} when it took more than "budget" seconds
(for rules without occurrence, which dateutil walks up to year 9999). It parses the schedule text on its own, expands each RRULE with
dateutil from a naive DTSTART (wall-clock time), and places each local time
with zoneinfo and fold=0, which is what RFC 5545 3.3.5 asks for: a
nonexistent time takes the offset from before the gap, a repeated one its
first occurrence. UNTIL is applied to those instants. Occurrences are
listed up to the instant "limit".
"""

import json
import signal
import sys
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr


WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


def zone_of(name):
    if name in ("", "UTC"):
        return timezone.utc
    return ZoneInfo(name)


def parse_value(v):
    """Returns (naive datetime, is_utc)."""
    v = v.strip()
    utc = v.endswith("Z")
    if utc:
        v = v[:-1]
    fmt = "%Y%m%d" if len(v) == 8 else "%Y%m%dT%H%M%S"
    return datetime.strptime(v, fmt), utc


def instant(naive, zone):
    return int(naive.replace(tzinfo=zone, fold=0).timestamp())


def wall_bound(unix, zone):
    """A wall time after that of every local time standing for an instant
    at or before unix: its wall time plus more than any DST gap."""
    wall = datetime.fromtimestamp(unix, timezone.utc).astimezone(zone).replace(tzinfo=None)
    return wall + timedelta(hours=3)


def split_property(line):
    head, _, value = line.partition(":")
    name, *params = head.split(";")
    params = dict(p.split("=", 1) for p in params)
    return name.upper(), params, value


def occurrences(case):
    default = zone_of(case["zone"])
    lines = [l.strip() for l in case["text"].splitlines() if l.strip()]
    if len(lines) == 1 and "=" in lines[0].split(":")[0].split(";")[0]:
        lines = ["RRULE:" + lines[0]]
    zone, start = default, None
    bodies, rdates, exdates = [], [], []
    for line in lines:
        name, params, value = split_property(line)
        if name == "DTSTART":
            start, utc = parse_value(value)
            if "TZID" in params:
                zone = zone_of(params["TZID"])
            elif utc:
                zone = timezone.utc
        elif name == "RRULE":
            bodies.append(value)
        elif name in ("RDATE", "EXDATE"):
            z = zone_of(params["TZID"]) if "TZID" in params else None
            for v in value.split(","):
                dt, utc = parse_value(v)
                u = instant(dt, timezone.utc if utc else (z or zone))
                (rdates if name == "RDATE" else exdates).append(u)
        else:
            raise ValueError("unexpected line " + line)
    if start is None:
        created = datetime.fromtimestamp(case["created"], timezone.utc).astimezone(zone)
        start = datetime(created.year, created.month, created.day)

    limit = case["limit"]
    found = set(rdates)
    for body in bodies:
        parts, until = [], None
        for part in body.split(";"):
            key, _, val = part.partition("=")
            if key.upper() == "UNTIL":
                dt, utc = parse_value(val)
                until = instant(dt, timezone.utc if utc else zone)
            else:
                parts.append(part)
        first, count = start, None
        names = {p.partition("=")[0].upper(): p.partition("=")[2].upper() for p in parts}
        if names.get("FREQ") == "WEEKLY" and "BYSETPOS" in names:
            # dateutil applies BYSETPOS to the days of the first week from
            # DTSTART on; RFC 5545 to the whole week (from WKST), dropping
            # what precedes DTSTART afterwards. Expand from the start of
            # DTSTART's week, with the weekday DTSTART gave by default, and
            # count only what follows DTSTART.
            wkst = WEEKDAYS.index(names.get("WKST", "MO"))
            first = start - timedelta(days=(start.weekday() - wkst) % 7)
            if "BYDAY" not in names:
                parts.append("BYDAY=" + WEEKDAYS[start.weekday()])
            if "COUNT" in names:
                count = int(names["COUNT"])
                parts = [p for p in parts if p.partition("=")[0].upper() != "COUNT"]
        rule = rrulestr(";".join(parts), dtstart=first)
        wall_limit = wall_bound(limit if until is None else min(limit, until), zone)
        emitted = 0
        for wall in rule:
            if wall > wall_limit or count is not None and emitted == count:
                break
            if wall < start:
                continue
            emitted += 1
            u = instant(wall, zone)
            if until is not None and u > until:
                continue
            found.add(u)
    return sorted(u for u in found if u <= limit and u not in exdates)


class Timeout(Exception):
    pass


def alarm(signum, frame):
    raise Timeout()


def main():
    signal.signal(signal.SIGALRM, alarm)
    for line in sys.stdin:
        case = json.loads(line)
        signal.setitimer(signal.ITIMER_REAL, case.get("budget", 0))
        try:
            try:
                out = {"id": case["id"], "occurrences": occurrences(case)}
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except Timeout:
            out = {"id": case["id"], "timeout": True}
        except Exception as e:  # reported to the Go test, which decides
            out = {"id": case["id"], "error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

"""The wire format of queue/WIRE.md: keys, strict decoding of jobs, encoding of
outcomes and dead-letter entries, and the shared Lua scripts.

Everything here is pure (no I/O but reading the Lua files), shared by the
threaded worker (freshen.worker) and the asyncio one (freshen.aio).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from importlib import resources
from typing import Any, Dict, Optional, Tuple, Union

# Limits (WIRE.md, "Messages"); the scheduler's and the worker's should agree.
MAX_BYTES = 1 << 20
MAX_ID_BYTES = 200
MAX_KIND_BYTES = 64
MAX_MESSAGE_BYTES = 4096
TRUNCATED_MARKER = "\u2026 [truncated]"

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$")


@dataclass(frozen=True)
class Limits:
    """Bounds of one message; use the scheduler's."""

    max_bytes: int = MAX_BYTES
    max_id_bytes: int = MAX_ID_BYTES
    max_kind_bytes: int = MAX_KIND_BYTES
    max_message_bytes: int = MAX_MESSAGE_BYTES

    def batch_bytes(self) -> int:
        """Bytes one take moves at most: 8 messages at the size limit."""
        return 8 * self.max_bytes

    def keep_bytes(self) -> int:
        """The longest message a dead-letter entry keeps whole."""
        return max(self.max_bytes // 8, self.max_message_bytes)


def validate_name(kind: str, name: str) -> None:
    """Raise ValueError if name may not be a queue name or a worker id."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ValueError(
            f"{kind}: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got {name!r}"
        )


class Keys:
    """The Redis keys of one prefix and queue."""

    def __init__(self, prefix: str = "freshen", queue: str = "default", worker: str = ""):
        base = f"{prefix or 'freshen'}:{{{prefix or 'freshen'}}}:"
        self.base = base
        self.queue = queue or "default"
        self.jobs = f"{base}jobs:{self.queue}"
        self.working = f"{base}working:{self.queue}:{worker}"
        self.workers = f"{base}workers:{self.queue}"
        self.outcomes = f"{base}outcomes"
        self.dead = f"{base}dead"

    def working_of(self, worker: str) -> str:
        return f"{self.base}working:{self.queue}:{worker}"

    def revoked(self, uid: str) -> str:
        return f"{self.base}revoked:{uid}"


def lua(name: str) -> str:
    """The source of the shared script lua/<name>.lua (a copy of queue/lua)."""
    return resources.files("freshen").joinpath("lua", name + ".lua").read_text(encoding="utf-8")


# ---- texts ----------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def cut_text(s: str, limit: int) -> str:
    """s cut to at most limit bytes of UTF-8 on a character boundary, ending
    with the marker; a text that fits is returned as it is."""
    b = s.encode("utf-8", "surrogatepass")
    if len(b) <= limit:
        return s
    n = limit - len(TRUNCATED_MARKER.encode("utf-8"))
    while n > 0 and (b[n] & 0xC0) == 0x80:
        n -= 1
    return b[:n].decode("utf-8", "surrogatepass") + TRUNCATED_MARKER


def clean_text(s: Any, limit: int) -> str:
    """A text the scheduler accepts: NUL and lone surrogates become U+FFFD,
    and it is cut to limit bytes."""
    s = "" if s is None else str(s)
    s = _SURROGATE.sub("\ufffd", s.replace("\x00", "\ufffd"))
    return cut_text(s, limit)


def valid_kind(kind: Any, limits: Limits) -> bool:
    return (
        isinstance(kind, str)
        and kind != ""
        and "\x00" not in kind
        and not _SURROGATE.search(kind)
        and len(kind.encode("utf-8")) <= limits.max_kind_bytes
    )


def format_time(t: datetime) -> str:
    """t in RFC 3339, UTC, with milliseconds."""
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    t = t.astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


def parse_time(s: str) -> Optional[datetime]:
    """The RFC 3339 time s, or None if it is not one."""
    m = _RFC3339.match(s)
    if not m:
        return None
    y, mo, d, h, mi, sec, frac, z, sign, oh, om = m.groups()
    try:
        us = int((frac or "0")[:6].ljust(6, "0"))
        off = timedelta(0) if z else (1 if sign == "+" else -1) * timedelta(hours=int(oh), minutes=int(om))
        t = datetime(int(y), int(mo), int(d), int(h), int(mi), int(sec), us, timezone(off))
    except ValueError:
        return None
    return t.astimezone(timezone.utc)


# ---- jobs -----------------------------------------------------------------


@dataclass
class Job:
    """A job as the scheduler pushed it (WIRE.md, "Jobs")."""

    model_id: str
    attempt_uid: str
    attempt_no: int = 0
    queue: str = ""
    payload: Any = None
    started_at: Optional[datetime] = None
    deadline_at: Optional[datetime] = None
    raw: bytes = field(default=b"", repr=False)


class _Obj(dict):
    """A decoded JSON object that remembers its first duplicated name."""

    dup: Optional[str] = None


def _pairs(pairs):
    obj = _Obj(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for k, _ in pairs:
            if k in seen:
                obj.dup = k
                break
            seen.add(k)
    return obj


_decoder = json.JSONDecoder(object_pairs_hook=_pairs)


def _field_name(name: str) -> str:
    if name and len(name) <= 64 and re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        return name
    return json.dumps(cut_text(name, 64), ensure_ascii=False)


def _short(v: Any) -> str:
    return cut_text(json.dumps(v, ensure_ascii=False, separators=(",", ":")), 64)


def _has_escaped(v: Any) -> bool:
    """Whether v holds a byte that was not UTF-8 (decoded with surrogateescape)."""
    if isinstance(v, str):
        return bool(re.search("[\udc80-\udcff]", v))
    if isinstance(v, dict):
        return any(_has_escaped(k) or _has_escaped(x) for k, x in v.items())
    if isinstance(v, list):
        return any(_has_escaped(x) for x in v)
    return False


def _text_reason(s: str) -> str:
    if "\x00" in s:
        return "must not contain NUL (\\u0000)"
    m = _SURROGATE.search(s)
    if m:
        return f"must be valid UTF-8 (lone surrogate \\u{ord(m.group()):04x})"
    return ""


_KINDS = {str: "a string", dict: "an object", list: "an array", bool: "a boolean", type(None): "null"}


def decode_job(raw: bytes, limits: Limits = Limits()) -> Union[Job, str]:
    """The job raw, or the reason it breaks a rule of the wire format."""
    if len(raw) > limits.max_bytes:
        return f"too large: must be at most {limits.max_bytes} bytes, got {len(raw)}"
    try:
        text, valid = raw.decode("utf-8"), True
    except UnicodeDecodeError:
        text, valid = raw.decode("utf-8", "surrogateescape"), False
    try:
        obj = _decoder.decode(text)
    except ValueError as e:
        return f"invalid json: {e}"
    if not isinstance(obj, dict):
        return "must be a JSON object, got " + _KINDS.get(type(obj), "a number")
    for name, value in obj.items():
        if not valid and _has_escaped(name):
            return "field name: must be valid UTF-8"
        reason = _text_reason(name)
        if reason:
            return f"field name {_short(name)}: {reason}"
        if not valid and _has_escaped(value):
            return f"{_field_name(name)}: must be valid UTF-8"
    if obj.dup is not None:
        return f"{_field_name(obj.dup)}: duplicate field"
    job = Job(model_id="", attempt_uid="", raw=raw)
    for name in ("model_id", "attempt_uid", "queue", "started_at", "deadline_at"):
        v = obj.get(name)
        if v is None:
            continue
        if not isinstance(v, str):
            return f"{name}: must be a string, got {_short(v)}"
        reason = _text_reason(v)
        if reason:
            return f"{name}: {reason}"
        if name.endswith("_at"):
            t = parse_time(v)
            if t is None:
                return f"{name}: must be an RFC 3339 time, got {_short(v)}"
            setattr(job, name, t)
        else:
            setattr(job, name, v)
    no = obj.get("attempt_no")
    if no is not None:
        if type(no) is not int:
            return f"attempt_no: must be an integer, got {_short(no)}"
        job.attempt_no = no
    job.payload = obj.get("payload")
    for name in ("model_id", "attempt_uid"):
        v = getattr(job, name)
        if v == "":
            return f"{name}: missing"
        n = len(v.encode("utf-8"))
        if n > limits.max_id_bytes:
            return f"{name}: must be at most {limits.max_id_bytes} bytes, got {n}"
    return job


def dead_entry(reason: str, raw: bytes, at: datetime, limits: Limits = Limits()) -> bytes:
    """The dead-letter entry of raw, set aside at at for reason."""
    message = raw.decode("utf-8", "replace")
    entry: Dict[str, Any] = {"reason": reason, "message": message, "at": format_time(at)}
    if len(raw) > limits.keep_bytes():
        entry["message"] = cut_text(message, limits.max_message_bytes)
        entry["cut"] = True
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# ---- outcomes -------------------------------------------------------------


class Failure(Exception):
    """Raise it from a handler to report a failure of a kind of your choosing.

    retryable=False disables the model at once; user_message is the reason
    shown to the customer if this failure disables the model."""

    def __init__(self, kind: str, message: str = "", *, retryable: bool = True, user_message: str = ""):
        super().__init__(message or kind)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.user_message = user_message


@dataclass(frozen=True)
class Snooze:
    """Return it from a handler: the input is not ready, try again later
    (after `seconds`, or at `until`), without counting a failure."""

    seconds: Optional[float] = None
    until: Optional[datetime] = None


@dataclass(frozen=True)
class Unchanged:
    """Return it from a handler: a success whose data did not change."""


def encode_outcome(outcome: Dict[str, Any]) -> bytes:
    return json.dumps(outcome, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def outcome_of(job: Job, result: Any, error: Optional[BaseException], limits: Limits = Limits()) -> Tuple[Dict[str, Any], str]:
    """The outcome of job whose handler returned result or raised error, and
    its type; texts are cleaned and cut, a kind that cannot be sent is sent
    as error."""
    o: Dict[str, Any] = {"model_id": job.model_id, "attempt_uid": job.attempt_uid, "outcome": "success"}
    if error is not None:
        if isinstance(error, Failure):
            kind, message = error.kind, error.message
        else:
            kind, message = type(error).__name__, str(error) or type(error).__name__
        o["outcome"] = "failure"
        o["kind"] = kind if valid_kind(kind, limits) else "error"
        o["message"] = clean_text(message, limits.max_message_bytes)
        if isinstance(error, Failure):
            if not error.retryable:
                o["retryable"] = False
            if error.user_message:
                o["user_message"] = clean_text(error.user_message, limits.max_message_bytes)
        if o["message"] == "":
            del o["message"]
    elif isinstance(result, Snooze):
        o["outcome"] = "snooze"
        if result.until is not None:
            o["until"] = format_time(result.until)
        else:
            o["for"] = f"{max(1, round((result.seconds or 0) * 1000))}ms"
    elif isinstance(result, Unchanged):
        o["unchanged"] = True
    return o, o["outcome"]


def status_outcome(job: Job, message: str, limits: Limits = Limits()) -> bytes:
    return encode_outcome(
        {
            "model_id": job.model_id,
            "attempt_uid": job.attempt_uid,
            "outcome": "status",
            "message": clean_text(message, limits.max_message_bytes),
        }
    )

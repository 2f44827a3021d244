import unittest
from datetime import datetime, timezone

from freshen import wire


class DecodeJobTest(unittest.TestCase):
    def test_valid(self):
        j = wire.decode_job(b'{"model_id":"m","attempt_uid":"u","attempt_no":2,"payload":{"a":[1]},"deadline_at":"2026-03-02T07:00:00.5+01:00"}')
        self.assertIsInstance(j, wire.Job)
        self.assertEqual((j.model_id, j.attempt_uid, j.attempt_no, j.payload), ("m", "u", 2, {"a": [1]}))
        self.assertEqual(j.deadline_at, datetime(2026, 3, 2, 6, 0, 0, 500000, timezone.utc))

    def test_refusals(self):
        for raw, reason in [
            (b'[1]', "must be a JSON object, got an array"),
            (b'"x"', "must be a JSON object, got a string"),
            (b'{"model_id":"m"', "invalid json: "),
            (b'{"attempt_uid":"u"}', "model_id: missing"),
            (b'{"model_id":null,"attempt_uid":"u"}', "model_id: missing"),
            (b'{"model_id":"m","attempt_uid":"u","model_id":"n"}', "model_id: duplicate field"),
            (b'{"model_id":1,"attempt_uid":"u"}', "model_id: must be a string, got 1"),
            (b'{"model_id":"m","attempt_uid":"u","attempt_no":1.5}', "attempt_no: must be an integer, got 1.5"),
            (b'{"model_id":"m","attempt_uid":"u","attempt_no":true}', "attempt_no: must be an integer, got true"),
            (b'{"model_id":"m","attempt_uid":"u","started_at":"tomorrow"}', 'started_at: must be an RFC 3339 time, got "tomorrow"'),
            (b'{"model_id":"m\\u0000","attempt_uid":"u"}', "model_id: must not contain NUL (\\u0000)"),
            (b'{"model_id":"m\\ud800","attempt_uid":"u"}', "model_id: must be valid UTF-8 (lone surrogate \\ud800)"),
            (b'{"model_id":"m\xff","attempt_uid":"u"}', "model_id: must be valid UTF-8"),
            (b'{"m\xff":1,"model_id":"m","attempt_uid":"u"}', "field name: must be valid UTF-8"),
            (b'{"model_id":"' + b"x" * 201 + b'","attempt_uid":"u"}', "model_id: must be at most 200 bytes, got 201"),
        ]:
            with self.subTest(raw=raw[:40]):
                got = wire.decode_job(raw)
                self.assertIsInstance(got, str)
                self.assertTrue(got.startswith(reason), got)

    def test_duplicates_inside_the_payload_are_the_payloads_business(self):
        j = wire.decode_job(b'{"model_id":"m","attempt_uid":"u","payload":{"a":1,"a":2}}')
        self.assertIsInstance(j, wire.Job)

    def test_too_large(self):
        lim = wire.Limits(max_bytes=1024)
        self.assertEqual(wire.decode_job(b"x" * 1025, lim), "too large: must be at most 1024 bytes, got 1025")


class TextTest(unittest.TestCase):
    def test_cut_on_a_character_boundary(self):
        s = wire.cut_text("é" * 100, 64)
        self.assertLessEqual(len(s.encode()), 64)
        self.assertTrue(s.endswith(wire.TRUNCATED_MARKER))
        self.assertEqual(len(s.encode()), 63)  # 24 é (48 bytes) + 15, one byte short of a whole é
        self.assertEqual(wire.cut_text("short", 64), "short")

    def test_clean(self):
        self.assertEqual(wire.clean_text("a\x00b\ud800", 100), "a\ufffdb\ufffd")


class OutcomeTest(unittest.TestCase):
    job = wire.Job(model_id="m", attempt_uid="u")

    def test_kinds(self):
        o, t = wire.outcome_of(self.job, None, None)
        self.assertEqual(o, {"model_id": "m", "attempt_uid": "u", "outcome": "success"})
        o, _ = wire.outcome_of(self.job, None, KeyError("k"))
        self.assertEqual((o["outcome"], o["kind"]), ("failure", "KeyError"))
        o, _ = wire.outcome_of(self.job, None, wire.Failure("validation", "row 3", retryable=False, user_message="Row 3."))
        self.assertEqual(o, {"model_id": "m", "attempt_uid": "u", "outcome": "failure", "kind": "validation", "message": "row 3", "retryable": False, "user_message": "Row 3."})
        o, _ = wire.outcome_of(self.job, None, wire.Failure("k" * 65, "x"))
        self.assertEqual(o["kind"], "error")
        o, _ = wire.outcome_of(self.job, wire.Snooze(seconds=1.5), None)
        self.assertEqual((o["outcome"], o["for"]), ("snooze", "1500ms"))
        o, _ = wire.outcome_of(self.job, wire.Snooze(until=datetime(2026, 3, 2, 7, 30, tzinfo=timezone.utc)), None)
        self.assertEqual(o["until"], "2026-03-02T07:30:00.000Z")
        o, _ = wire.outcome_of(self.job, wire.Unchanged(), None)
        self.assertIs(o["unchanged"], True)

    def test_long_messages_are_cut(self):
        o, _ = wire.outcome_of(self.job, None, wire.Failure("k", "x" * 5000, user_message="y" * 5000))
        self.assertEqual(len(o["message"].encode()), 4096)
        self.assertEqual(len(o["user_message"].encode()), 4096)

    def test_dead_entry_cuts_large_messages(self):
        lim = wire.Limits(max_bytes=65536)
        at = datetime(2026, 3, 2, 6, 2, tzinfo=timezone.utc)
        self.assertEqual(wire.dead_entry("r", b"{}", at, lim), b'{"reason":"r","message":"{}","at":"2026-03-02T06:02:00.000Z"}')
        e = wire.dead_entry("r", b"x" * 9000, at, lim)
        self.assertIn(b'"cut":true', e)


class LuaTest(unittest.TestCase):
    def test_scripts_are_packaged(self):
        self.assertIn("LMOVE", wire.lua("requeue"))


if __name__ == "__main__":
    unittest.main()

import assert from "node:assert/strict";
import { test } from "node:test";
import { Failure, cutText, decodeJob, snooze, unchanged } from "../dist/esm/index.js";
import { deadEntry, outcomeOf, parseTime } from "../dist/esm/wire.js";
import { createRequire } from "node:module";

test("a valid job", () => {
  const j = decodeJob(Buffer.from('{"model_id":"m","attempt_uid":"u","attempt_no":2,"payload":{"a":[1]},"deadline_at":"2026-03-02T07:00:00.5+01:00"}'));
  assert.equal(typeof j, "object");
  assert.deepEqual([j.modelId, j.attemptUid, j.attemptNo, j.payload], ["m", "u", 2, { a: [1] }]);
  assert.equal(j.deadlineAt.toISOString(), "2026-03-02T06:00:00.500Z");
});

test("refusals name the field and the rule", () => {
  const cases = [
    ["[1]", "must be a JSON object, got an array"],
    ['"x"', "must be a JSON object, got a string"],
    ['{"model_id":"m"', "invalid json: "],
    ['{"attempt_uid":"u"}', "model_id: missing"],
    ['{"model_id":null,"attempt_uid":"u"}', "model_id: missing"],
    ['{"model_id":"m","attempt_uid":"u","model_id":"n"}', "model_id: duplicate field"],
    ['{"model_id":1,"attempt_uid":"u"}', "model_id: must be a string, got 1"],
    ['{"model_id":"m","attempt_uid":"u","attempt_no":2.0}', "attempt_no: must be an integer, got 2.0"],
    ['{"model_id":"m","attempt_uid":"u","started_at":"tomorrow"}', 'started_at: must be an RFC 3339 time, got "tomorrow"'],
    ['{"model_id":"m\\u0000","attempt_uid":"u"}', "model_id: must not contain NUL (\\u0000)"],
    ['{"model_id":"m\\ud800","attempt_uid":"u"}', "model_id: must be valid UTF-8 (lone surrogate \\ud800)"],
    [Buffer.concat([Buffer.from('{"model_id":"m'), Buffer.from([0xff]), Buffer.from('","attempt_uid":"u"}')]), "model_id: must be valid UTF-8"],
    [Buffer.concat([Buffer.from('{"m'), Buffer.from([0xff]), Buffer.from('":1,"model_id":"m","attempt_uid":"u"}')]), "field name: must be valid UTF-8"],
    [`{"model_id":"${"x".repeat(201)}","attempt_uid":"u"}`, "model_id: must be at most 200 bytes, got 201"],
  ];
  for (const [raw, want] of cases) {
    const got = decodeJob(Buffer.isBuffer(raw) ? raw : Buffer.from(raw));
    assert.equal(typeof got, "string", String(raw));
    assert.ok(got.startsWith(want), `${raw}: got ${got}`);
  }
  assert.equal(typeof decodeJob(Buffer.from('{"model_id":"m","attempt_uid":"u","payload":{"a":1,"a":2}}')), "object");
  assert.equal(decodeJob(Buffer.alloc(1025, "x"), { maxBytes: 1024, maxIdBytes: 200, maxKindBytes: 64, maxMessageBytes: 4096 }), "too large: must be at most 1024 bytes, got 1025");
});

test("a job decodes the same however it is written", () => {
  // Written as JSON.stringify writes it, a job skips the scan of its
  // members; written otherwise (spaces, escapes, a name twice), it does not.
  const compact = '{"model_id":"m","attempt_uid":"u","attempt_no":2,"payload":{"a":[1,"x"]},"started_at":"2026-03-02T06:00:00Z","deadline_at":"2026-03-02T07:00:00.25Z"}';
  const want = decodeJob(Buffer.from(compact));
  assert.equal(want.deadlineAt.toISOString(), "2026-03-02T07:00:00.250Z");
  for (const other of [
    compact.replaceAll(",", ", ").replace("{", "{ "),
    compact.replace('"model_id":"m"', '"model_\\u0069d":"\\u006d"'),
    compact.replace('"attempt_no":2', '"attempt_no":  2'),
  ]) {
    assert.notEqual(other, compact);
    assert.deepEqual(decodeJob(Buffer.from(other)), want, other);
  }
  const refusals = [
    ['{"model_id":1,"attempt_uid":"u"}', "model_id: must be a string, got 1"],
    ['{"model_id":"m","attempt_uid":"u","attempt_no":1e+21}', "attempt_no: must be an integer, got 1e+21"],
    ['{"model_id":"m","attempt_uid":"u","attempt_no":1.5}', "attempt_no: must be an integer, got 1.5"],
    ['{"model_id":"m","attempt_uid":"u","deadline_at":"2026-03-02"}', 'deadline_at: must be an RFC 3339 time, got "2026-03-02"'],
    ['{"model_id":"m","attempt_uid":"u","deadline_at":{"at":"now"}}', 'deadline_at: must be a string, got {"at":"now"}'],
  ];
  for (const [compact, want] of refusals) {
    assert.equal(decodeJob(Buffer.from(compact)), want, compact);
    const spaced = compact.replaceAll(":", ": ");
    assert.equal(decodeJob(Buffer.from(spaced)), want.replace(/got (.*)/, (_, v) => "got " + v.replaceAll(":", ": ")), spaced);
  }
  assert.equal(decodeJob(Buffer.from('{"model_id":"m","attempt_uid":"u","model_id":"m"}')), "model_id: duplicate field");
  assert.equal(decodeJob(Buffer.from('{"model_id":"m","attempt_uid":"u","x\\u0000":1}')), 'field name "x\\u0000": must not contain NUL (\\u0000)');
});

test("times", () => {
  for (const [s, want] of [
    ["2026-03-02T06:00:00Z", "2026-03-02T06:00:00.000Z"],
    ["2026-03-02t06:00:00.123456789z", "2026-03-02T06:00:00.123Z"],
    ["2026-03-02T06:00:00.5+01:00", "2026-03-02T05:00:00.500Z"],
    ["2026-02-30T00:00:00Z", "2026-03-02T00:00:00.000Z"],
    ["0050-01-01T00:00:00Z", "0050-01-01T00:00:00.000Z"],
  ]) {
    assert.equal(parseTime(s)?.toISOString(), want, s);
  }
  for (const s of ["2026-13-01T00:00:00Z", "2026-01-01T23:60:00Z", "2026-01-01 00:00:00Z", "2026-01-01T00:00:00"]) {
    assert.equal(parseTime(s), undefined, s);
  }
});

test("texts are cut on a character boundary", () => {
  const s = cutText("é".repeat(100), 64);
  assert.equal(Buffer.byteLength(s), 63);
  assert.ok(s.endsWith("… [truncated]"));
});

test("outcomes", () => {
  const job = { modelId: "m", attemptUid: "u" };
  assert.deepEqual(outcomeOf(job, undefined, false), { model_id: "m", attempt_uid: "u", outcome: "success" });
  class ValidationError extends Error {}
  assert.equal(outcomeOf(job, undefined, true, new ValidationError("x")).kind, "ValidationError");
  assert.equal(outcomeOf(job, undefined, true, new TypeError("x")).kind, "TypeError");
  assert.equal(outcomeOf(job, undefined, true, "a string").kind, "error");
  assert.deepEqual(outcomeOf(job, undefined, true, new Failure("validation", "row 3", { retryable: false, userMessage: "Row 3." })), {
    model_id: "m", attempt_uid: "u", outcome: "failure", kind: "validation", message: "row 3", retryable: false, user_message: "Row 3.",
  });
  assert.equal(outcomeOf(job, undefined, true, new Failure("k".repeat(65), "x")).kind, "error");
  assert.equal(outcomeOf(job, undefined, true, new Error("a\u0000b\ud800")).message, "a\ufffdb\ufffd");
  assert.equal(outcomeOf(job, snooze({ forMs: 1500 }), false).for, "1500ms");
  assert.equal(outcomeOf(job, snooze({ until: new Date("2026-03-02T07:30:00Z") }), false).until, "2026-03-02T07:30:00.000Z");
  assert.equal(outcomeOf(job, unchanged(), false).unchanged, true);
  assert.equal(Buffer.byteLength(outcomeOf(job, undefined, true, new Failure("k", "x".repeat(5000))).message), 4096);
});

test("dead-letter entries", () => {
  const lim = { maxBytes: 65536, maxIdBytes: 200, maxKindBytes: 64, maxMessageBytes: 4096 };
  const at = new Date("2026-03-02T06:02:00Z");
  assert.equal(deadEntry("r", Buffer.from("{}"), at, lim), '{"reason":"r","message":"{}","at":"2026-03-02T06:02:00.000Z"}');
  assert.ok(deadEntry("r", Buffer.alloc(9000, "x"), at, lim).includes('"cut":true'));
});

test("the CommonJS build loads", () => {
  const require = createRequire(import.meta.url);
  assert.equal(typeof require("../dist/cjs/index.js").Worker, "function");
});

<?php

declare(strict_types=1);

use Freshen\Failure;
use Freshen\JobData;
use Freshen\Limits;
use Freshen\Result;
use Freshen\Wire;

test('wire: a valid job', function (): void {
    $j = Wire::decodeJob('{"model_id":"m","attempt_uid":"u","attempt_no":2,"payload":{"a":[1]},"deadline_at":"2026-03-02T07:00:00.5+01:00"}', new Limits());
    ok($j instanceof JobData, 'decoded: ' . (is_string($j) ? $j : ''));
    eq(['m', 'u', 2, ['a' => [1]]], [$j->modelId, $j->attemptUid, $j->attemptNo, $j->payload]);
    eq('2026-03-02T06:00:00.500Z', Wire::formatTime($j->deadlineAt));
});

test('wire: refusals name the field and the rule', function (): void {
    $cases = [
        ['[1]', 'must be a JSON object, got an array'],
        ['"x"', 'must be a JSON object, got a string'],
        ['{"model_id":"m"', 'invalid json: '],
        ['{"attempt_uid":"u"}', 'model_id: missing'],
        ['{"model_id":null,"attempt_uid":"u"}', 'model_id: missing'],
        ['{"model_id":"m","attempt_uid":"u","model_id":"n"}', 'model_id: duplicate field'],
        ['{"model_id":1,"attempt_uid":"u"}', 'model_id: must be a string, got 1'],
        ['{"model_id":"m","attempt_uid":"u","attempt_no":2.0}', 'attempt_no: must be an integer, got 2.0'],
        ['{"model_id":"m","attempt_uid":"u","started_at":"tomorrow"}', 'started_at: must be an RFC 3339 time, got "tomorrow"'],
        ['{"model_id":"m\u0000","attempt_uid":"u"}', 'model_id: must not contain NUL (\u0000)'],
        ['{"model_id":"m\ud800","attempt_uid":"u"}', 'model_id: must be valid UTF-8 (lone surrogate \ud800)'],
        ["{\"model_id\":\"m\xff\",\"attempt_uid\":\"u\"}", 'model_id: must be valid UTF-8'],
        ["{\"m\xff\":1,\"model_id\":\"m\",\"attempt_uid\":\"u\"}", 'field name: must be valid UTF-8'],
        ['{"model_id":"' . str_repeat('x', 201) . '","attempt_uid":"u"}', 'model_id: must be at most 200 bytes, got 201'],
    ];
    foreach ($cases as [$raw, $want]) {
        $got = Wire::decodeJob($raw, new Limits());
        ok(is_string($got) && str_starts_with($got, $want), substr($raw, 0, 40) . ': got ' . (is_string($got) ? $got : 'a job'));
    }
    ok(Wire::decodeJob('{"model_id":"m","attempt_uid":"u","payload":{"a":1,"a":2}}', new Limits()) instanceof JobData, 'duplicates inside the payload are its business');
    eq('too large: must be at most 1024 bytes, got 1025', Wire::decodeJob(str_repeat('x', 1025), new Limits(maxBytes: 1024)));
});

test('wire: texts are cut on a character boundary', function (): void {
    $s = Wire::cutText(str_repeat('é', 100), 64);
    eq(63, strlen($s));
    ok(str_ends_with($s, '… [truncated]'), 'marker');
    eq("a\u{FFFD}b\u{FFFD}", Wire::cleanText("a\0b\xff", 100));
});

test('wire: outcomes', function (): void {
    $job = new JobData();
    $job->modelId = 'm';
    $job->attemptUid = 'u';
    $lim = new Limits();
    eq(['model_id' => 'm', 'attempt_uid' => 'u', 'outcome' => 'success'], Wire::outcome($job, null, null, $lim));
    eq('InvalidArgumentException', Wire::outcome($job, null, new InvalidArgumentException('x'), $lim)['kind']);
    eq(
        ['model_id' => 'm', 'attempt_uid' => 'u', 'outcome' => 'failure', 'kind' => 'validation', 'message' => 'row 3', 'retryable' => false, 'user_message' => 'Row 3.'],
        Wire::outcome($job, null, new Failure('validation', 'row 3', false, 'Row 3.'), $lim),
    );
    eq('error', Wire::outcome($job, null, new Failure(str_repeat('k', 65), 'x'), $lim)['kind']);
    eq('1500ms', Wire::outcome($job, Result::snooze(1.5), null, $lim)['for']);
    eq('2026-03-02T07:30:00.000Z', Wire::outcome($job, Result::snoozeUntil(new DateTimeImmutable('2026-03-02T07:30:00Z')), null, $lim)['until']);
    eq(true, Wire::outcome($job, Result::unchanged(), null, $lim)['unchanged']);
    eq(4096, strlen(Wire::outcome($job, null, new Failure('k', str_repeat('x', 5000)), $lim)['message']));
});

test('wire: dead-letter entries', function (): void {
    $lim = new Limits(maxBytes: 65536);
    $at = new DateTimeImmutable('2026-03-02T06:02:00Z');
    eq('{"reason":"r","message":"{}","at":"2026-03-02T06:02:00.000Z"}', Wire::deadEntry('r', '{}', $at, $lim));
    ok(str_contains(Wire::deadEntry('r', str_repeat('x', 9000), $at, $lim), '"cut":true'), 'cut');
});

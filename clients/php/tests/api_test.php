<?php

declare(strict_types=1);

use Freshen\Api\ApiError;
use Freshen\Api\Client;

// The API client against PHP's built-in server playing freshen serve (tests/fake_api.php).
test('api: put, trigger and a refusal', function (): void {
    $port = 20000 + random_int(0, 20000);
    $log = tempnam(sys_get_temp_dir(), 'freshen-api');
    $proc = proc_open([PHP_BINARY, '-S', "127.0.0.1:{$port}", __DIR__ . '/fake_api.php'], [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, ['FAKE_API_LOG' => $log]);
    try {
        $end = microtime(true) + 5;
        while (!@fsockopen('127.0.0.1', $port) && microtime(true) < $end) {
            usleep(20000);
        }
        $api = new Client("http://127.0.0.1:{$port}/", 's3cret');
        eq('thumbnails', $api->putModel('thumb-42', ['queue' => 'thumbnails', 'payload' => ['image' => 's3://b/42.png']])['queue']);
        eq(true, $api->trigger('thumb-42', 'the image changed')['changed']);
        eq([
            ['PUT', '/models/thumb-42', 'Bearer s3cret', ['queue' => 'thumbnails', 'payload' => ['image' => 's3://b/42.png']]],
            ['POST', '/models/thumb-42/trigger', 'Bearer s3cret', ['reason' => 'the image changed']],
        ], array_map(fn ($l) => json_decode($l, true), file($log, FILE_IGNORE_NEW_LINES)));
        try {
            $api->patchModel('bad', ['policy' => ['timeout' => '0s']]);
            ok(false, 'a refusal throws');
        } catch (ApiError $e) {
            eq([400, 'policy.timeout'], [$e->status, $e->fields[0]['field']]);
        }
    } finally {
        proc_terminate($proc);
        proc_close($proc);
        @unlink($log);
    }
});

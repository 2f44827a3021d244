<?php

declare(strict_types=1);

use Freshen\Api\ApiError;
use Freshen\Api\Client;

// The API client against PHP's built-in server playing freshen serve (tests/fake_api.php).
test('api: put, trigger and a refusal', function (): void {
    $log = tempnam(sys_get_temp_dir(), 'freshen-api');
    $out = tempnam(sys_get_temp_dir(), 'freshen-api-server');
    // Port 0: the server picks a free port and says which when it starts.
    $proc = proc_open([PHP_BINARY, '-S', '127.0.0.1:0', __DIR__ . '/fake_api.php'], [0 => ['file', '/dev/null', 'r'], 1 => ['file', $out, 'w'], 2 => ['file', $out, 'w']], $pipes, null, ['FAKE_API_LOG' => $log]);
    try {
        $port = 0;
        $end = microtime(true) + 30;
        while ($port === 0 && microtime(true) < $end && proc_get_status($proc)['running']) {
            if (preg_match('~http://127\.0\.0\.1:(\d+)~', (string) file_get_contents($out), $m)) {
                $port = (int) $m[1];
                break;
            }
            usleep(20000);
        }
        ok($port !== 0, 'the fake API started: ' . file_get_contents($out));
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
        @unlink($out);
    }
});

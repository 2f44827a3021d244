<?php
// The conformance handler (docs/workers.md, "Conformance") on this client;
// `freshen conformance` runs it:
//
//   freshen conformance -- php clients/php/examples/conformance.php

declare(strict_types=1);

require __DIR__ . '/../src/autoload.php';

use Freshen\Failure;
use Freshen\Job;
use Freshen\Result;
use Freshen\Worker;

function conformance(Job $job): ?Result
{
    $c = $job->payload['conformance'] ?? [];
    foreach ($c['status'] ?? [] as $s) {
        $job->status($s);
    }
    if (!empty($c['sleep']) && $job->wait((float) $c['sleep'])) {
        throw new Failure('interrupted', 'stopped: ' . $job->cancelReason());
    }
    return match ($c['do'] ?? 'succeed') {
        'fail' => throw new Failure($c['kind'] ?? 'error', $c['message'] ?? '', ($c['retryable'] ?? true) !== false, $c['user_message'] ?? ''),
        'snooze' => Result::snooze((float) ($c['snooze_for'] ?? 0)),
        default => !empty($c['unchanged']) ? Result::unchanged() : null,
    };
}

if (realpath($_SERVER['SCRIPT_FILENAME'] ?? '') === __FILE__) {
    (new Worker(
        'conformance',
        redis: getenv('REDIS_URL') ?: 'redis://127.0.0.1:6379',
        queue: getenv('FRESHEN_QUEUE') ?: 'default',
        // One process, as the kit checks the working list of FRESHEN_ID
        // itself: FRESHEN_CONCURRENCY jobs are taken at once and run in turn.
        // (concurrency: N would fork N processes with ids <id>-0 to <id>-N-1.)
        prefetch: (int) (getenv('FRESHEN_CONCURRENCY') ?: 1),
        id: getenv('FRESHEN_ID') ?: '',
        prefix: getenv('FRESHEN_REDIS_PREFIX') ?: 'freshen',
        lease: (float) rtrim(getenv('FRESHEN_LEASE') ?: '10s', 's'),
    ))->run();
}

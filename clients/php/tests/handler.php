<?php
// The worker the tests start: the conformance handler, plus {"raise": "..."}
// in the payload to throw an exception of a class of its own.

declare(strict_types=1);

require __DIR__ . '/../examples/conformance.php';

final class KeyError extends RuntimeException
{
}

(new Freshen\Worker(
    static function (Freshen\Job $job): ?Freshen\Result {
        if (isset($job->payload['conformance']['block'])) {
            // One call that blocks, as a slow HTTP request or query would.
            $ns = (int) ($job->payload['conformance']['block'] * 1e9);
            $left = time_nanosleep(intdiv($ns, 1000000000), $ns % 1000000000);
            while (is_array($left)) { // interrupted by a signal: sleep the rest
                $left = time_nanosleep($left['seconds'], $left['nanoseconds']);
            }
        }
        if (isset($job->payload['conformance']['raise'])) {
            throw new KeyError($job->payload['conformance']['raise']);
        }
        return conformance($job);
    },
    redis: getenv('REDIS_URL'),
    queue: 'q',
    concurrency: (int) getenv('FRESHEN_CONCURRENCY'),
    id: getenv('FRESHEN_ID'),
    prefix: getenv('FRESHEN_REDIS_PREFIX'),
    lease: (float) getenv('FRESHEN_LEASE'),
    block: 0.2,
    prefetch: (int) (getenv('FRESHEN_PREFETCH') ?: 1),
))->run();

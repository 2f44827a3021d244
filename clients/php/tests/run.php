<?php
// The PHP client's tests: the wire format alone, then workers as processes
// against a real Redis (REDIS_URL, as scripts/with-servers.sh exports it).
// It prints a line per test and "N passed, N failed".
//
//   REDIS_URL=redis://127.0.0.1:6379/0 php tests/run.php

declare(strict_types=1);

require __DIR__ . '/../src/autoload.php';

use Freshen\Failure;
use Freshen\JobData;
use Freshen\Limits;
use Freshen\Result;
use Freshen\Wire;

$passed = $failed = $skipped = 0;
$tests = [];

function test(string $name, callable $f): void
{
    $GLOBALS['tests'][] = [$name, $f];
}

final class Skip extends Exception
{
}

function eq(mixed $want, mixed $got, string $what = ''): void
{
    if ($want !== $got) {
        throw new RuntimeException(($what !== '' ? "{$what}: " : '') . 'want ' . var_export($want, true) . ', got ' . var_export($got, true));
    }
}

function ok(bool $cond, string $what): void
{
    if (!$cond) {
        throw new RuntimeException($what);
    }
}

require __DIR__ . '/wire_test.php';
require __DIR__ . '/worker_test.php';
require __DIR__ . '/api_test.php';

foreach ($tests as [$name, $f]) {
    try {
        $f();
        $passed++;
        echo "ok   {$name}\n";
    } catch (Skip $e) {
        $skipped++;
        echo "skip {$name}: {$e->getMessage()}\n";
    } catch (Throwable $e) {
        $failed++;
        echo "FAIL {$name}: {$e->getMessage()} ({$e->getFile()}:{$e->getLine()})\n";
    } finally {
        W::cleanupAll();
    }
}
echo "{$passed} passed, {$failed} failed, {$skipped} skipped\n";
exit($failed > 0 ? 1 : 0);

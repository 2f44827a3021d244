<?php

declare(strict_types=1);

// Workers run as processes (tests/handler.php) against REDIS_URL.

final class W
{
    public static ?Redis $r = null;
    public string $p;
    public string $prefix;
    /** @var list<array{resource, int}> */
    private array $procs = [];

    /** @var list<W> */
    private static array $all = [];

    /** Stops the workers of every test, and removes their keys. */
    public static function cleanupAll(): void
    {
        foreach (self::$all as $w) {
            $w->cleanup();
        }
        self::$all = [];
    }

    public function __construct()
    {
        $url = getenv('REDIS_URL');
        if (!$url) {
            throw new Skip('REDIS_URL is not set: run under scripts/with-servers.sh');
        }
        if (self::$r === null) {
            $u = parse_url($url);
            self::$r = new Redis();
            self::$r->connect($u['host'], $u['port'] ?? 6379);
            if ((int) trim($u['path'] ?? '', '/') > 0) {
                self::$r->select((int) trim($u['path'], '/'));
            }
        }
        $this->prefix = 't' . bin2hex(random_bytes(5));
        $this->p = "{$this->prefix}:{{$this->prefix}}:";
        self::$all[] = $this;
    }

    public function start(int $concurrency = 1, string $id = '', float $lease = 10, int $prefetch = 1): int
    {
        $env = getenv() + [];
        $env['FRESHEN_REDIS_PREFIX'] = $this->prefix;
        $env['FRESHEN_CONCURRENCY'] = (string) $concurrency;
        $env['FRESHEN_ID'] = $id !== '' ? $id : 'w' . bin2hex(random_bytes(3));
        $env['FRESHEN_LEASE'] = (string) $lease;
        $env['FRESHEN_PREFETCH'] = (string) $prefetch;
        $log = fopen(sys_get_temp_dir() . "/freshen-php-{$this->prefix}.log", 'a');
        $proc = proc_open([PHP_BINARY, __DIR__ . '/handler.php'], [0 => ['file', '/dev/null', 'r'], 1 => $log, 2 => $log], $pipes, null, $env);
        $pid = proc_get_status($proc)['pid'];
        $this->procs[] = [$proc, $pid];
        return $pid;
    }

    public function id(int $pid): string
    {
        return (string) (preg_match('/FRESHEN_ID=([^\0]+)/', (string) @file_get_contents("/proc/{$pid}/environ"), $m) ? $m[1] : '');
    }

    /** Waits until the worker process $pid has beaten. */
    public function waitSeen(int $pid): void
    {
        $end = microtime(true) + 5;
        while (microtime(true) < $end && ($this->id($pid) === '' || W::$r->zScore("{$this->p}workers:q", $this->id($pid)) === false)) {
            usleep(20000);
        }
    }

    public function stop(int $sig = SIGTERM): void
    {
        foreach ($this->procs as [$proc, $pid]) {
            posix_kill($pid, $sig);
            proc_close($proc);
        }
        $this->procs = [];
    }

    public function push(string $model, array $conformance = [], ?string $uid = null, float $deadline = 3600): string
    {
        $uid ??= bin2hex(random_bytes(8));
        $job = ['model_id' => $model, 'attempt_uid' => $uid, 'attempt_no' => 1, 'queue' => 'q', 'payload' => ['conformance' => (object) $conformance],
            'deadline_at' => Freshen\Wire::formatTime((new DateTimeImmutable())->modify(sprintf('%+d milliseconds', (int) ($deadline * 1000))))];
        self::$r->lPush($this->p . 'jobs:q', json_encode($job));
        return $uid;
    }

    /** @return list<array<string, mixed>> the first $n outcomes, oldest first */
    public function outcomes(int $n, float $timeout = 10): array
    {
        $end = microtime(true) + $timeout;
        while (microtime(true) < $end) {
            $got = self::$r->lRange($this->p . 'outcomes', 0, -1);
            if (count($got) >= $n) {
                return array_map(fn ($o) => json_decode($o, true), array_reverse($got));
            }
            usleep(20000);
        }
        throw new RuntimeException("fewer than {$n} outcomes after {$timeout} s");
    }

    public function byModel(array $outs): array
    {
        $m = [];
        foreach ($outs as $o) {
            if ($o['outcome'] !== 'status') {
                $m[$o['model_id']] = $o;
            }
        }
        return $m;
    }

    public function cleanup(): void
    {
        $this->stop();
        $keys = self::$r->keys(str_replace(['{', '}'], ['\{', '\}'], $this->p) . '*');
        if ($keys) {
            self::$r->del($keys);
        }
    }
}

test('worker: outcomes', function (): void {
    $w = new W();
    $pid = $w->start();
    $w->push('ok');
    $w->push('raise', ['raise' => 'boom']);
    $w->push('fail', ['do' => 'fail', 'kind' => 'validation', 'message' => 'row 3: no date', 'retryable' => false, 'user_message' => 'Row 3 of your file has no date.']);
    $w->push('snooze', ['do' => 'snooze', 'snooze_for' => 90]);
    $w->push('same', ['status' => ['downloading'], 'unchanged' => true]);
    $w->push('long', ['do' => 'fail', 'message' => str_repeat('x', 5000)]);
    $got = $w->byModel($w->outcomes(7));
    $id = $w->id($pid);
    $w->stop();
    eq('success', $got['ok']['outcome']);
    eq(['failure', 'KeyError'], [$got['raise']['outcome'], $got['raise']['kind']]);
    eq('Row 3 of your file has no date.', $got['fail']['user_message']);
    eq(false, $got['fail']['retryable']);
    eq('90000ms', $got['snooze']['for']);
    eq(true, $got['same']['unchanged']);
    eq(4096, strlen($got['long']['message']));
    eq(0, W::$r->lLen("{$w->p}working:q:{$id}"));
    eq(false, W::$r->zScore("{$w->p}workers:q", $id), 'a stopped worker leaves the set');
    $w->cleanup();
});

test('worker: a malformed job is dead-lettered', function (): void {
    $w = new W();
    $w->start();
    W::$r->lPush($w->p . 'jobs:q', '{"model_id":"m","attempt_uid":"u","attempt_no":"2"}');
    $w->push('after');
    $w->outcomes(1);
    $dead = array_map(fn ($e) => json_decode($e, true)['reason'], W::$r->lRange($w->p . 'dead', 0, -1));
    eq(['job: attempt_no: must be an integer, got "2"'], $dead);
    $w->cleanup();
});

test('worker: revoked and expired jobs are dropped unrun', function (): void {
    $w = new W();
    $uid = bin2hex(random_bytes(8));
    W::$r->set($w->p . 'revoked:' . $uid, 'cancelled');
    $w->push('revoked', [], $uid);
    $w->push('expired', [], null, -1);
    $w->push('last');
    $w->start(prefetch: 3);
    eq(['last'], array_column($w->outcomes(1), 'model_id'));
    $w->stop();
    eq(1, W::$r->lLen($w->p . 'outcomes'));
    $w->cleanup();
});

test('worker: a revocation stops a running job within a second', function (): void {
    $w = new W();
    $w->start();
    $uid = $w->push('long', ['sleep' => 30]);
    $end = microtime(true) + 5;
    while (W::$r->lLen($w->p . 'jobs:q') > 0 && microtime(true) < $end) {
        usleep(20000);
    }
    usleep(200000);
    $t0 = microtime(true);
    W::$r->set($w->p . 'revoked:' . $uid, 'superseded');
    $o = $w->outcomes(1)[0];
    ok(microtime(true) - $t0 < 1.0, sprintf('stopped after %.2f s', microtime(true) - $t0));
    eq(['failure', 'stopped: superseded'], [$o['outcome'], $o['message']]);
    $w->cleanup();
});

test('worker: the deadline stops a running job', function (): void {
    $w = new W();
    $w->waitSeen($w->start());
    $w->push('late', ['sleep' => 30], null, 1);
    $t0 = microtime(true);
    $o = $w->outcomes(1)[0];
    ok(microtime(true) - $t0 < 2.0, sprintf('stopped after %.2f s', microtime(true) - $t0));
    eq('stopped: deadline', $o['message']);
    $w->cleanup();
});

test('worker: the jobs of a dead worker are given back', function (): void {
    $w = new W();
    W::$r->lPush($w->p . 'working:q:dead-1', json_encode(['model_id' => 'orphan', 'attempt_uid' => 'u1']));
    W::$r->zAdd($w->p . 'workers:q', (int) (microtime(true) * 1000) - 60000, 'dead-1');
    $w->start(lease: 1);
    eq('orphan', $w->outcomes(1)[0]['model_id']);
    eq(false, W::$r->zScore($w->p . 'workers:q', 'dead-1'));
    $w->cleanup();
});

test("worker: a restarted worker gives back its previous life's jobs", function (): void {
    $w = new W();
    W::$r->lPush($w->p . 'working:q:w1', json_encode(['model_id' => 'again', 'attempt_uid' => 'u1']));
    $w->start(id: 'w1');
    eq('again', $w->outcomes(1)[0]['model_id']);
    $w->cleanup();
});

test('worker: a killed worker keeps its job in its list, and its lease gives it back', function (): void {
    $w = new W();
    $pid = $w->start(lease: 1);
    $w->push('crash', ['sleep' => 30]);
    $end = microtime(true) + 5;
    while (W::$r->lLen($w->p . 'jobs:q') > 0 && microtime(true) < $end) {
        usleep(20000);
    }
    $id = $w->id($pid);
    $w->stop(SIGKILL);
    eq(1, W::$r->lLen("{$w->p}working:q:{$id}"), 'the job stays in the working list');
    $w->start(lease: 1);
    $end = microtime(true) + 5;
    while (W::$r->lLen("{$w->p}working:q:{$id}") > 0 && microtime(true) < $end) {
        usleep(50000);
    }
    eq(0, W::$r->lLen("{$w->p}working:q:{$id}"), 'given back after the lease');
    $w->cleanup();
});

test('worker: stop lets the running jobs finish and posts their outcomes', function (): void {
    $w = new W();
    $w->start(concurrency: 2);
    $w->push('a', ['status' => ['running'], 'sleep' => 0.5]);
    $w->push('b', ['status' => ['running'], 'sleep' => 0.5]);
    $w->outcomes(2); // both statuses: both jobs run
    $w->stop();
    $got = array_keys($w->byModel($w->outcomes(4, 0.1)));
    sort($got);
    eq(['a', 'b'], $got);
    eq([], W::$r->keys(str_replace(['{', '}'], ['\{', '\}'], $w->p) . 'working:*'));
    $w->cleanup();
});

test('worker: many jobs with concurrency', function (): void {
    $w = new W();
    $w->start(concurrency: 4, prefetch: 8);
    for ($i = 0; $i < 500; $i++) {
        $w->push("m{$i}");
    }
    eq(500, count(array_unique(array_column($w->outcomes(500), 'model_id'))));
    $w->cleanup();
});

test('worker: the lease is kept while the handler blocks in a long call', function (): void {
    $w = new W();
    $w->waitSeen($w->start(lease: 1));
    $w->push('slow', ['block' => 2.5]);
    $w->waitSeen($w->start(lease: 1)); // would take the job back if the first worker's lease ran out
    eq('slow', $w->outcomes(1)[0]['model_id']);
    usleep(300000);
    eq(1, W::$r->lLen($w->p . 'outcomes'), 'the job ran once');
});

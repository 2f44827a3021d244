<?php

declare(strict_types=1);

namespace Freshen;

/**
 * Takes the jobs of one queue from Redis, runs a handler on each and posts
 * their outcomes, as queue/WIRE.md says.
 *
 * A worker process runs one job at a time, like a Laravel queue worker;
 * with concurrency N, run() forks N such processes (ids <id>-0 ... <id>-N-1)
 * and waits for them. Each worker process has a heartbeat process of its
 * own, so that its lease is kept, its running job's revocation and
 * deadline watched, however long the handler blocks in a call; the
 * heartbeat process tells the worker to cancel its job with SIGUSR1.
 *
 * The handler gets a Job and returns null (success), Result::unchanged()
 * or Result::snooze(...), or throws a Failure; any other exception is a
 * failure whose kind is the exception's short class name.
 */
final class Worker
{
    private readonly \Closure $handler;
    private readonly \Closure $log;
    private readonly Limits $lim;
    private readonly string $id;
    private readonly string $base;
    private readonly string $jobsKey;
    private readonly string $workersKey;
    private \Redis $r;
    private string $working = '';
    private string $me = '';
    private bool $stopping = false;
    private ?Job $current = null;
    /** @var resource|null the worker's end of the socket to its heartbeat process */
    private $beater = null;
    private int $beaterPid = 0;
    /** @var array<string, string> script name => sha1 */
    private array $shas = [];
    /** @var array<string, int> */
    public array $stats = ['taken' => 0, 'succeeded' => 0, 'failed' => 0, 'snoozed' => 0, 'expired' => 0, 'revoked' => 0, 'stopped' => 0, 'dead_lettered' => 0, 'given_back' => 0, 'recovered' => 0];

    /**
     * @param callable(Job): ?Result $handler
     * @param string $redis a URL: redis://[:password@]host:port[/db]
     * @param float $lease seconds the worker may go unseen before other workers give back its jobs; it beats every lease/5
     * @param float $revokedCheck seconds between two checks of the running job's revocation
     * @param float $block seconds one take waits on Redis; stopping takes up to this
     * @param int $prefetch jobs one take moves at once (they then wait in the worker's list, held by its lease)
     * @param callable(string, string, array<string, mixed>): void|object|null $logger a hook for structured logging: a callable (level, message, context) or a PSR-3 logger; default JSON lines on stderr
     */
    public function __construct(
        callable $handler,
        private readonly string $redis,
        string $queue = 'default',
        private readonly int $concurrency = 1,
        string $id = '',
        string $prefix = 'freshen',
        private readonly float $lease = 10.0,
        private readonly float $revokedCheck = 0.5,
        private readonly float $block = 1.0,
        private readonly int $prefetch = 1,
        ?Limits $limits = null,
        callable|object|null $logger = null,
    ) {
        $queue = $queue !== '' ? $queue : 'default';
        $id = $id !== '' ? $id : self::defaultId();
        foreach (['queue' => $queue, 'id' => $id] as $what => $name) {
            if (!preg_match('/^[A-Za-z0-9][A-Za-z0-9._@-]{0,199}$/', $name)) {
                throw new \InvalidArgumentException("{$what}: must be 1 to 200 letters, digits or ._@- starting with a letter or digit, got " . json_encode($name));
            }
        }
        foreach (['concurrency' => $concurrency, 'prefetch' => $prefetch] as $what => $v) {
            if ($v < 1) {
                throw new \InvalidArgumentException("{$what}: must be >= 1, got {$v}");
            }
        }
        foreach (['lease' => $lease, 'revokedCheck' => $revokedCheck, 'block' => $block] as $what => $v) {
            if (!($v > 0)) {
                throw new \InvalidArgumentException("{$what}: must be > 0, got {$v}");
            }
        }
        $this->handler = \Closure::fromCallable($handler);
        $this->id = $id;
        $this->lim = $limits ?? new Limits();
        $prefix = $prefix !== '' ? $prefix : 'freshen';
        $this->base = "{$prefix}:{{$prefix}}:";
        $this->jobsKey = "{$this->base}jobs:{$queue}";
        $this->workersKey = "{$this->base}workers:{$queue}";
        $this->log = match (true) {
            $logger === null => static function (string $level, string $message, array $context): void {
                fwrite(STDERR, json_encode(['time' => gmdate('c'), 'level' => $level, 'msg' => $message] + $context, JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE) . "\n");
            },
            is_callable($logger) => \Closure::fromCallable($logger),
            default => static fn (string $level, string $message, array $context) => $logger->log($level, $message, $context),
        };
    }

    /**
     * Runs until SIGTERM or SIGINT (or stop() from a handler): takes no more
     * jobs, lets the running one finish, posts its outcome, gives back what
     * it holds unrun and returns. A second signal exits at once without
     * posting: the job is given back by the lease, or at once to a worker
     * started again with the same id.
     */
    public function run(): void
    {
        if ($this->concurrency === 1) {
            $this->runProcess($this->id, 0);
            return;
        }
        $supervisor = getmypid();
        $children = [];
        // The workers' signals, set before they are forked so that none
        // comes before it (SIGUSR2 would kill them).
        pcntl_signal(SIGTERM, SIG_IGN);
        pcntl_signal(SIGINT, SIG_IGN);
        pcntl_signal(SIGUSR2, fn () => $this->stopping = true);
        for ($i = 0; $i < $this->concurrency; $i++) {
            $pid = pcntl_fork();
            if ($pid === 0) {
                $this->runProcess("{$this->id}-{$i}", $supervisor);
                exit(0);
            }
            $children[$pid] = true;
        }
        // The workers stop on SIGUSR2 from here, and ignore SIGTERM and
        // SIGINT, which a terminal or a process manager may send to the
        // whole process group: one signal here is one stop.
        pcntl_async_signals(true);
        $signals = 0;
        $forward = function (int $sig) use (&$children, &$signals): void {
            $signals++;
            ($this->log)('info', $signals === 1 ? 'stopping the workers' : 'second signal: killing the workers', ['signal' => $sig]);
            foreach (array_keys($children) as $pid) {
                posix_kill($pid, $signals === 1 ? SIGUSR2 : SIGKILL);
            }
        };
        pcntl_signal(SIGTERM, $forward, false); // without restarting pcntl_wait, so that it runs
        pcntl_signal(SIGINT, $forward, false);
        $failed = false;
        while ($children) {
            $pid = pcntl_wait($status);
            if ($pid > 0) {
                unset($children[$pid]);
                $failed = $failed || !pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0;
            }
        }
        if ($failed) {
            exit(1);
        }
    }

    /** Makes this process the worker $me (its id and working list). */
    private function become(string $me): void
    {
        $this->me = $me;
        $this->working = "{$this->base}working:" . substr($this->jobsKey, strlen($this->base) + 5) . ":{$me}";
    }

    /** Takes no more jobs once the running one is done (for a handler, or a test). */
    public function stop(): void
    {
        $this->stopping = true;
    }

    private function runProcess(string $me, int $supervisor): void
    {
        $this->become($me);
        $this->r = $this->connect();
        pcntl_async_signals(true);
        $onStop = function (int $sig): void {
            if ($this->stopping) {
                ($this->log)('warning', 'second signal: exiting without posting', ['signal' => $sig]);
                exit(1);
            }
            ($this->log)('info', 'stopping: finishing the running job', ['signal' => $sig]);
            $this->stopping = true;
        };
        if ($supervisor === 0) {
            pcntl_signal(SIGTERM, $onStop);
            pcntl_signal(SIGINT, $onStop);
        }
        pcntl_signal(SIGUSR1, fn () => $this->readCancels());
        $this->giveBackAll();
        $this->beatOnce($this->r); // seen before the first take, so that a crash right after it is recovered
        $this->startBeater($supervisor);
        $reconciled = microtime(true);
        try {
            while (!$this->stopping) {
                if (microtime(true) - $reconciled >= $this->lease / 5) {
                    $this->reconcile();
                    $reconciled = microtime(true);
                }
                try {
                    $raws = $this->take();
                } catch (\RedisException $e) {
                    ($this->log)('error', 'take jobs', ['err' => $e->getMessage()]);
                    usleep((int) ($this->block * 1e6));
                    $this->r = $this->connect();
                    $reconciled = 0.0;
                    continue;
                }
                $this->stats['taken'] += count($raws);
                if ($raws) {
                    $this->runBatch($raws);
                }
            }
        } finally {
            $this->stopBeater();
            $this->giveBackAll();
        }
    }

    /** @return list<string> the jobs taken, oldest first */
    private function take(): array
    {
        $raw = $this->r->rawCommand('BLMOVE', $this->jobsKey, $this->working, 'RIGHT', 'LEFT', (string) $this->block);
        if (!is_string($raw)) {
            return [];
        }
        $raws = [$raw];
        if ($this->prefetch > 1) {
            $more = $this->script('move', [$this->jobsKey, $this->working], [$this->prefetch - 1, 8 * $this->lim->maxBytes]);
            array_push($raws, ...(is_array($more) ? $more : []));
        }
        return $raws;
    }

    /** @param list<string> $raws */
    private function runBatch(array $raws): void
    {
        $drop = [];
        $run = [];
        $now = new \DateTimeImmutable();
        foreach ($raws as $raw) {
            $job = Wire::decodeJob($raw, $this->lim);
            if (is_string($job)) {
                $this->deadLetter($raw, 'job: ' . $job);
            } elseif ($job->deadlineAt !== null && $job->deadlineAt <= $now) {
                $this->stats['expired']++;
                ($this->log)('info', 'dropped job past its deadline', ['model_id' => $job->modelId, 'attempt_uid' => $job->attemptUid]);
                $drop[] = $raw;
            } else {
                $run[] = [$raw, $job];
            }
        }
        if ($run) {
            try {
                $revoked = $this->r->mGet(array_map(fn ($x) => "{$this->base}revoked:{$x[1]->attemptUid}", $run));
            } catch (\RedisException $e) {
                ($this->log)('error', 'check whether the attempts were revoked', ['err' => $e->getMessage()]);
                $revoked = []; // a revocation is seen while they run
            }
            foreach ($run as $i => [$raw, $job]) {
                if (is_string($revoked[$i] ?? false)) {
                    $this->stats['revoked']++;
                    ($this->log)('info', 'dropped job: attempt revoked', ['model_id' => $job->modelId, 'attempt_uid' => $job->attemptUid, 'reason' => $revoked[$i]]);
                    $drop[] = $raw;
                    unset($run[$i]);
                }
            }
        }
        // Outcomes are acknowledged together, after the batch, or as soon as
        // the oldest waits 100 ms (a job that ran that long is acknowledged
        // at once): a batch of quick jobs costs one transaction.
        $outcomes = [];
        $since = microtime(true);
        foreach ($run as [$raw, $job]) {
            if ($this->stopping) {
                break; // unstarted: given back when the worker stops
            }
            if ($job->deadlineAt !== null && $job->deadlineAt <= new \DateTimeImmutable()) {
                $this->stats['expired']++;
                $drop[] = $raw;
                continue;
            }
            $outcomes[] = $this->runOne($job);
            $drop[] = $raw;
            if (microtime(true) - $since >= 0.1) {
                $this->ack($drop, $outcomes);
                [$drop, $outcomes, $since] = [[], [], microtime(true)];
            }
        }
        if ($drop) {
            $this->ack($drop, $outcomes);
        }
    }

    private function runOne(JobData $data): string
    {
        $job = new Job($data, function (Job $job, string $message): void {
            $this->r->lPush("{$this->base}outcomes", Wire::statusOutcome($job, $message, $this->lim));
        });
        $this->current = $job;
        $this->tellBeater(sprintf("run %s %d\n", $job->attemptUid, $job->deadlineAt ? (int) $job->deadlineAt->format('Uv') : 0));
        $result = null;
        $error = null;
        try {
            $result = ($this->handler)($job);
        } catch (\Throwable $e) {
            $error = $e;
        }
        $this->tellBeater("idle\n");
        $this->current = null;
        if ($job->isCancelled()) {
            $this->stats['stopped']++;
        }
        $o = Wire::outcome($data, $result instanceof Result ? $result : null, $error, $this->lim);
        match ($o['outcome']) {
            'success' => $this->stats['succeeded']++,
            'snooze' => $this->stats['snoozed']++,
            default => $this->stats['failed']++,
        };
        if ($error !== null) {
            ($this->log)('info', 'job failed', ['model_id' => $data->modelId, 'attempt_uid' => $data->attemptUid, 'kind' => $o['kind'], 'err' => $error->getMessage()]);
        }
        return Wire::encode($o);
    }

    /**
     * Pushes the outcomes and drops the jobs from the working list in one
     * transaction; a job whose outcome could not be posted stays there, and
     * is given back at the next reconciliation.
     *
     * @param list<string> $raws
     * @param list<string> $outcomes
     */
    private function ack(array $raws, array $outcomes): void
    {
        $delay = 0.1;
        for ($attempt = 1; ; $attempt++) {
            try {
                // MULTI ... EXEC sent at once (a pipeline), not a command per round trip.
                $p = $this->r->pipeline();
                $p->multi();
                if ($outcomes) {
                    $p->lPush("{$this->base}outcomes", ...$outcomes);
                }
                foreach ($raws as $raw) {
                    $p->lRem($this->working, $raw, -1);
                }
                $p->exec();
                $res = $p->exec();
                if (is_array($res) && is_array($res[0] ?? null) && !in_array(false, $res[0], true)) {
                    return;
                }
                $err = $this->r->getLastError() ?? 'transaction failed';
            } catch (\RedisException $e) {
                $err = $e->getMessage();
                $this->r = $this->connect();
            }
            if ($attempt === 5) {
                ($this->log)('error', 'post outcomes: giving up', ['count' => count($raws), 'err' => $err]);
                return;
            }
            ($this->log)('error', 'post outcomes', ['count' => count($raws), 'err' => $err, 'retry_in' => $delay]);
            usleep((int) ($delay * 1e6));
            $delay *= 2;
        }
    }

    private function deadLetter(string $raw, string $reason): void
    {
        $entry = Wire::deadEntry($reason, $raw, new \DateTimeImmutable(), $this->lim);
        $res = $this->script('dead', [$this->working, "{$this->base}dead"], [0, $raw, $entry]);
        $this->stats['dead_lettered'] += is_array($res) ? (int) $res[0] : 0;
        ($this->log)('warning', 'dead-lettered job', ['reason' => $reason, 'message' => Wire::scrub(substr($raw, 0, 200))]);
    }

    /** Gives back whatever the working list holds: between jobs the worker runs nothing, so all of it is stranded. */
    private function reconcile(): void
    {
        try {
            $items = $this->r->lRange($this->working, 0, -1);
            if (is_array($items) && $items) {
                $n = (int) $this->script('give_back', [$this->working, $this->jobsKey], $items);
                $this->stats['given_back'] += $n;
                if ($n > 0) {
                    ($this->log)('warning', 'gave back jobs held but not running', ['count' => $n]);
                }
            }
        } catch (\RedisException $e) {
            ($this->log)('error', 'reconcile working list', ['err' => $e->getMessage()]);
        }
    }

    private function giveBackAll(): void
    {
        $n = (int) $this->script('requeue', [$this->working, $this->jobsKey, $this->workersKey], [$this->me, '']);
        if ($n > 0) {
            $this->stats['given_back'] += $n;
            ($this->log)('info', 'gave back unfinished jobs', ['count' => $n]);
        }
    }

    /**
     * Runs the shared script $name (by its sha, loading it if Redis does not know it).
     *
     * @param list<string> $keys
     * @param list<mixed> $args
     */
    private function script(string $name, array $keys, array $args, ?\Redis $r = null): mixed
    {
        $r ??= $this->r;
        $src = Wire::lua($name);
        $this->shas[$name] ??= sha1($src);
        $argv = [...$keys, ...array_map('strval', $args)];
        $res = $r->evalSha($this->shas[$name], $argv, count($keys));
        if ($res === false && str_starts_with((string) $r->getLastError(), 'NOSCRIPT')) {
            $r->clearLastError();
            $res = $r->eval($src, $argv, count($keys));
        }
        if ($res === false && $r->getLastError() !== null) {
            $err = $r->getLastError();
            $r->clearLastError();
            throw new \RedisException("script {$name}: {$err}");
        }
        return $res;
    }

    private function connect(): \Redis
    {
        $u = parse_url($this->redis);
        if ($u === false || !isset($u['host'])) {
            throw new \InvalidArgumentException('redis: must be a URL like redis://host:6379/0');
        }
        $r = new \Redis();
        $r->connect($u['host'], $u['port'] ?? 6379, 5.0, null, 0, $this->block + 10);
        if (isset($u['pass'])) {
            $r->auth(isset($u['user']) && $u['user'] !== '' ? [urldecode($u['user']), urldecode($u['pass'])] : urldecode($u['pass']));
        }
        $db = (int) trim($u['path'] ?? '', '/');
        if ($db > 0) {
            $r->select($db);
        }
        return $r;
    }

    // ---- the heartbeat process -------------------------------------------

    private function startBeater(int $supervisor): void
    {
        [$mine, $theirs] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $worker = getmypid();
        $pid = pcntl_fork();
        if ($pid === 0) {
            fclose($mine);
            foreach ([SIGTERM, SIGINT, SIGUSR1, SIGUSR2] as $sig) {
                pcntl_signal($sig, SIG_IGN);
            }
            $code = 0;
            try {
                $this->beat(new Beater($this, $theirs, $worker, $supervisor));
            } catch (\Throwable $e) {
                ($this->log)('error', 'heartbeat process', ['err' => $e->getMessage()]);
                $code = 1;
            }
            // Leave without running the worker's shutdown code.
            posix_kill(getmypid(), SIGKILL);
            exit($code);
        }
        fclose($theirs);
        stream_set_blocking($mine, false);
        $this->beater = $mine;
        $this->beaterPid = $pid;
    }

    private function stopBeater(): void
    {
        if ($this->beater !== null) {
            $this->tellBeater("quit\n");
            pcntl_waitpid($this->beaterPid, $status);
            fclose($this->beater);
            $this->beater = null;
        }
    }

    private function tellBeater(string $line): void
    {
        if ($this->beater !== null) {
            @fwrite($this->beater, $line);
        }
    }

    /** On SIGUSR1: reads what the heartbeat process says ("cancel <uid> <reason>"). */
    private function readCancels(): void
    {
        while ($this->beater !== null && ($line = fgets($this->beater)) !== false) {
            $f = explode(' ', rtrim($line, "\n"), 3);
            if ($f[0] === 'cancel' && count($f) === 3 && $this->current?->attemptUid === $f[1]) {
                ($this->log)('info', 'stopping job', ['model_id' => $this->current->modelId, 'attempt_uid' => $f[1], 'reason' => $f[2]]);
                $this->current->cancel($f[2]);
            }
        }
    }

    /** The heartbeat process's loop (see Beater). */
    private function beat(Beater $b): void
    {
        $r = $this->connect();
        $lastBeat = 0.0;
        $lastCheck = 0.0;
        while ($b->next()) {
            $now = microtime(true);
            if ($now - $lastBeat >= $this->lease / 5 && !$b->workerStopped()) {
                $lastBeat = $now;
                $this->beatOnce($r);
            }
            if ($b->uid === null) {
                continue;
            }
            if ($b->deadlineMs > 0 && $now * 1000 >= $b->deadlineMs) {
                $b->cancel('deadline');
            } elseif ($now - $lastCheck >= $this->revokedCheck) {
                $lastCheck = $now;
                $reason = $r->get("{$this->base}revoked:{$b->uid}");
                if (is_string($reason)) {
                    $b->cancel($reason);
                }
            }
        }
    }

    /** Records the worker as alive and gives back the jobs of the queue's dead workers. */
    private function beatOnce(\Redis $r): void
    {
        $now = (int) (microtime(true) * 1000);
        $r->zAdd($this->workersKey, $now, $this->me);
        $cutoff = $now - (int) ($this->lease * 1000);
        $moved = 0;
        foreach ($r->zRangeByScore($this->workersKey, '-inf', (string) $cutoff) ?: [] as $member) {
            if ($member !== $this->me) {
                $working = substr($this->working, 0, -strlen($this->me)) . $member;
                $moved += max(0, (int) $this->script('requeue', [$working, $this->jobsKey, $this->workersKey], [$member, $cutoff], $r));
            }
        }
        if ($moved > 0) {
            ($this->log)('info', 'gave back jobs of dead workers', ['count' => $moved]);
        }
    }

    private static function defaultId(): string
    {
        $host = substr((string) preg_replace('/[^A-Za-z0-9._@-]/', '-', (string) gethostname()), 0, 100);
        if (!preg_match('/^[A-Za-z0-9]/', $host)) {
            $host = 'worker' . $host;
        }
        return sprintf('%s-%d-%s', $host, getmypid(), bin2hex(random_bytes(4)));
    }
}

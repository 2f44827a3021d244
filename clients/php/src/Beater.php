<?php

declare(strict_types=1);

namespace Freshen;

/**
 * @internal The heartbeat process's view of its worker: the job it runs
 * (told over a socket: "run <uid> <deadline ms>", "idle", "quit"), whether
 * it lives, and how to tell it to cancel its job (a line and SIGUSR1).
 */
final class Beater
{
    public ?string $uid = null;
    public int $deadlineMs = 0;
    private bool $told = false;
    private string $buf = '';

    /** @param resource $sock */
    public function __construct(private readonly Worker $worker, private $sock, private readonly int $workerPid, private readonly int $supervisor)
    {
    }

    /** Waits up to 100 ms for news from the worker; false when the heartbeat process must end. */
    public function next(): bool
    {
        if (posix_getppid() !== $this->workerPid) {
            return false; // the worker is gone: its lease runs out
        }
        if ($this->supervisor > 0 && !posix_kill($this->supervisor, 0)) {
            // The process that forked the workers died (killed): so do they,
            // as threads of one process would.
            posix_kill($this->workerPid, SIGKILL);
            return false;
        }
        $read = [$this->sock];
        $write = $except = null;
        if (@stream_select($read, $write, $except, 0, 100000) > 0) {
            $chunk = fread($this->sock, 8192);
            if ($chunk === '' || $chunk === false) {
                return false; // the worker closed its end
            }
            $this->buf .= $chunk;
            while (($i = strpos($this->buf, "\n")) !== false) {
                $f = explode(' ', substr($this->buf, 0, $i));
                $this->buf = substr($this->buf, $i + 1);
                if ($f[0] === 'quit') {
                    return false;
                }
                $this->uid = $f[0] === 'run' ? $f[1] : null;
                $this->deadlineMs = $f[0] === 'run' ? (int) $f[2] : 0;
                $this->told = false;
            }
        }
        return true;
    }

    /** Whether the worker (or the process that forked it) is stopped (SIGSTOP): it then loses its lease, as a stopped Go worker does. */
    public function workerStopped(): bool
    {
        foreach ([$this->workerPid, $this->supervisor] as $pid) {
            $stat = $pid > 0 ? @file_get_contents("/proc/{$pid}/stat") : false;
            if (is_string($stat) && preg_match('/\) ([A-Za-z])/', $stat, $m) && ($m[1] === 'T' || $m[1] === 't')) {
                return true;
            }
        }
        return false;
    }

    /** Tells the worker, once per job, to cancel it. */
    public function cancel(string $reason): void
    {
        if ($this->told || $this->uid === null) {
            return;
        }
        $this->told = true;
        fwrite($this->sock, "cancel {$this->uid} " . str_replace("\n", ' ', $reason) . "\n");
        posix_kill($this->workerPid, SIGUSR1);
    }
}

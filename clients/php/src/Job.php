<?php

declare(strict_types=1);

namespace Freshen;

/**
 * The job a handler runs: its fields, its cancellation and a way to post
 * status messages. Cancellation is cooperative: when the attempt is
 * superseded, cancelled or deleted, or its deadline passes, isCancelled()
 * turns true (the worker is told by a signal, even while the handler
 * waits in a long call); check it between steps, or call
 * throwIfCancelled().
 */
final class Job extends JobData
{
    private ?string $cancelReason = null;

    /** @internal */
    public function __construct(JobData $data, private readonly \Closure $postStatus)
    {
        foreach (get_object_vars($data) as $k => $v) {
            $this->{$k} = $v;
        }
    }

    /** Posts a progress message, shown to customers while the job runs. */
    public function status(string $message): void
    {
        ($this->postStatus)($this, $message);
    }

    public function isCancelled(): bool
    {
        return $this->cancelReason !== null;
    }

    /** superseded, cancelled, deleted (or another reason the scheduler gave) or deadline; null while the job may go on. */
    public function cancelReason(): ?string
    {
        return $this->cancelReason;
    }

    /** @throws JobCancelled if the job must stop */
    public function throwIfCancelled(): void
    {
        if ($this->cancelReason !== null) {
            throw new JobCancelled($this->cancelReason);
        }
    }

    /** Waits up to $seconds; true if the job was cancelled meanwhile. */
    public function wait(float $seconds): bool
    {
        $end = microtime(true) + $seconds;
        while (!$this->isCancelled() && ($left = $end - microtime(true)) > 0) {
            usleep((int) (min($left, 0.05) * 1e6));
        }
        return $this->isCancelled();
    }

    /** @internal */
    public function cancel(string $reason): void
    {
        $this->cancelReason ??= $reason;
    }
}

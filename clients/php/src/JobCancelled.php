<?php

declare(strict_types=1);

namespace Freshen;

/** Thrown by Job::throwIfCancelled: the job must stop (its kind as a failure is JobCancelled). */
final class JobCancelled extends \RuntimeException
{
    public function __construct(public readonly string $reason)
    {
        parent::__construct("job stopped: {$reason}");
    }
}

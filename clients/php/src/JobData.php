<?php

declare(strict_types=1);

namespace Freshen;

/** A job as the scheduler pushed it (queue/WIRE.md, "Jobs"). */
class JobData
{
    public string $modelId = '';
    public string $attemptUid = '';
    public int $attemptNo = 0;
    public string $queue = '';
    /** The model's payload, decoded (objects as associative arrays). */
    public mixed $payload = null;
    public ?\DateTimeImmutable $startedAt = null;
    public ?\DateTimeImmutable $deadlineAt = null;
}

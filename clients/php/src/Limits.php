<?php

declare(strict_types=1);

namespace Freshen;

/** Bounds of one message (queue/WIRE.md, "Messages"); use the scheduler's. */
final class Limits
{
    public function __construct(
        public readonly int $maxBytes = 1 << 20,
        public readonly int $maxIdBytes = 200,
        public readonly int $maxKindBytes = 64,
        public readonly int $maxMessageBytes = 4096,
    ) {
    }
}

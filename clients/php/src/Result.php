<?php

declare(strict_types=1);

namespace Freshen;

/** What a handler may return besides null (a success). */
final class Result
{
    private function __construct(
        public readonly bool $unchanged = false,
        public readonly ?float $snoozeSeconds = null,
        public readonly ?\DateTimeInterface $snoozeUntil = null,
    ) {
    }

    /** A success whose data did not change: dependents are not triggered. */
    public static function unchanged(): self
    {
        return new self(unchanged: true);
    }

    /** The input is not ready: try again in $seconds, without counting a failure. */
    public static function snooze(float $seconds): self
    {
        return new self(snoozeSeconds: $seconds);
    }

    /** The input is not ready: try again at $until, without counting a failure. */
    public static function snoozeUntil(\DateTimeInterface $until): self
    {
        return new self(snoozeUntil: $until);
    }
}

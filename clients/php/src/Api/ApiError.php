<?php

declare(strict_types=1);

namespace Freshen\Api;

/** An answer other than 2xx: its status, the API's error text and the refusals by field. */
final class ApiError extends \RuntimeException
{
    /** @param list<array{field: string, rule: string}> $fields */
    public function __construct(public readonly int $status, public readonly string $error, public readonly array $fields = [])
    {
        parent::__construct("freshen API: {$status}: {$error}");
    }
}

<?php

declare(strict_types=1);

namespace Freshen;

/**
 * Throw it from a handler to report a failure of a kind of your choosing.
 * retryable false disables the model at once; userMessage is the reason
 * shown to the customer if this failure disables the model.
 */
class Failure extends \RuntimeException
{
    public function __construct(
        public readonly string $kind,
        string $message = '',
        public readonly bool $retryable = true,
        public readonly string $userMessage = '',
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, 0, $previous);
    }
}

<?php

declare(strict_types=1);

namespace Freshen\Api;

/**
 * A client of Freshen's HTTP API (refresh/http/openapi.json) for the insert
 * side: create, update and trigger models, so that an application can say
 * "this thumbnail changed" in one call. It needs no extension but json
 * (PHP's own HTTP stream wrapper).
 *
 * @phpstan-type Policy array{schedule?: string, timezone?: string, timeout?: string, retry?: array<string, mixed>, on_exhausted?: string, give_up_after?: string, disabled_message?: string, max_age?: string, trigger_debounce?: string|array<string, string>, max_snooze?: string, spread?: string, max_lateness?: string}
 * @phpstan-type ModelInput array{queue?: string, payload?: mixed, policy?: Policy, trigger?: bool, reason?: string, upstreams?: list<string>, upstreams_mode?: string}
 * @phpstan-type Model array{id: string, queue: string, payload?: mixed, policy: array<string, mixed>, state: string, running: bool, disabled: bool, disabled_reason?: string, status_message?: string, refresh_at?: ?string, last_success_at?: ?string, last_error?: ?array{kind: string, message: string, at: string}}
 * @phpstan-type ActResult array{model: Model, decision?: array{event: string, rule: string, why: string}, changed: bool}
 */
final class Client
{
    private readonly string $base;

    /** $baseUrl e.g. "http://freshen:8080"; $token made with `freshen token new` (scope write). */
    public function __construct(string $baseUrl, private readonly string $token = '', private readonly float $timeout = 30.0)
    {
        $this->base = rtrim($baseUrl, '/');
    }

    /**
     * Creates or replaces the whole model $id.
     *
     * @param ModelInput $model
     * @return Model
     */
    public function putModel(string $id, array $model): array
    {
        return $this->call('PUT', '/models/' . rawurlencode($id), $model);
    }

    /**
     * Changes part of model $id (a JSON merge patch).
     *
     * @param ModelInput $changes
     * @return Model
     */
    public function patchModel(string $id, array $changes): array
    {
        return $this->call('PATCH', '/models/' . rawurlencode($id), $changes);
    }

    /** @return Model */
    public function getModel(string $id): array
    {
        return $this->call('GET', '/models/' . rawurlencode($id));
    }

    /**
     * Asks for a refresh of model $id now ("this changed"): a running attempt is superseded.
     *
     * @return ActResult
     */
    public function trigger(string $id, string $reason = ''): array
    {
        return $this->call('POST', '/models/' . rawurlencode($id) . '/trigger', $reason !== '' ? ['reason' => $reason] : null);
    }

    /** @return array<string, mixed> */
    private function call(string $method, string $path, ?array $body = null): array
    {
        $headers = ['Accept: application/json'];
        if ($body !== null) {
            $headers[] = 'Content-Type: application/json';
        }
        if ($this->token !== '') {
            $headers[] = 'Authorization: Bearer ' . $this->token;
        }
        $ctx = stream_context_create(['http' => [
            'method' => $method,
            'header' => implode("\r\n", $headers),
            'content' => $body !== null ? json_encode($body, JSON_THROW_ON_ERROR | JSON_UNESCAPED_SLASHES) : '',
            'ignore_errors' => true,
            'timeout' => $this->timeout,
        ]]);
        $raw = @file_get_contents($this->base . $path, false, $ctx);
        if ($raw === false) {
            throw new ApiError(0, 'could not reach ' . $this->base . ': ' . (error_get_last()['message'] ?? 'unknown error'));
        }
        $status = 0;
        foreach ($http_response_header ?? [] as $line) {
            if (preg_match('#^HTTP/\S+ (\d{3})#', $line, $m)) {
                $status = (int) $m[1]; // the last one, after redirects
            }
        }
        $doc = $raw !== '' ? json_decode($raw, true) : [];
        if ($status < 200 || $status > 299) {
            throw new ApiError($status, is_array($doc) && isset($doc['error']) ? (string) $doc['error'] : "HTTP {$status}", is_array($doc) ? ($doc['fields'] ?? []) : []);
        }
        return is_array($doc) ? $doc : [];
    }
}

<?php

declare(strict_types=1);

namespace Freshen;

/**
 * The wire format of queue/WIRE.md: strict decoding of jobs, encoding of
 * outcomes and dead-letter entries, texts within their limits. Pure.
 */
final class Wire
{
    public const TRUNCATED_MARKER = "\u{2026} [truncated]";

    /** The shared Lua script lua/<name>.lua (a copy of queue/lua). */
    public static function lua(string $name): string
    {
        return (string) file_get_contents(__DIR__ . '/../lua/' . $name . '.lua');
    }

    /** $s cut to at most $max bytes on a UTF-8 character boundary, ending with the marker. */
    public static function cutText(string $s, int $max): string
    {
        if (strlen($s) <= $max) {
            return $s;
        }
        $n = $max - strlen(self::TRUNCATED_MARKER);
        while ($n > 0 && (ord($s[$n]) & 0xC0) === 0x80) {
            $n--;
        }
        return substr($s, 0, $n) . self::TRUNCATED_MARKER;
    }

    /** A text the scheduler accepts: invalid UTF-8 and NUL become U+FFFD, cut to $max bytes. */
    public static function cleanText(string $s, int $max): string
    {
        $s = self::scrub($s);
        return self::cutText(str_replace("\0", "\u{FFFD}", $s), $max);
    }

    public static function validKind(string $kind, Limits $lim): bool
    {
        return $kind !== '' && strlen($kind) <= $lim->maxKindBytes && self::utf8($kind) && !str_contains($kind, "\0");
    }

    /** $t in RFC 3339, UTC, with milliseconds. */
    public static function formatTime(\DateTimeInterface $t): string
    {
        return \DateTimeImmutable::createFromInterface($t)->setTimezone(new \DateTimeZone('UTC'))->format('Y-m-d\TH:i:s.v\Z');
    }

    /** The RFC 3339 time $s, or null if it is not one. */
    public static function parseTime(string $s): ?\DateTimeImmutable
    {
        if (!preg_match('/^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/', $s, $m)) {
            return null;
        }
        $frac = $m[3] !== '' ? substr(str_pad($m[3], 7, '0'), 0, 7) : '.000000';
        $zone = strtoupper($m[4]) === 'Z' ? '+00:00' : $m[4];
        $t = \DateTimeImmutable::createFromFormat('Y-m-d\TH:i:s.uP', "{$m[1]}T{$m[2]}{$frac}{$zone}");
        $errors = \DateTimeImmutable::getLastErrors();
        if ($t === false || ($errors !== false && ($errors['warning_count'] > 0 || $errors['error_count'] > 0))) {
            return null;
        }
        return $t->setTimezone(new \DateTimeZone('UTC'));
    }

    /**
     * The job $raw, or the reason (a string) it breaks a rule of the wire
     * format, naming the field.
     */
    public static function decodeJob(string $raw, Limits $lim): JobData|string
    {
        $size = strlen($raw);
        if ($size > $lim->maxBytes) {
            return "too large: must be at most {$lim->maxBytes} bytes, got {$size}";
        }
        $flags = JSON_INVALID_UTF8_SUBSTITUTE | JSON_BIGINT_AS_STRING;
        $top = json_decode($raw, false, 512, $flags);
        $err = json_last_error();
        if ($err !== JSON_ERROR_NONE && $err !== JSON_ERROR_UTF16) {
            return 'invalid json: ' . json_last_error_msg();
        }
        $valid = self::utf8($raw);
        $first = $raw[strspn($raw, " \t\r\n")] ?? '';
        if ($err === JSON_ERROR_NONE && !is_object($top) || $first !== '{') {
            return 'must be a JSON object, got ' . self::kindOf($first);
        }
        $values = [];
        foreach (self::members($raw) as [$tok, $value]) {
            if (!$valid && !self::utf8($tok)) {
                return 'field name: must be valid UTF-8';
            }
            $reason = self::escapeReason($tok);
            if ($reason !== '') {
                return 'field name ' . self::cutText($tok, 64) . ': ' . $reason;
            }
            $name = (string) json_decode($tok, false, 512, $flags);
            if (!$valid && !self::utf8($value)) {
                return self::fieldName($name) . ': must be valid UTF-8';
            }
            if (array_key_exists($name, $values)) {
                return self::fieldName($name) . ': duplicate field';
            }
            $values[$name] = $value;
        }
        $job = new JobData();
        foreach (['model_id' => 'modelId', 'attempt_uid' => 'attemptUid', 'queue' => 'queue', 'started_at' => 'startedAt', 'deadline_at' => 'deadlineAt'] as $name => $prop) {
            $v = $values[$name] ?? 'null';
            if ($v === 'null') {
                continue;
            }
            if ($v[0] !== '"') {
                return "{$name}: must be a string, got " . self::cutText($v, 64);
            }
            $reason = self::escapeReason($v);
            if ($reason !== '') {
                return "{$name}: {$reason}";
            }
            $s = (string) json_decode($v, false, 512, $flags);
            if (str_ends_with($name, '_at')) {
                $t = self::parseTime($s);
                if ($t === null) {
                    return "{$name}: must be an RFC 3339 time, got " . self::cutText($v, 64);
                }
                $job->{$prop} = $t;
            } else {
                $job->{$prop} = $s;
            }
        }
        $no = $values['attempt_no'] ?? 'null';
        if ($no !== 'null') {
            if (!preg_match('/^-?\d+$/', $no)) {
                return 'attempt_no: must be an integer, got ' . self::cutText($no, 64);
            }
            $job->attemptNo = (int) $no;
        }
        if (($values['payload'] ?? 'null') !== 'null') {
            $job->payload = json_decode($values['payload'], true, 512, $flags);
            if (json_last_error() !== JSON_ERROR_NONE) {
                return 'payload: ' . json_last_error_msg();
            }
        }
        foreach (['model_id' => $job->modelId, 'attempt_uid' => $job->attemptUid] as $name => $v) {
            if ($v === '') {
                return "{$name}: missing";
            }
            if (strlen($v) > $lim->maxIdBytes) {
                return "{$name}: must be at most {$lim->maxIdBytes} bytes, got " . strlen($v);
            }
        }
        return $job;
    }

    /** The dead-letter entry of $raw, set aside at $at for $reason. */
    public static function deadEntry(string $reason, string $raw, \DateTimeInterface $at, Limits $lim): string
    {
        $message = self::scrub($raw);
        $entry = ['reason' => self::scrub($reason), 'message' => $message, 'at' => self::formatTime($at)];
        if (strlen($raw) > max(intdiv($lim->maxBytes, 8), $lim->maxMessageBytes)) {
            $entry['message'] = self::cutText($message, $lim->maxMessageBytes);
            $entry['cut'] = true;
        }
        return self::encode($entry);
    }

    /** @param array<string, mixed> $v */
    public static function encode(array $v): string
    {
        return json_encode($v, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_THROW_ON_ERROR);
    }

    /**
     * The outcome of $job whose handler returned $result or threw $error.
     *
     * @return array<string, mixed>
     */
    public static function outcome(JobData $job, ?Result $result, ?\Throwable $error, Limits $lim): array
    {
        $o = ['model_id' => $job->modelId, 'attempt_uid' => $job->attemptUid, 'outcome' => 'success'];
        if ($error !== null) {
            $kind = $error instanceof Failure ? $error->kind : (new \ReflectionClass($error))->getShortName();
            $o['outcome'] = 'failure';
            $o['kind'] = self::validKind($kind, $lim) ? $kind : 'error';
            $message = self::cleanText($error->getMessage(), $lim->maxMessageBytes);
            if ($message !== '') {
                $o['message'] = $message;
            }
            if ($error instanceof Failure) {
                if (!$error->retryable) {
                    $o['retryable'] = false;
                }
                if ($error->userMessage !== '') {
                    $o['user_message'] = self::cleanText($error->userMessage, $lim->maxMessageBytes);
                }
            }
        } elseif ($result !== null && $result->snoozeUntil !== null) {
            $o['outcome'] = 'snooze';
            $o['until'] = self::formatTime($result->snoozeUntil);
        } elseif ($result !== null && $result->snoozeSeconds !== null) {
            $o['outcome'] = 'snooze';
            $o['for'] = max(1, (int) round($result->snoozeSeconds * 1000)) . 'ms';
        } elseif ($result !== null && $result->unchanged) {
            $o['unchanged'] = true;
        }
        return $o;
    }

    public static function statusOutcome(JobData $job, string $message, Limits $lim): string
    {
        return self::encode(['model_id' => $job->modelId, 'attempt_uid' => $job->attemptUid, 'outcome' => 'status', 'message' => self::cleanText($message, $lim->maxMessageBytes)]);
    }

    /** Whether $s is valid UTF-8. */
    public static function utf8(string $s): bool
    {
        return preg_match('//u', $s) === 1;
    }

    /** $s with its invalid UTF-8 replaced by U+FFFD. */
    public static function scrub(string $s): string
    {
        return self::utf8($s) ? $s : (string) json_decode(json_encode($s, JSON_INVALID_UTF8_SUBSTITUTE));
    }

    private static function kindOf(string $first): string
    {
        return match ($first) {
            '"' => 'a string',
            '{' => 'an object',
            '[' => 'an array',
            't', 'f' => 'a boolean',
            'n' => 'null',
            default => 'a number',
        };
    }

    private static function fieldName(string $name): string
    {
        return preg_match('/^[A-Za-z0-9_.-]{1,64}$/', $name) ? $name : self::encode([self::cutText($name, 64)]);
    }

    /** Why the JSON string token $tok holds what Freshen does not store: a NUL or a lone surrogate escape. */
    private static function escapeReason(string $tok): string
    {
        if (!preg_match_all('/\\\\(u[0-9a-fA-F]{4}|.)/s', $tok, $m)) {
            return '';
        }
        $esc = $m[1];
        for ($i = 0, $n = count($esc); $i < $n; $i++) {
            if ($esc[$i][0] !== 'u') {
                continue;
            }
            $r = hexdec(substr($esc[$i], 1));
            if ($r === 0) {
                return 'must not contain NUL (\\u0000)';
            }
            if ($r >= 0xDC00 && $r <= 0xDFFF) {
                return 'must be valid UTF-8 (lone surrogate \\' . $esc[$i] . ')';
            }
            if ($r >= 0xD800 && $r <= 0xDBFF) {
                $lo = isset($esc[$i + 1]) && $esc[$i + 1][0] === 'u' ? hexdec(substr($esc[$i + 1], 1)) : 0;
                if ($lo < 0xDC00 || $lo > 0xDFFF || !str_contains($tok, '\\' . $esc[$i] . '\\' . $esc[$i + 1])) {
                    return 'must be valid UTF-8 (lone surrogate \\' . $esc[$i] . ')';
                }
                $i++;
            }
        }
        return '';
    }

    /**
     * The top-level members of the JSON object $raw: each name and value as written.
     *
     * @return list<array{string, string}>
     */
    private static function members(string $raw): array
    {
        $out = [];
        $len = strlen($raw);
        $i = strspn($raw, " \t\r\n") + 1;
        while (true) {
            $i += strspn($raw, " \t\r\n", $i);
            if ($i >= $len || $raw[$i] === '}') {
                return $out;
            }
            $end = self::stringEnd($raw, $i);
            $tok = substr($raw, $i, $end - $i);
            $i = $end + strspn($raw, " \t\r\n", $end) + 1;
            $i += strspn($raw, " \t\r\n", $i);
            $vend = self::valueEnd($raw, $i);
            $out[] = [$tok, substr($raw, $i, $vend - $i)];
            $i = $vend + strspn($raw, " \t\r\n", $vend);
            if ($i < $len && $raw[$i] === ',') {
                $i++;
            }
        }
    }

    private static function stringEnd(string $s, int $i): int
    {
        $len = strlen($s);
        for ($i++; $i < $len; $i++) {
            if ($s[$i] === '\\') {
                $i++;
            } elseif ($s[$i] === '"') {
                return $i + 1;
            }
        }
        return $i;
    }

    private static function valueEnd(string $s, int $i): int
    {
        $len = strlen($s);
        if ($s[$i] === '"') {
            return self::stringEnd($s, $i);
        }
        if ($s[$i] === '{' || $s[$i] === '[') {
            $depth = 0;
            while ($i < $len) {
                $c = $s[$i];
                if ($c === '"') {
                    $i = self::stringEnd($s, $i);
                    continue;
                }
                if ($c === '{' || $c === '[') {
                    $depth++;
                } elseif ($c === '}' || $c === ']') {
                    if (--$depth === 0) {
                        return $i + 1;
                    }
                }
                $i++;
            }
            return $i;
        }
        return $i + strcspn($s, ",}] \t\r\n", $i);
    }
}

<?php
// The BigTable refresh of docs/workers.md: download the customer's CSV and
// import it; snooze while the export is not there, retry on a 5xx, report
// an unchanged file, and tell the customer which row to fix.
//
//   REDIS_URL=redis://localhost:6379/0 php examples/bigtable.php

declare(strict_types=1);

require __DIR__ . '/../src/autoload.php'; // or Composer's vendor/autoload.php

use Freshen\Failure;
use Freshen\Job;
use Freshen\Result;
use Freshen\Worker;

/** The row numbered $row cannot be imported. */
final class RowError extends RuntimeException
{
    public function __construct(public readonly int $row)
    {
        parent::__construct("row {$row}: no date");
    }
}

/** @return array{string, int} the file at $url and the HTTP status */
function download(string $url): array
{
    $body = @file_get_contents($url, false, stream_context_create(['http' => ['ignore_errors' => true, 'timeout' => 60]]));
    $status = (int) (explode(' ', $http_response_header[0] ?? 'HTTP/1.1 0')[1] ?? 0);
    return [$body === false ? '' : $body, $status];
}

/** Stands for your import: throws a RowError for a row without a date. */
function importCsv(string $csv, Job $job): void
{
    foreach (array_slice(explode("\n", trim($csv)), 1) as $i => $line) {
        $job->throwIfCancelled(); // superseded, cancelled or past its deadline
        if (trim(str_getcsv($line)[0] ?? '') === '') {
            throw new RowError($i + 1);
        }
    }
}

function refreshTable(Job $job): ?Result
{
    $job->status('downloading');
    [$csv, $code] = download($job->payload['input_url']);
    if ($code === 404) {
        return Result::snooze(15 * 60); // the export is not there yet
    }
    if ($code >= 500) {
        throw new Failure("http_{$code}", "upstream answered {$code}");
    }
    $digest = hash('sha256', $csv);
    if (lastImport("bigtable-{$job->modelId}") === $digest) {
        return Result::unchanged();
    }
    $job->status('importing');
    try {
        importCsv($csv, $job);
    } catch (RowError $e) {
        throw new Failure('validation', $e->getMessage(), retryable: false,
            userMessage: "Row {$e->row} of your file has no date. Please replace it and try again.");
    }
    setLastImport("bigtable-{$job->modelId}", $digest);
    return null; // success
}

// Where the digest of the file imported last is kept (your database, in practice).
function lastImport(string $key): ?string
{
    $v = @file_get_contents(sys_get_temp_dir() . "/{$key}.sha256");
    return $v === false ? null : $v;
}

function setLastImport(string $key, string $digest): void
{
    file_put_contents(sys_get_temp_dir() . "/{$key}.sha256", $digest);
}

if (realpath($_SERVER['SCRIPT_FILENAME'] ?? '') === __FILE__) {
    (new Worker('refreshTable', redis: getenv('REDIS_URL'), queue: 'tables', concurrency: 8))->run();
}

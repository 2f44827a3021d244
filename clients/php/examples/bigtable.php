<?php
// The BigTable refresh: download a customer's CSV and import it, telling the
// customer what is wrong with their file when retrying cannot help.
//
//   REDIS_URL=redis://localhost:6379/0 php examples/bigtable.php

declare(strict_types=1);

require __DIR__ . '/../src/autoload.php'; // or Composer's vendor/autoload.php

use Freshen\Failure;
use Freshen\Job;
use Freshen\Worker;

function importRows(array $rows): void
{
    // where the application stores the rows (a database, a warehouse...)
}

function refreshBigtable(Job $job): void
{
    $job->status('downloading');
    $csv = @file_get_contents($job->payload['input_url'], false, stream_context_create(['http' => ['ignore_errors' => true, 'timeout' => 60]]));
    $status = (int) explode(' ', $http_response_header[0] ?? 'HTTP/1.1 0')[1];
    if ($csv === false || $status !== 200) {
        throw new Failure("http_{$status}", "{$job->payload['input_url']} answered {$status}"); // retried by the policy
    }
    $lines = array_map('str_getcsv', explode("\n", trim($csv)));
    $header = array_shift($lines);
    $rows = [];
    foreach ($lines as $i => $line) {
        $job->throwIfCancelled(); // superseded, cancelled, or past its deadline
        $row = array_combine($header, array_pad($line, count($header), ''));
        if (($row['date'] ?? '') === '') {
            $n = $i + 1;
            throw new Failure('validation', "row {$n}: no date", retryable: false, userMessage: "Row {$n} of your file has no date.");
        }
        $rows[] = $row;
    }
    $job->status('importing ' . count($rows) . ' rows');
    importRows($rows); // returning: a success
}

(new Worker('refreshBigtable', redis: getenv('REDIS_URL'), queue: 'tables', concurrency: 8))->run();

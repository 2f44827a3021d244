<?php
// A Laravel artisan command that runs a Freshen worker, the way
// `php artisan queue:work` runs Laravel's: put it in app/Console/Commands,
// run it under Supervisor or systemd like any queue worker, and stop it with
// SIGTERM (it finishes the running jobs and posts their outcomes).
//
//   php artisan freshen:work tables --concurrency=8

declare(strict_types=1);

namespace App\Console\Commands;

use Freshen\Failure;
use Freshen\Job;
use Freshen\Worker;
use Illuminate\Console\Command;
use Illuminate\Support\Facades\Log;

final class RefreshWorkerCommand extends Command
{
    protected $signature = 'freshen:work {queue=default} {--concurrency=1}';

    protected $description = 'Run the refreshes Freshen schedules';

    public function handle(): int
    {
        (new Worker(
            fn (Job $job) => $this->refresh($job),
            redis: config('database.redis.freshen.url', 'redis://127.0.0.1:6379/0'),
            queue: $this->argument('queue'),
            concurrency: (int) $this->option('concurrency'),
            logger: Log::channel(), // any PSR-3 logger
        ))->run();
        return self::SUCCESS;
    }

    private function refresh(Job $job): void
    {
        // e.g. app(BigTableImporter::class)->import($job->payload['input_url'], $job),
        // throwing new Failure('validation', ..., retryable: false, userMessage: ...)
        // for what the customer must fix.
    }
}

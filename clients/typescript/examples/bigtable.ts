// The BigTable refresh of docs/workers.md: download the customer's CSV and
// import it; snooze while the export is not there, retry on a 5xx, report
// an unchanged file, and tell the customer which row to fix.
//
//   REDIS_URL=redis://localhost:6379/0 node examples/bigtable.js   (compiled)
import { createHash } from "node:crypto";
import { Failure, RunningJob, Worker, snooze, unchanged } from "@freshen/client";

const lastImport = new Map<string, string>(); // model id -> digest of the file imported last (your database, in practice)

class RowError extends Error {
  constructor(readonly row: number) {
    super(`row ${row}: no date`);
  }
}

/** Stands for your import: throws a RowError for a row without a date. */
async function importCsv(text: string, signal: AbortSignal): Promise<void> {
  text.split("\n").slice(1).forEach((line, i) => {
    signal.throwIfAborted(); // superseded, cancelled or past its deadline
    if (!line.split(",")[0].trim()) throw new RowError(i + 1);
  });
}

export async function refreshTable(job: RunningJob) {
  const { input_url } = job.payload as { input_url: string };
  await job.status("downloading");
  const res = await fetch(input_url, { signal: job.signal }); // aborted if the job must stop
  if (res.status === 404) return snooze({ forMs: 15 * 60_000 }); // the export is not there yet
  if (res.status >= 500) throw new Failure(`http_${res.status}`, `upstream answered ${res.status}`);
  const text = await res.text();
  const digest = createHash("sha256").update(text).digest("hex");
  if (lastImport.get(job.modelId) === digest) return unchanged();
  await job.status("importing");
  try {
    await importCsv(text, job.signal);
  } catch (e) {
    if (!(e instanceof RowError)) throw e; // a retryable failure of its class name
    throw new Failure("validation", e.message, {
      retryable: false,
      userMessage: `Row ${e.row} of your file has no date. Please replace it and try again.`,
    });
  }
  lastImport.set(job.modelId, digest); // returning nothing: success
}

await new Worker(refreshTable, { redis: process.env.REDIS_URL!, queue: "tables", concurrency: 8 }).run({ handleSignals: true });

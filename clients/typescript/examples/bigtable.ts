// The BigTable refresh: download a customer's CSV and import it, telling the
// customer what is wrong with their file when retrying cannot help.
//
//   REDIS_URL=redis://localhost:6379/0 node examples/bigtable.js   (compiled)
import { Failure, RunningJob, Worker } from "@freshen/client";

async function importRows(rows: Array<Record<string, string>>): Promise<void> {
  // where the application stores the rows (a database, a warehouse...)
}

export async function refreshBigtable(job: RunningJob): Promise<void> {
  await job.status("downloading");
  const { input_url } = job.payload as { input_url: string };
  const res = await fetch(input_url, { signal: job.signal }); // aborted if superseded, cancelled or past its deadline
  if (!res.ok) throw new Failure(`http_${res.status}`, `${input_url} answered ${res.status}`); // retried by the policy
  const [header, ...lines] = (await res.text()).trim().split("\n");
  const names = header.split(",");
  const rows = lines.map((l) => Object.fromEntries(l.split(",").map((v, i) => [names[i], v])));
  rows.forEach((row, i) => {
    if (!row.date) {
      throw new Failure("validation", `row ${i + 1}: no date`, {
        retryable: false,
        userMessage: `Row ${i + 1} of your file has no date.`,
      });
    }
  });
  await job.status(`importing ${rows.length} rows`);
  await importRows(rows); // returning: a success
}

await new Worker(refreshBigtable, { redis: process.env.REDIS_URL!, queue: "tables", concurrency: 8 }).run({ handleSignals: true });

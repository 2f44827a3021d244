// The conformance handler (docs/workers.md, "Conformance") on this client;
// `freshen conformance` runs it (after npm run build):
//
//   freshen conformance -- node clients/typescript/examples/conformance.mjs
import { Failure, Worker, snooze, unchanged } from "../dist/esm/index.js";

export async function handle(job) {
  const c = job.payload?.conformance ?? {};
  for (const s of c.status ?? []) await job.status(s);
  if (c.sleep && (await job.wait(c.sleep * 1000))) throw new Failure("interrupted", `stopped: ${job.cancelReason}`);
  if (c.do === "fail") {
    throw new Failure(c.kind || "error", c.message || "", { retryable: c.retryable !== false, userMessage: c.user_message || "" });
  }
  if (c.do === "snooze") return snooze({ forMs: (c.snooze_for ?? 0) * 1000 });
  if (c.unchanged) return unchanged();
}

export function options(env = process.env) {
  return {
    redis: env.REDIS_URL,
    queue: env.FRESHEN_QUEUE,
    prefix: env.FRESHEN_REDIS_PREFIX,
    id: env.FRESHEN_ID,
    leaseMs: env.FRESHEN_LEASE ? parseFloat(env.FRESHEN_LEASE) * 1000 : undefined,
    concurrency: env.FRESHEN_CONCURRENCY ? parseInt(env.FRESHEN_CONCURRENCY, 10) : 1,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await new Worker(handle, options()).run({ handleSignals: true });
}

// Freshen workers and API client. A Worker takes the jobs of a queue from
// Redis and reports outcomes, as queue/WIRE.md in the Freshen repository
// says; Client creates, updates and triggers models through the HTTP API.
export { Worker, RunningJob, JobCancelled, consoleLogger } from "./worker.js";
export type { Handler, Logger, LogLevel, WorkerOptions, WorkerStats } from "./worker.js";
export { Failure, snooze, unchanged, defaultLimits, decodeJob, cutText } from "./wire.js";
export type { Job, Limits, Result, Outcome } from "./wire.js";
export { Client, APIError } from "./api.js";
export type { ActResult, Model, ModelInput, Policy } from "./api.js";

/**
 * The engine: what happens to a covered request between its key and its response.
 * {@code Coordinator} runs one acquire loop per request (a new key executes, a completed one
 * replays, an in-progress one waits or answers 409, another payload answers 422) and hands an
 * acquired key to its {@code ExecutionMode}: {@code LeasedMode} (a lease renewed by the
 * {@code LeaseKeeper} while the handler runs) or {@code TransactionalMode} (the record in the
 * handler's database transaction). {@code Settlement} stores or releases the outcome, fenced by
 * the lease's token, retrying a completion the store failed to take. {@code Report} writes
 * the outcome's one log line and metric.
 */
package dev.idempotency.server.internal.engine;

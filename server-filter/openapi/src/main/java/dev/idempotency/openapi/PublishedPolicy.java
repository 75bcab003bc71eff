package dev.idempotency.openapi;

/**
 * What the document says about one operation: the merged {@code @Idempotent} members, with
 * placeholders for the application's settings where the annotation has none.
 *
 * @param required     whether a request without the key is rejected
 * @param retention    how long a completed result is replayed
 * @param lease        how long an in-progress request holds the key
 * @param inFlightWait how long a duplicate waits for the original before 409
 * @param failOpen     whether the route never answers 503: it runs unprotected when the store is
 *                     down and is not transactional (a failed commit is a 503 there)
 * @param keyHeader    the header a route takes its key from as a raw value ({@code keyHeader}), or ""
 * @param keyPointer   the JSON Pointer to the body member that carries the key ({@code keyPointer}), or ""
 * @param operation    the route's explicit operation name, or ""
 */
record PublishedPolicy(boolean required, String retention, String lease, String inFlightWait, boolean failOpen,
                       String keyHeader, String keyPointer, String operation) {
}

/**
 * The record key and the fingerprint (S7-S9), in one SHA-256 pass over a request:
 * {@code RequestDigest} hashes the scope and key (the store key) and goes on with the request's
 * parts ({@code RequestFingerprint}, whose javadoc states the format), JSON bodies in their
 * RFC 8785 canonical form ({@code JsonCanonicalizer}, one strict scan of the bytes).
 */
package dev.idempotency.server.internal.fingerprint;

/**
 * What the tests run against: real stores, brokers and servers started as processes or embedded
 * when none is configured, clocks the tests move, and {@link dev.idempotency.testsupport.FaultProxy},
 * a fault-injecting HTTP/1.1 proxy on loopback.
 *
 * <h2>FaultProxy</h2>
 *
 * <h3>Forwarding</h3>
 * Each accepted client connection gets its own upstream connection (1:1, opened when the first
 * request is forwarded, closed with the client connection). The proxy reads one <em>whole</em>
 * request from the client (head up to the blank line, then a {@code Content-Length} body or a
 * chunked body through the last chunk and trailers; a request with neither has no body), draws the
 * faults for it, writes its bytes unchanged to the upstream, reads the upstream's whole response
 * (interim 1xx responses, then the final one: no body for HEAD, 204, 304; else chunked,
 * {@code Content-Length}, or up to the upstream's close) and writes those bytes unchanged to the
 * client. Then it waits for the next request on the same connection (keep-alive; a pipelined
 * request simply waits in the buffer). Request and response bytes are never altered, with two
 * exceptions: for a request with {@code Expect: 100-continue} and a body the proxy itself writes
 * {@code HTTP/1.1 100 Continue\r\n\r\n} to the client before reading the body, and drops the
 * upstream's own {@code 100} interim responses to that request, so the client sees exactly one.
 * The connection is closed after a response when the request or response says
 * {@code Connection: close}, when either is HTTP/1.0 without {@code keep-alive}, or when the
 * response body ends at the upstream's close. A {@code 101 Switching Protocols} response turns the
 * connection into a raw two-way pipe (no more faults on it). When the upstream closes before
 * answering, the client connection is closed (FIN), as the server itself would have; when the
 * upstream cannot be reached or a side fails mid-message, the client connection is reset. No TLS,
 * no HTTP/2.
 *
 * <h3>Faults, at the byte level</h3>
 * <ul>
 *   <li><b>reset</b> ({@link dev.idempotency.testsupport.FaultProxyBuilder#resetProbability}): after the whole request has been read
 *   from the client, and before a single byte of it is written upstream, the client socket is
 *   closed with {@code SO_LINGER 0}, so the kernel sends a TCP RST instead of a FIN. The client
 *   reads "connection reset" (or its write fails); the upstream never sees the request.</li>
 *   <li><b>delay</b> ({@link dev.idempotency.testsupport.FaultProxyBuilder#delay}): after the request has been read, the proxy sleeps
 *   for the duration before writing it upstream; no bytes move in either direction meanwhile.
 *   <b>response delay</b> ({@link dev.idempotency.testsupport.FaultProxyBuilder#responseDelay}): the upstream's whole response has been
 *   read (the server has done the work), and the proxy sleeps before writing it to the client.</li>
 *   <li><b>drop response</b> ({@link dev.idempotency.testsupport.FaultProxyBuilder#dropResponseProbability}): the request is written
 *   upstream, the upstream's whole response is read (so the upstream has handled the request and
 *   answered), and then the client connection is ended <em>without a single byte of that
 *   response</em>: closed with a FIN ({@link dev.idempotency.testsupport.FaultProxy.DropMode#CLOSE}, the default; the client reads end of
 *   stream) or with a RST ({@link dev.idempotency.testsupport.FaultProxy.DropMode#RESET}). The upstream connection is closed too. This is
 *   the "the server did it, the client never learned" case idempotency keys exist for.</li>
 *   <li><b>refuse</b> ({@link dev.idempotency.testsupport.FaultProxyBuilder#refuseProbability}): decided per accepted connection; the
 *   connection is accepted and immediately closed with {@code SO_LINGER 0} (RST) before any byte
 *   is read. The client sees a reset (or end of stream) on its first read or write. (The JDK
 *   {@code HttpClient} reports this as a {@code ConnectException} and retries the connection once
 *   by itself, so one call can show up as two refused connections.)</li>
 *   <li><b>down</b> ({@link dev.idempotency.testsupport.FaultProxy#setDown(boolean)}, also {@link dev.idempotency.testsupport.FaultProxyBuilder#down(boolean)}): the listening
 *   socket is closed, so a new connection is refused by the kernel ({@code ConnectException:
 *   Connection refused}, exactly like a server that is not running); on an already open
 *   connection the next request is read and answered with a RST without being forwarded (counted
 *   as a refusal). In-flight exchanges finish. {@code setDown(false)} listens again on the same
 *   port.</li>
 * </ul>
 * Per request the faults are tried in this order: reset (then nothing else happens), request
 * delay, response delay, drop. A request can be both delayed and dropped.
 *
 * <h3>Determinism</h3>
 * Request faults come from one {@link java.util.Random} seeded with {@link dev.idempotency.testsupport.FaultProxy#seed()}, connection refusals
 * from a second one seeded from it. Every request draws exactly four numbers (reset, request
 * delay, response delay, drop) in the order the requests arrive, whatever the probabilities, so
 * the same seed gives the same {@link dev.idempotency.testsupport.FaultProxy#decisions()} for the same sequence of requests (requests
 * sent one at a time; concurrent requests arrive in an order the proxy does not control).
 * {@link dev.idempotency.testsupport.FaultProxy#failNext(dev.idempotency.testsupport.FaultProxy.Fault...)} scripts the faults of the next requests instead; they still draw
 * their four numbers, so the random sequence after them is unchanged.
 *
 * <h3>Threads</h3>
 * A daemon thread accepts, one daemon thread serves each connection (plus one more for a
 * {@code 101} pipe). {@link dev.idempotency.testsupport.FaultProxy#close()} closes the listener and every socket, interrupts delays and
 * waits for the threads to end.
 */
package dev.idempotency.testsupport;

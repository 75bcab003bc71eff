package dev.idempotency.testsupport;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Plain blocking connections to a Redis named by a {@code redis://} URI, for the tests' and the
 * benchmarks' own checks and measurements (is a server there, a {@code PING} round trip,
 * {@code INFO}): connected to the URI's host and port and, when the URI carries credentials,
 * authenticated with them as Lettuce reads them ({@code redis://password@host},
 * {@code redis://:password@host}, {@code redis://user:password@host}, percent-encoded), so a
 * Redis that requires a password is reached as well as one that does not. TLS
 * ({@code rediss://}) is refused with a message.
 */
public final class RedisWire {

    private static final byte[] PING = "PING\r\n".getBytes(StandardCharsets.US_ASCII);

    private RedisWire() {
    }

    /** @return the port of a {@code redis://} URI, Redis's default when it gives none */
    public static int port(URI redis) {
        return redis.getPort() == -1 ? 6379 : redis.getPort();
    }

    /**
     * @param redis          where the server is, with its credentials if it needs them
     * @param timeoutMillis  how long connecting and each answer may take
     * @return a connected socket ({@code TCP_NODELAY}, no read timeout), authenticated when {@code redis} says so
     * @throws IOException when Redis cannot be reached, refuses the credentials, or the URI is not {@code redis://}
     */
    public static Socket open(URI redis, int timeoutMillis) throws IOException {
        if (!"redis".equalsIgnoreCase(redis.getScheme())) {
            throw new IOException("only redis:// URIs are supported here (no TLS), was " + redis.getScheme() + "://");
        }
        Socket socket = new Socket();
        try {
            socket.connect(new InetSocketAddress(redis.getHost(), port(redis)), timeoutMillis);
            socket.setTcpNoDelay(true);
            byte[] auth = auth(redis);
            if (auth != null) {
                socket.setSoTimeout(timeoutMillis);
                OutputStream out = socket.getOutputStream();
                out.write(auth);
                out.flush();
                String reply = line(socket.getInputStream());
                if (!reply.equals("+OK")) {
                    throw new IOException("Redis at " + redis.getHost() + ":" + port(redis)
                        + " refused the URI's credentials: " + reply);
                }
                socket.setSoTimeout(0);
            }
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /** @return whether a Redis at {@code redis} answers {@code PING} with {@code PONG}, with the URI's credentials */
    public static boolean answersPing(URI redis, int timeoutMillis) {
        try (Socket s = open(redis, timeoutMillis)) {
            s.setSoTimeout(timeoutMillis);
            OutputStream out = s.getOutputStream();
            out.write(PING);
            out.flush();
            return line(s.getInputStream()).equals("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * @param redis          where the server is, with its credentials if it needs them
     * @param section        the {@code INFO} section, e.g. {@code clients} or {@code commandstats}
     * @param timeoutMillis  how long connecting and the answer may take
     * @return the server's {@code INFO section} text, asked on a connection of its own (with the
     *     URI's credentials), which the server counts among its clients while it asks
     * @throws IOException when Redis cannot be reached, refuses the credentials, answers with an
     *     error, or closes the connection in the middle of the answer
     */
    public static String info(URI redis, String section, int timeoutMillis) throws IOException {
        try (Socket s = open(redis, timeoutMillis)) {
            s.setSoTimeout(timeoutMillis);
            OutputStream out = s.getOutputStream();
            out.write(command("INFO", section));
            out.flush();
            InputStream in = s.getInputStream();
            String header = line(in);
            if (!header.startsWith("$")) {
                throw new IOException("Redis answered INFO " + section + " with " + header);
            }
            int length = Integer.parseInt(header.substring(1));
            byte[] body = in.readNBytes(length);
            if (body.length < length) {
                throw new IOException("Redis closed the connection in the middle of INFO " + section + "'s answer");
            }
            return new String(body, StandardCharsets.UTF_8);
        }
    }

    /** @return {@code AUTH [user] password} in Redis's protocol, or {@code null} when the URI has no credentials */
    public static byte[] auth(URI redis) {
        String info = redis.getUserInfo();
        if (info == null || info.isEmpty()) {
            return null;
        }
        int colon = info.indexOf(':');
        List<String> args = new ArrayList<>(List.of("AUTH"));
        if (colon > 0) {
            args.add(info.substring(0, colon));
        }
        args.add(colon < 0 ? info : info.substring(colon + 1));
        return command(args.toArray(String[]::new));
    }

    /** @return a command in Redis's protocol: an array of bulk strings, lengths in UTF-8 bytes */
    public static byte[] command(String... args) {
        StringBuilder command = new StringBuilder().append('*').append(args.length).append("\r\n");
        for (String a : args) {
            command.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a).append("\r\n");
        }
        return command.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** @return one line of Redis's protocol, without its CR LF */
    public static String line(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("Redis closed the connection");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    /**
     * @return an array reply of bulk strings (null elements as {@code null}); empty for a null
     *     array ({@code *-1})
     * @throws IOException on an error reply or another type
     */
    public static List<String> array(InputStream in) throws IOException {
        String header = line(in);
        if (!header.startsWith("*")) {
            throw new IOException("Redis answered " + header + " where an array was expected");
        }
        int n = Integer.parseInt(header.substring(1));
        List<String> items = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String item = line(in);
            if (!item.startsWith("$")) {
                throw new IOException("Redis answered " + item + " where a bulk string was expected");
            }
            int length = Integer.parseInt(item.substring(1));
            if (length < 0) {
                items.add(null);
                continue;
            }
            byte[] body = in.readNBytes(length + 2);
            items.add(new String(body, 0, length, StandardCharsets.UTF_8));
        }
        return items;
    }
}

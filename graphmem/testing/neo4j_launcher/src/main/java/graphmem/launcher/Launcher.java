package graphmem.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.internal.helpers.HostnamePort;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * Test-only launcher for a Neo4j Community DBMS (embedded API) with the Bolt
 * connector on 127.0.0.1, used by graphmem.testing.neo4j_server.
 *
 * <pre>
 * java ... graphmem.launcher.Launcher --home DIR [--port N] [--pagecache 512m] [--watch-stdin true]
 * </pre>
 *
 * <ul>
 *   <li>{@code --home}: DBMS home; data, transaction logs and logs live below it.</li>
 *   <li>{@code --port}: Bolt port on 127.0.0.1; 0 (the default) lets the OS choose.</li>
 *   <li>{@code --pagecache}: page cache size (e.g. 512m, 1g); default from env
 *       {@code GRAPHMEM_NEO4J_PAGECACHE}, else 512m.</li>
 *   <li>{@code --watch-stdin}: {@code true} (default) exits when stdin reaches EOF;
 *       pass {@code false} when running it by hand with stdin at /dev/null.</li>
 * </ul>
 *
 * Authentication is disabled. Prints exactly one {@code READY <port>} line on
 * stdout once the default database is available and Bolt is bound. Shuts the
 * DBMS down cleanly on SIGTERM/SIGINT (shutdown hook) and when stdin reaches
 * end-of-file, so a launcher whose parent died does not linger.
 */
public final class Launcher {
    private static final PrintStream OUT = System.out;
    private static final Object LOCK = new Object();
    /** Counted down once build() returned or failed. */
    private static final CountDownLatch STARTED = new CountDownLatch(1);
    private static DatabaseManagementService dbms;
    private static boolean stopped;

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        Path home = Paths.get(require(opts, "home")).toAbsolutePath();
        int port = Integer.parseInt(opts.getOrDefault("port", "0"));
        String pageCache = opts.get("pagecache");
        if (pageCache == null || pageCache.isBlank()) {
            pageCache = System.getenv().getOrDefault("GRAPHMEM_NEO4J_PAGECACHE", "512m");
        }
        boolean watchStdin = Boolean.parseBoolean(opts.getOrDefault("watch-stdin", "true"));
        Files.createDirectories(home);

        Map<Setting<?>, Object> config = new HashMap<>();
        config.put(BoltConnector.enabled, true);
        config.put(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port));
        config.put(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", port));
        config.put(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED);
        config.put(HttpConnector.enabled, false);
        config.put(HttpsConnector.enabled, false);
        config.put(GraphDatabaseSettings.default_listen_address, new SocketAddress("127.0.0.1"));
        config.put(GraphDatabaseSettings.auth_enabled, false);
        config.put(GraphDatabaseSettings.pagecache_memory, parseBytes(pageCache));
        // Throw-away test databases: no 250 MiB pre-allocated transaction logs,
        // no usage reporting (there is no internet here anyway).
        config.put(GraphDatabaseSettings.preallocate_logical_logs, false);
        config.put(GraphDatabaseSettings.logical_log_rotation_threshold, 32L * 1024 * 1024);
        config.put(GraphDatabaseSettings.keep_logical_logs, "1 files");
        config.put(GraphDatabaseSettings.udc_enabled, false);
        config.put(GraphDatabaseSettings.shutdown_transaction_end_timeout, Duration.ofSeconds(5));
        // Netty's default graceful shutdown (2 s quiet period per event loop
        // group) makes every stop/restart take ~10 s; tests restart often.
        config.put(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0);
        config.put(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(2));

        Runtime.getRuntime().addShutdownHook(new Thread(Launcher::shutdown, "graphmem-launcher-shutdown"));
        if (watchStdin) {
            startStdinWatcher();
        }

        long t0 = System.nanoTime();
        DatabaseManagementService service;
        try {
            service = new DatabaseManagementServiceBuilder(home).setConfig(config).build();
        } catch (Throwable t) {
            STARTED.countDown();
            System.err.println("graphmem-launcher: neo4j failed to start");
            t.printStackTrace();
            System.err.flush();
            System.exit(1);
            return;
        }
        synchronized (LOCK) {
            dbms = service; // a concurrent shutdown hook waits on STARTED, then stops it
        }
        STARTED.countDown();
        GraphDatabaseService db = service.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        while (!db.isAvailable(1000)) {
            synchronized (LOCK) {
                if (stopped) {
                    return;
                }
            }
        }
        int boundPort = boltPort(db, port);
        long ms = (System.nanoTime() - t0) / 1_000_000L;
        OUT.println("graphmem-launcher: neo4j started in " + ms + " ms, home=" + home);
        OUT.println("READY " + boundPort);
        OUT.flush();

        // Park the main thread; the JVM exits via System.exit/shutdown hook.
        new CountDownLatch(1).await();
    }

    private static int boltPort(GraphDatabaseService db, int requested) {
        try {
            ConnectorPortRegister register = ((GraphDatabaseAPI) db)
                    .getDependencyResolver()
                    .resolveDependency(ConnectorPortRegister.class);
            HostnamePort address = register.getLocalAddress(ConnectorType.BOLT);
            if (address != null && address.getPort() > 0) {
                return address.getPort();
            }
        } catch (RuntimeException e) {
            System.err.println("graphmem-launcher: could not read bound Bolt port: " + e);
        }
        return requested;
    }

    private static void shutdown() {
        DatabaseManagementService service;
        synchronized (LOCK) {
            if (stopped) {
                return;
            }
            stopped = true;
        }
        try {
            // If a stop request arrives while the DBMS is still being built,
            // wait for it so it is shut down cleanly rather than cut off.
            STARTED.await(120, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (LOCK) {
            service = dbms;
            dbms = null;
        }
        if (service != null) {
            System.err.println("graphmem-launcher: shutting down neo4j");
            long t0 = System.nanoTime();
            try {
                service.shutdown();
                System.err.println("graphmem-launcher: neo4j stopped in "
                        + (System.nanoTime() - t0) / 1_000_000L + " ms");
            } catch (RuntimeException e) {
                System.err.println("graphmem-launcher: error during shutdown: " + e);
            }
        }
    }

    /** Exit (running the shutdown hook) once stdin is closed by the parent. */
    private static void startStdinWatcher() {
        Thread watcher = new Thread(() -> {
            byte[] buf = new byte[256];
            InputStream in = System.in;
            try {
                while (in.read(buf) >= 0) {
                    // ignore input; only EOF matters
                }
            } catch (IOException e) {
                // treat a broken stdin like EOF
            }
            System.err.println("graphmem-launcher: stdin closed, exiting");
            System.exit(0);
        }, "graphmem-launcher-stdin");
        watcher.setDaemon(true);
        watcher.start();
    }

    private static Map<String, String> parseArgs(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                throw usage("unexpected argument: " + a);
            }
            String key = a.substring(2);
            String value;
            int eq = key.indexOf('=');
            if (eq >= 0) {
                value = key.substring(eq + 1);
                key = key.substring(0, eq);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw usage("missing value for " + a);
            }
            out.put(key, value);
        }
        return out;
    }

    private static String require(Map<String, String> opts, String key) {
        String v = opts.get(key);
        if (v == null || v.isBlank()) {
            throw usage("--" + key + " is required");
        }
        return v;
    }

    private static IllegalArgumentException usage(String msg) {
        return new IllegalArgumentException(
                msg + "\nusage: Launcher --home DIR [--port N] [--pagecache SIZE] [--watch-stdin true|false]");
    }

    static long parseBytes(String text) {
        String s = text.trim().toLowerCase(Locale.ROOT);
        if (s.endsWith("ib")) {
            s = s.substring(0, s.length() - 2);
        } else if (s.endsWith("b")) {
            s = s.substring(0, s.length() - 1);
        }
        long mult = 1;
        if (!s.isEmpty()) {
            switch (s.charAt(s.length() - 1)) {
                case 'k': mult = 1L << 10; break;
                case 'm': mult = 1L << 20; break;
                case 'g': mult = 1L << 30; break;
                default: mult = 1; break;
            }
            if (mult != 1) {
                s = s.substring(0, s.length() - 1);
            }
        }
        return Long.parseLong(s.trim()) * mult;
    }
}

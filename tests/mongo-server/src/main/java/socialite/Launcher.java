package socialite;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.MongoVersion;
import de.bwaldvogel.mongo.backend.CollectionOptions;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;
import de.bwaldvogel.mongo.backend.memory.MemoryCollection;
import de.bwaldvogel.mongo.backend.memory.MemoryDatabase;
import de.bwaldvogel.mongo.bson.Document;

/**
 * Serves an in-memory MongoDB stand-in on 127.0.0.1 and a free port, with the oplog on
 * (change streams need it) and a server version the Rust driver accepts (wire version
 * at least 9). Prints "LISTENING port" and, with --port-file PATH, writes the port there
 * atomically. Runs until killed.
 */
public final class Launcher {
    /**
     * The stand-in's own newest version (MONGO_5_0) reports wire version 8; the Rust
     * driver needs at least 9, so report MongoDB 6.0 (wire version 17).
     */
    static final MongoVersion REPORTED_VERSION = new MongoVersion() {
        @Override
        public List<Integer> getVersionArray() {
            return List.of(6, 0, 0);
        }

        @Override
        public int getWireVersion() {
            return 17;
        }
    };

    /**
     * The stand-in's findAndModify updates under the collection's lock but answers with the
     * stored document itself, which is encoded after the lock is let go: a second
     * findAndModify on the same document may change it first, and two callers then see
     * the same version. MongoDB answers with the document as its own write left it, so
     * this copies the answer while the lock is still held.
     */
    static final class AtomicAnswers extends MemoryBackend {
        @Override
        public MemoryDatabase openOrCreateDatabase(String databaseName) {
            return new MemoryDatabase(databaseName, getCursorRegistry()) {
                @Override
                protected MemoryCollection openOrCreateCollection(String collectionName, CollectionOptions options) {
                    return new MemoryCollection(this, collectionName, options, cursorRegistry) {
                        @Override
                        public synchronized Document findAndModify(Document query) {
                            Document result = super.findAndModify(query);
                            if (result.get("value") instanceof Document value) {
                                result.put("value", value.cloneDeeply());
                            }
                            return result;
                        }
                    };
                }
            };
        }
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        Path portFile = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--port-file") && i + 1 < args.length) {
                portFile = Path.of(args[++i]);
            }
        }
        MemoryBackend backend = new AtomicAnswers();
        backend.version(REPORTED_VERSION);
        MongoServer server = new MongoServer(backend);
        server.enableOplog();
        server.bind("127.0.0.1", 0);
        InetSocketAddress address = server.getLocalAddress();
        int port = address.getPort();
        if (portFile != null) {
            Path temporary = portFile.resolveSibling(portFile.getFileName() + ".tmp");
            Files.writeString(temporary, Integer.toString(port), StandardCharsets.UTF_8);
            Files.move(temporary, portFile, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        }
        System.out.println("LISTENING " + port);
        System.out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.shutdownNow();
            stopped.countDown();
        }));
        stopped.await();
    }
}

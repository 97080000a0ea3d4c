/**
 * The storage backends against one behaviour suite: FsStorage in a temporary folder and
 * S3Storage against a real s3rver on loopback (bucket created here with CreateBucket).
 * Then what only one backend has (atomic writes, key prefix, content type) and
 * storageFromUrl's parsing and errors.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  CreateBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import { type Storage, StorageError } from "../../src/server/storage/storage.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { S3Storage } from "../../src/server/storage/storage_s3.ts";
import { storageFromUrl } from "../../src/server/storage/storage_url.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";
import { ROOT } from "../helpers.ts";

const encoder = new TextEncoder();

/** Reads a stream to the end. */
async function readAll(body: ReadableStream<Uint8Array>): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await new Response(body).arrayBuffer());
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Deterministic, non-repeating-looking bytes (so a truncated or shifted copy differs). */
function patternBytes(length: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(length);
  let x = 2463534242;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x & 0xff;
  }
  return bytes;
}

/** Keys every backend must refuse, with the position the message should name. */
const BAD_KEYS: [string, RegExp][] = [
  ["", /empty/],
  ["/etc/passwd", /absolute/],
  ["a//b", /segment 2 is empty/],
  ["a/", /segment 2 is empty/],
  ["../outside", /segment 1 is "\.\."/],
  ["a/../../outside", /segment 2 is "\.\."/],
  ["a/./b", /segment 2 is "\."/],
  [".hidden", /segment 1 is "\.hidden"/],
  ["a\\b", /backslash at position 1/],
];

/** How a backend under test is set up and torn down. */
interface Backend {
  storage: Storage;
  close(): Promise<void>;
}

/** The behaviour every Storage must have. */
function storageBehaviour(name: string, open: () => Promise<Backend>): void {
  describe(`${name}: Storage behaviour`, () => {
    let backend: Backend;
    let storage: Storage;
    let work: string;

    before(async () => {
      backend = await open();
      storage = backend.storage;
      work = await Deno.makeTempDir({ prefix: "vid-storage-work-" });
    });
    after(async () => {
      await backend.close();
      await Deno.remove(work, { recursive: true });
    });

    it("round-trips bytes through putBytes and get, and overwrites", async () => {
      const bytes = encoder.encode("hello, storage");
      await storage.putBytes("thumbnails/abc.png", bytes, "image/png");
      const object = await storage.get("thumbnails/abc.png");
      assert.ok(object, "stored object is found");
      assert.equal(object.size, bytes.byteLength);
      assert.deepEqual(await readAll(object.body), bytes);

      await storage.putBytes("thumbnails/abc.png", encoder.encode("v2"));
      const replaced = await storage.get("thumbnails/abc.png");
      assert.ok(replaced);
      assert.equal(new TextDecoder().decode(await readAll(replaced.body)), "v2");
    });

    it("round-trips empty bytes", async () => {
      await storage.putBytes("empty/zero", new Uint8Array());
      const object = await storage.get("empty/zero");
      assert.ok(object);
      assert.equal(object.size, 0);
      assert.equal((await readAll(object.body)).byteLength, 0);
    });

    it("stores a ~5 MB file with putFile and reads it back intact", async () => {
      const bytes = patternBytes(5 * 1024 * 1024 + 123);
      const file = join(work, "video.mp4");
      await Deno.writeFile(file, bytes);
      await storage.putFile("renders/r1/video.mp4", file, "video/mp4");
      const object = await storage.get("renders/r1/video.mp4");
      assert.ok(object);
      assert.equal(object.size, bytes.byteLength);
      assert.equal(await sha256(await readAll(object.body)), await sha256(bytes));
    });

    it("downloads an object to a local file, creating its folder", async () => {
      const bytes = patternBytes(300_000);
      await storage.putBytes("projects/p1/project.zip", bytes, "application/zip");
      const file = join(work, "render-job", "nested", "project.zip");
      await storage.download("projects/p1/project.zip", file);
      assert.equal(await sha256(await Deno.readFile(file)), await sha256(bytes));
    });

    it("reports existence", async () => {
      await storage.putBytes("exists/yes", encoder.encode("1"));
      assert.equal(await storage.exists("exists/yes"), true);
      assert.equal(await storage.exists("exists/no"), false);
      assert.equal(await storage.exists("exists"), false, "a folder of keys is not an object");
      assert.equal(await storage.exists("exists/yes/deeper"), false);
    });

    it("gets undefined for a missing key", async () => {
      assert.equal(await storage.get("missing/nothing.mp4"), undefined);
      assert.equal(await storage.get("never/stored/here"), undefined);
    });

    it("fails to download a missing key with a StorageError naming the key", async () => {
      const file = join(work, "missing.zip");
      await assert.rejects(
        storage.download("projects/nope/project.zip", file),
        (error: unknown) => {
          assert.ok(error instanceof StorageError, `StorageError, got ${error}`);
          assert.equal(error.field, "projects/nope/project.zip");
          assert.match(error.message, /"projects\/nope\/project\.zip"/);
          return true;
        },
      );
      await assert.rejects(Deno.stat(file), Deno.errors.NotFound, "no file left behind");
    });

    it("deletes by prefix, counting, and touches nothing else", async () => {
      const keys = [
        "del/a/1",
        "del/a/2",
        "del/a/sub/3",
        "del/ab/4",
        "del/b/5",
        "keep/del/a/6",
      ];
      for (const key of keys) await storage.putBytes(key, encoder.encode(key));

      assert.equal(await storage.deletePrefix("del/a/"), 3);
      for (const key of ["del/a/1", "del/a/2", "del/a/sub/3"]) {
        assert.equal(await storage.exists(key), false, `${key} deleted`);
      }
      for (const key of ["del/ab/4", "del/b/5", "keep/del/a/6"]) {
        assert.equal(await storage.exists(key), true, `${key} kept`);
      }

      // A plain string prefix: "del/a" also covers "del/ab/…".
      assert.equal(await storage.deletePrefix("del/a"), 1);
      assert.equal(await storage.exists("del/ab/4"), false);
      assert.equal(await storage.exists("del/b/5"), true);

      assert.equal(await storage.deletePrefix("nothing/here/"), 0);
      assert.equal(await storage.deletePrefix("del/"), 1);
      assert.equal(await storage.exists("keep/del/a/6"), true);

      // The prefix's folder can be written again after it was emptied.
      await storage.putBytes("del/a/again", encoder.encode("x"));
      assert.equal(await storage.exists("del/a/again"), true);
    });

    it("rejects bad keys with a StorageError naming the key and the problem", async () => {
      const file = join(work, "bad-key-source");
      await Deno.writeFile(file, encoder.encode("x"));
      for (const [key, why] of BAD_KEYS) {
        const check = (error: unknown): boolean => {
          assert.ok(
            error instanceof StorageError,
            `${JSON.stringify(key)}: StorageError, got ${error}`,
          );
          assert.equal(error.field, key);
          assert.match(error.message, why);
          return true;
        };
        await assert.rejects(storage.putBytes(key, encoder.encode("x")), check);
        await assert.rejects(storage.putFile(key, file), check);
        await assert.rejects(storage.get(key), check);
        await assert.rejects(storage.exists(key), check);
        await assert.rejects(storage.download(key, join(work, "out")), check);
      }
      await assert.rejects(storage.deletePrefix(""), StorageError);
      await assert.rejects(storage.deletePrefix("../"), StorageError);
      await assert.rejects(storage.deletePrefix("/"), StorageError);
    });
  });
}

storageBehaviour("FsStorage", async () => {
  const root = await Deno.makeTempDir({ prefix: "vid-fs-storage-" });
  return {
    storage: new FsStorage(root),
    close: () => Deno.remove(root, { recursive: true }),
  };
});

const BUCKET = "vid-test";

/** A raw SDK client for the local server, to create buckets and look behind S3Storage. */
function rawClient(endpoint: string): S3Client {
  return new S3Client({
    region: "us-east-1",
    endpoint,
    forcePathStyle: true,
    credentials: S3_CREDENTIALS,
  });
}

async function createBucket(endpoint: string, bucket: string): Promise<void> {
  const client = rawClient(endpoint);
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
}

storageBehaviour("S3Storage", async () => {
  const server = await startS3Server();
  await createBucket(server.endpoint, BUCKET);
  const storage = new S3Storage({
    bucket: BUCKET,
    endpoint: server.endpoint,
    forcePathStyle: true,
    credentials: S3_CREDENTIALS,
  });
  return {
    storage,
    close: async () => {
      storage.close();
      await server.close();
    },
  };
});

describe("FsStorage specifics", () => {
  let root: string;
  before(async () => {
    root = await Deno.makeTempDir({ prefix: "vid-fs-storage-" });
  });
  after(async () => {
    await Deno.remove(root, { recursive: true });
  });

  it("maps keys to files under the root and leaves no temporary files", async () => {
    const storage = new FsStorage(join(root, "store"));
    const source = join(root, "source.bin");
    await Deno.writeFile(source, patternBytes(1000));
    await storage.putFile("renders/r1/video.mp4", source);
    await storage.putBytes("renders/r1/thumb.png", encoder.encode("png"));
    const names = [...Deno.readDirSync(join(root, "store", "renders", "r1"))].map((e) => e.name);
    assert.deepEqual(names.sort(), ["thumb.png", "video.mp4"]);
  });

  it("never writes outside the root for a bad key", async () => {
    const storage = new FsStorage(join(root, "inner"));
    await assert.rejects(storage.putBytes("../escaped", encoder.encode("x")), StorageError);
    await assert.rejects(Deno.stat(join(root, "escaped")), Deno.errors.NotFound);
  });

  it("removes folders emptied by deletePrefix", async () => {
    const storage = new FsStorage(join(root, "prune"));
    await storage.putBytes("projects/p1/project.zip", encoder.encode("zip"));
    await storage.putBytes("projects/p2/project.zip", encoder.encode("zip"));
    assert.equal(await storage.deletePrefix("projects/p1/"), 1);
    await assert.rejects(Deno.stat(join(root, "prune", "projects", "p1")), Deno.errors.NotFound);
    assert.ok((await Deno.stat(join(root, "prune", "projects", "p2"))).isDirectory);
  });
});

describe("S3Storage specifics", () => {
  let server: S3Server;
  let raw: S3Client;
  before(async () => {
    server = await startS3Server();
    await createBucket(server.endpoint, BUCKET);
    raw = rawClient(server.endpoint);
  });
  after(async () => {
    raw.destroy();
    await server.close();
  });

  it("keeps every key under the prefix and stores content types", async () => {
    const storage = new S3Storage({
      bucket: BUCKET,
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
      prefix: "/tenants/t1/",
    });
    try {
      assert.equal(storage.prefix, "tenants/t1");
      await storage.putBytes("thumbnails/a.png", encoder.encode("png"), "image/png");
      await storage.putBytes("other/b", encoder.encode("b"));
      const listed = await raw.send(new ListObjectsV2Command({ Bucket: BUCKET }));
      assert.deepEqual(
        (listed.Contents ?? []).map((o) => o.Key).sort(),
        ["tenants/t1/other/b", "tenants/t1/thumbnails/a.png"],
      );
      const head = await raw.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: "tenants/t1/thumbnails/a.png" }),
      );
      assert.equal(head.ContentType, "image/png");
      // Without a type given, the key's extension decides (the shared table, src/util/mime.ts).
      await storage.putBytes("renders/r1/video.mp4", encoder.encode("mp4"));
      const video = await raw.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: "tenants/t1/renders/r1/video.mp4" }),
      );
      assert.equal(video.ContentType, "video/mp4");
      await storage.deletePrefix("renders/");
      assert.equal(await storage.deletePrefix("thumbnails/"), 1);
      assert.equal(await storage.exists("other/b"), true);
    } finally {
      storage.close();
    }
  });

  it("deletes more than one page (1000 keys) by prefix", async () => {
    const storage = new S3Storage({
      bucket: BUCKET,
      endpoint: server.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      const keys = Array.from({ length: 1005 }, (_, i) => `many/${String(i).padStart(4, "0")}`);
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((k) => storage.putBytes(k, encoder.encode(k))));
      }
      assert.equal(await storage.deletePrefix("many/"), 1005);
      assert.equal(await storage.exists("many/0000"), false);
    } finally {
      storage.close();
    }
  });
});

describe("storageFromUrl", () => {
  it("opens a folder from a file URL or a plain path", () => {
    const file = storageFromUrl(pathToFileURL("/var/lib/vid storage").href);
    assert.ok(file instanceof FsStorage);
    assert.equal(file.root, "/var/lib/vid storage");

    const plain = storageFromUrl("/srv/vid");
    assert.ok(plain instanceof FsStorage);
    assert.equal(plain.root, "/srv/vid");

    const relative = storageFromUrl("renders/storage");
    assert.ok(relative instanceof FsStorage);
    assert.equal(relative.root, join(Deno.cwd(), "renders/storage"));
  });

  it("opens S3 with endpoint, region, path style and prefix", () => {
    const storage = storageFromUrl(
      "s3://my-bucket/some/prefix?endpoint=http://127.0.0.1:4568&region=eu-west-1&path_style=1",
    );
    assert.ok(storage instanceof S3Storage);
    try {
      assert.equal(storage.bucket, "my-bucket");
      assert.equal(storage.prefix, "some/prefix");
      assert.equal(storage.endpoint, "http://127.0.0.1:4568");
      assert.equal(storage.region, "eu-west-1");
      assert.equal(storage.forcePathStyle, true);
    } finally {
      storage.close();
    }
  });

  it("defaults to AWS in us-east-1, virtual-hosted, at the bucket root", () => {
    const storage = storageFromUrl("s3://plain-bucket");
    assert.ok(storage instanceof S3Storage);
    try {
      assert.equal(storage.prefix, "");
      assert.equal(storage.endpoint, undefined);
      assert.equal(storage.region, "us-east-1");
      assert.equal(storage.forcePathStyle, false);
    } finally {
      storage.close();
    }
  });

  it("gives a working S3Storage with credentials from the environment (in a child process: the test process's environment is shared)", async () => {
    const server = await startS3Server();
    const raw = rawClient(server.endpoint);
    try {
      await createBucket(server.endpoint, "from-url");
      // The credentials reach the child only through its environment, as an operator's would.
      const child = await new Deno.Command(Deno.execPath(), {
        args: [
          "eval",
          `const { storageFromUrl } = await import(Deno.args[0]);
           const storage = storageFromUrl(Deno.args[1]);
           await storage.putBytes("a/b.txt", new TextEncoder().encode("via url"));
           storage.close();`,
          new URL("../../src/server/storage/storage_url.ts", import.meta.url).href,
          `s3://from-url/pre/fix?endpoint=${server.endpoint}&path_style=true`,
        ],
        cwd: ROOT,
        env: {
          AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(child.code, 0, new TextDecoder().decode(child.stderr));
      const listed = await raw.send(new ListObjectsV2Command({ Bucket: "from-url" }));
      assert.deepEqual((listed.Contents ?? []).map((o) => o.Key), ["pre/fix/a/b.txt"]);
    } finally {
      raw.destroy();
      await server.close();
    }
  });

  it("rejects other schemes and bad parameters, naming the URL and the accepted forms", () => {
    const cases: [string, RegExp][] = [
      ["gs://bucket/x", /Unsupported storage URL "gs:\/\/bucket\/x" \(scheme "gs:"\)/],
      ["https://example.com/storage", /scheme "https:"/],
      ["", /Empty storage URL/],
      ["s3:///no-bucket", /names no bucket/],
      ["s3://b?bucket=x", /Unknown parameter "bucket"/],
      ["s3://b?path_style=yes", /Invalid path_style "yes"/],
      ["s3://b?endpoint=127.0.0.1:4568", /Invalid endpoint "127\.0\.0\.1:4568"/],
      ["s3://b/a/../c", /Invalid prefix/],
      ["s3://b/x#frag", /fragment/],
    ];
    for (const [url, message] of cases) {
      assert.throws(() => storageFromUrl(url), (error: unknown) => {
        assert.ok(error instanceof StorageError, `${url}: StorageError, got ${error}`);
        assert.equal(error.field, url);
        assert.match(error.message, message);
        return true;
      });
    }
    assert.throws(
      () => storageFromUrl("gs://bucket/x"),
      /accepted forms: .*file:\/\/\/.*s3:\/\/bucket/,
    );
  });
});

/** How the flaky endpoint treats its nth connection (from 1). */
type Answer = "drop" | "ok" | "forbidden";

/**
 * A real HTTP/1.1 endpoint on loopback that answers each connection as `answer(n)` says:
 * "drop" closes it once the request's headers are in (a connection reset mid-upload, as a
 * stale keep-alive socket gives), "ok" reads the whole body and answers 200, "forbidden"
 * answers 403 with S3's error body. It records the bodies it received in full.
 */
function flakyS3Endpoint(answer: (n: number) => Answer): {
  endpoint: string;
  connections(): number;
  bodies: Uint8Array[];
  close(): void;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const bodies: Uint8Array[] = [];
  let connections = 0;
  const serve = async (conn: Deno.Conn, n: number): Promise<void> => {
    let data = new Uint8Array(0);
    const chunk = new Uint8Array(65536);
    try {
      while (true) {
        const read = await conn.read(chunk);
        if (read === null) return;
        data = new Uint8Array([...data, ...chunk.subarray(0, read)]);
        const text = new TextDecoder().decode(data);
        const end = text.indexOf("\r\n\r\n");
        if (end < 0) continue;
        const mode = answer(n);
        if (mode === "drop") return;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
        if (data.length - end - 4 < length) continue;
        bodies.push(data.slice(end + 4, end + 4 + length));
        const body = mode === "ok" ? "" : '<?xml version="1.0"?><Error><Code>AccessDenied</Code>' +
          "<Message>Access Denied</Message></Error>";
        const status = mode === "ok" ? "200 OK" : "403 Forbidden";
        await conn.write(new TextEncoder().encode(
          `HTTP/1.1 ${status}\r\nETag: "e"\r\nContent-Type: application/xml\r\n` +
            `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        ));
        return;
      }
    } finally {
      conn.close();
    }
  };
  (async () => {
    for await (const conn of listener) serve(conn, ++connections).catch(() => {});
  })().catch(() => {});
  return {
    endpoint: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    connections: () => connections,
    bodies,
    close: () => listener.close(),
  };
}

describe("S3Storage uploads on a connection that drops (a flaky endpoint on loopback)", () => {
  const storageOn = (endpoint: string): S3Storage =>
    new S3Storage({ bucket: BUCKET, endpoint, forcePathStyle: true, credentials: S3_CREDENTIALS });

  it("putFile sends the whole file again on a new connection when the first one drops", async () => {
    const flaky = flakyS3Endpoint((n) => n === 1 ? "drop" : "ok");
    const dir = await Deno.makeTempDir({ prefix: "vid-storage-flaky-" });
    const storage = storageOn(flaky.endpoint);
    try {
      const bytes = patternBytes(200_000);
      await Deno.writeFile(join(dir, "thumbnail.jpg"), bytes);
      // Before the shared uploader: "socket hang up … non-retryable streaming request" at
      // once, and the server marked a finished render failed (clean-clone run ci4).
      await storage.putFile("renders/r1/thumbnail.jpg", join(dir, "thumbnail.jpg"));
      assert.equal(flaky.connections(), 2, "one dropped connection, one that answered");
      assert.equal(flaky.bodies.length, 1);
      assert.equal(await sha256(flaky.bodies[0].slice()), await sha256(bytes));
    } finally {
      storage.close();
      flaky.close();
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("putFile does not retry a refusal: one request, and S3's error", async () => {
    const flaky = flakyS3Endpoint(() => "forbidden");
    const dir = await Deno.makeTempDir({ prefix: "vid-storage-flaky-" });
    const storage = storageOn(flaky.endpoint);
    try {
      await Deno.writeFile(join(dir, "a.bin"), patternBytes(1000));
      await assert.rejects(
        storage.putFile("renders/r1/a.bin", join(dir, "a.bin")),
        (error: Error) => {
          assert.equal(error.name, "AccessDenied");
          return true;
        },
      );
      assert.equal(flaky.connections(), 1);
    } finally {
      storage.close();
      flaky.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
});

/**
 * The S3 back end of the render server's {@linkcode Storage}: a bucket (and optional key
 * prefix) on AWS or any service speaking the S3 protocol. Apart from the folder back end so
 * that the AWS SDK's calls and the s3rver workarounds are read in one place.
 *
 * @module
 */

import { s3ClientFor } from "../../aws/clients.ts";
import { uploadFile } from "../../aws/upload_file.ts";
import { contentTypeOf } from "../../util/mime.ts";
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import {
  keySegments,
  missing,
  type Storage,
  StorageError,
  type StoredObject,
  streamToFile,
} from "./storage.ts";

/** Options of {@linkcode S3Storage}. */
export interface S3StorageOptions {
  /** Bucket holding the objects. */
  bucket: string;
  /**
   * AWS region of the bucket.
   *
   * @default {"us-east-1"}
   */
  region?: string;
  /** Endpoint of an S3-compatible service (`http://127.0.0.1:4568`); AWS when unset. */
  endpoint?: string;
  /**
   * Address buckets as `<endpoint>/<bucket>` instead of `<bucket>.<endpoint>`; most
   * S3-compatible services on loopback need this.
   *
   * @default {false}
   */
  forcePathStyle?: boolean;
  /** Access keys; the SDK's default chain (environment, profile, instance role) when unset. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Folder inside the bucket every key lives under (`vid/prod` stores `a.mp4` as
   * `vid/prod/a.mp4`); the bucket root when unset.
   */
  prefix?: string;
}

/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

/**
 * Storage in an S3 bucket, or any service speaking the S3 protocol through `endpoint`.
 *
 * @example Against a local S3 server
 * ```ts no_run
 * import { S3Storage } from "./storage_s3.ts";
 *
 * const storage = new S3Storage({
 *   bucket: "vid",
 *   endpoint: "http://127.0.0.1:4568",
 *   forcePathStyle: true,
 *   credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
 * });
 * await storage.putFile("renders/abc/video.mp4", "out/video.mp4", "video/mp4");
 * storage.close();
 * ```
 */
export class S3Storage implements Storage {
  /** Bucket holding the objects. */
  readonly bucket: string;
  /** Folder inside the bucket, without slashes at either end; `""` for the bucket root. */
  readonly prefix: string;
  /** AWS region. */
  readonly region: string;
  /** Endpoint of an S3-compatible service, when not AWS. */
  readonly endpoint?: string;
  /** Whether buckets are addressed by path. */
  readonly forcePathStyle: boolean;
  /** The SDK client, for callers that need other S3 operations on the same bucket. */
  readonly client: S3Client;

  /** @param options Bucket, region, endpoint, credentials and key prefix. */
  constructor(options: S3StorageOptions) {
    this.bucket = options.bucket;
    this.prefix = (options.prefix ?? "").replace(/^\/+|\/+$/g, "");
    if (this.prefix !== "") keySegments(this.prefix, "prefix");
    this.region = options.region ?? "us-east-1";
    this.endpoint = options.endpoint;
    this.forcePathStyle = options.forcePathStyle ?? false;
    this.client = s3ClientFor({
      region: this.region,
      endpoint: options.endpoint,
      forcePathStyle: this.forcePathStyle,
      credentials: options.credentials,
    });
  }

  /** Releases the client's sockets. The storage cannot be used afterwards. */
  close(): void {
    this.client.destroy();
  }

  /** Object key in the bucket for a storage key. */
  #objectKey(key: string, what: "key" | "prefix" = "key"): string {
    keySegments(key, what);
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }

  /**
   * Uploads a local file as a stream with a known length.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * const storage = new S3Storage({ bucket: "vid" });
   * await storage.putFile("renders/abc/video.mp4", "out/video.mp4", "video/mp4");
   * ```
   */
  async putFile(key: string, file: string, contentType?: string): Promise<void> {
    // A dropped connection or a call past its deadline is tried again from a fresh stream
    // (the SDK cannot retry a stream): one such failure marked a finished render failed.
    await uploadFile(this.client, {
      Bucket: this.bucket,
      Key: this.#objectKey(key),
      ContentType: contentType ?? contentTypeOf(key),
    }, file);
  }

  /**
   * Uploads bytes.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * const png = new Uint8Array([137, 80, 78, 71]);
   * await new S3Storage({ bucket: "vid" }).putBytes("thumbnails/abc.png", png, "image/png");
   * ```
   */
  async putBytes(key: string, bytes: Uint8Array, contentType?: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.#objectKey(key),
        Body: bytes,
        ContentLength: bytes.byteLength,
        ContentType: contentType ?? contentTypeOf(key),
      }),
    );
  }

  /**
   * Opens the object for reading; undefined when missing.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * const object = await new S3Storage({ bucket: "vid" }).get("thumbnails/abc.png");
   * if (object) await object.body.pipeTo(new WritableStream());
   * ```
   */
  async get(key: string): Promise<StoredObject | undefined> {
    const objectKey = this.#objectKey(key);
    try {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: objectKey }),
      );
      if (!response.Body) {
        throw new StorageError(`S3 returned no body for key ${JSON.stringify(key)}`, key);
      }
      return { size: response.ContentLength ?? 0, body: response.Body.transformToWebStream() };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Copies the object to a local file, creating its folder.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * await new S3Storage({ bucket: "vid" }).download("projects/abc/project.zip", "/tmp/p.zip");
   * ```
   */
  async download(key: string, file: string): Promise<void> {
    const object = await this.get(key);
    if (!object) throw missing(key);
    await streamToFile(object.body, file);
  }

  /**
   * Resolves when the bucket answers with this server's credentials (a HEAD of the bucket).
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * await new S3Storage({ bucket: "vid" }).ready();
   * ```
   */
  async ready(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
        ?.httpStatusCode;
      const why = status ? `HTTP ${status}` : (error as Error).name || "unreachable";
      throw new StorageError(`the bucket ${this.bucket} is not reachable (${why})`, "storage", {
        cause: error,
      });
    }
  }

  /**
   * Whether an object is stored under key (a HEAD request).
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * console.log(await new S3Storage({ bucket: "vid" }).exists("thumbnails/abc.png"));
   * ```
   */
  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.#objectKey(key) }),
      );
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Deletes every object whose key starts with prefix, a page of up to 1000 at a time.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage_s3.ts";
   *
   * const deleted = await new S3Storage({ bucket: "vid" }).deletePrefix("projects/abc/");
   * ```
   */
  async deletePrefix(prefix: string): Promise<number> {
    const objectPrefix = this.#objectKey(prefix, "prefix");
    let deleted = 0;
    // Each round deletes the first page of what is left, so no paging token is needed. The
    // listing is ListObjects (v1) because s3rver answers a truncated ListObjectsV2 with a
    // 500: it encrypts continuation tokens with DES, which neither Node 20 nor Deno has.
    for (;;) {
      const page = await this.client.send(
        new ListObjectsCommand({
          Bucket: this.bucket,
          Prefix: objectPrefix,
          MaxKeys: DELETE_BATCH,
        }),
      );
      const keys = (page.Contents ?? []).flatMap((object) =>
        object.Key === undefined ? [] : [object.Key]
      );
      if (keys.length === 0) return deleted;
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: false },
        }),
      );
      const failure = result.Errors?.[0];
      if (failure || (result.Deleted?.length ?? 0) === 0) {
        const what = JSON.stringify(failure?.Key ?? keys[0]);
        const why = failure
          ? `${failure.Code ?? "error"}: ${failure.Message ?? ""}`
          : "nothing deleted";
        throw new StorageError(
          `Could not delete ${what} under prefix ${JSON.stringify(prefix)} (${why})`,
          prefix,
        );
      }
      deleted += result.Deleted?.length ?? 0;
    }
  }
}

/** Whether an SDK error means the object (or its key) does not exist. */
function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  return error.name === "NoSuchKey" || error.name === "NotFound" ||
    (error.$metadata.httpStatusCode === 404 && error.name !== "NoSuchBucket");
}

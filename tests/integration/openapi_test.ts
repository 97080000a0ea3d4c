/**
 * The contract against the real server: `vid server` runs as a process on loopback and
 * every answer it gives here is checked against api/openapi.yaml with ajv (JSON Schema
 * 2020-12, the dialect of OpenAPI 3.1) — the status must be one the contract lists for
 * that path and method, and a JSON body must validate against that response's schema.
 * The document itself is checked with @seriousme/openapi-schema-validator (OpenAPI 3.1
 * structure and `$ref` targets) and each of its schemas against the 2020-12 meta-schema
 * in ajv's strict mode. The last test asserts that every operation (but `/oauth/…`) and
 * every status it lists was exercised.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { zipSync } from "fflate";
import { parse as parseYaml } from "yaml";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import { Validator } from "@seriousme/openapi-schema-validator";
import { compositionHtml, ROOT, runVid } from "../helpers.ts";
import { type ServerProcess, startServerProcess } from "../server_process.ts";

type Json = Record<string, unknown>;

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** The `--metrics-token` of the server under test. */
const METRICS_TOKEN = "mt_contract_0123456789abcdef";
/** The `$id` the document is registered under in ajv. */
const DOC_ID = "https://vid.invalid/openapi.json";
/** OpenAPI's own keywords, so ajv's strict mode accepts the document as a schema resource. */
const OPENAPI_KEYWORDS = [
  "openapi",
  "info",
  "servers",
  "paths",
  "components",
  "security",
  "tags",
  "webhooks",
  "jsonSchemaDialect",
  "externalDocs",
  "discriminator",
  "xml",
  "example",
];

function escapePointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

function pointer(...segments: string[]): string {
  return segments.map((s) => `/${escapePointer(s)}`).join("");
}

function isJsonMediaType(type: string): boolean {
  return type === "application/json" || /^application\/[^;]+\+json$/.test(type);
}

function isOAuth(path: string): boolean {
  return path === "/oauth" || path.startsWith("/oauth/");
}

/** api/openapi.yaml with ajv validators for its schemas and a record of what was exercised. */
class Contract {
  readonly doc: Json;
  readonly ajv: Ajv2020;
  readonly #validators = new Map<string, ValidateFunction>();
  readonly #templates: { template: string; pattern: RegExp; params: number }[];
  /** `METHOD template` → statuses seen. */
  readonly exercised = new Map<string, Set<string>>();

  constructor(doc: Json) {
    this.doc = doc;
    this.ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(this.ajv);
    this.ajv.addVocabulary(OPENAPI_KEYWORDS);
    this.ajv.addSchema(doc, DOC_ID);
    this.#templates = Object.keys(this.paths).map((template) => ({
      template,
      params: (template.match(/\{[^}]+\}/g) ?? []).length,
      pattern: new RegExp(
        `^${
          template.split(/\{[^}]+\}/).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(
            "[^/]+",
          )
        }$`,
      ),
    })).sort((a, b) => a.params - b.params);
  }

  get paths(): Record<string, Record<string, Json>> {
    return this.doc.paths as Record<string, Record<string, Json>>;
  }

  /** Every `[path, method, operation]` of the contract. */
  operations(): [string, string, Json][] {
    return Object.entries(this.paths).flatMap(([path, item]) =>
      METHODS.filter((m) => item[m] !== undefined).map((m) =>
        [path, m, item[m]] as [
          string,
          string,
          Json,
        ]
      )
    );
  }

  /** The value at a local JSON pointer (`/a/b`) of the document. */
  at(ref: string): unknown {
    let value: unknown = this.doc;
    for (const raw of ref.split("/").slice(1)) {
      const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
      assert.ok(
        typeof value === "object" && value !== null && key in value,
        `no ${ref} in the contract`,
      );
      value = (value as Json)[key];
    }
    return value;
  }

  /** Follows `$ref`s from the object at `where`; returns the final object and its pointer. */
  deref(where: string): { where: string; value: Json } {
    let value = this.at(where) as Json;
    for (let hops = 0; typeof value.$ref === "string"; hops++) {
      assert.ok(hops < 10, `$ref loop at ${where}`);
      assert.ok(value.$ref.startsWith("#/"), `only local $refs are supported: ${value.$ref}`);
      where = value.$ref.slice(1);
      value = this.at(where) as Json;
    }
    return { where, value };
  }

  /** The ajv validator of the schema at a local JSON pointer. */
  validator(where: string): ValidateFunction {
    let validate = this.#validators.get(where);
    if (!validate) {
      const fragment = where.split("/").map(encodeURIComponent).join("/");
      validate = this.ajv.compile({ $ref: `${DOC_ID}#${fragment}` });
      this.#validators.set(where, validate);
    }
    return validate;
  }

  /** Asserts the value validates against the schema at `where`. */
  assertValid(where: string, value: unknown, what: string): void {
    const validate = this.validator(where);
    assert.ok(
      validate(value),
      `${what} does not match ${where}: ${
        this.ajv.errorsText(validate.errors, { separator: "; " })
      }\n${JSON.stringify(value, null, 2).slice(0, 2000)}`,
    );
  }

  /** The path template of the contract that a concrete request path falls under. */
  template(path: string): string {
    const found = this.#templates.find((t) => t.pattern.test(path));
    assert.ok(found, `the contract has no path for ${path}`);
    return found.template;
  }

  /**
   * Checks one real exchange: the status is listed for the operation, a JSON body
   * validates against the response's schema, the content type is one the response
   * lists; on success the JSON request body must match the request schema too (what the
   * server accepts, the contract must allow). Records the operation and status.
   */
  check(
    method: string,
    path: string,
    request: { body?: string; contentType?: string },
    response: { status: number; contentType: string | null; bytes: Uint8Array },
  ): unknown {
    const template = this.template(path);
    const m = method.toLowerCase();
    const operation = this.paths[template][m];
    const label = `${method.toUpperCase()} ${template}`;
    assert.ok(operation, `the contract has no ${label}`);
    const status = String(response.status);
    const responses = operation.responses as Json;
    const key = [status, `${status[0]}XX`, "default"].find((k) => responses[k] !== undefined);
    const text = new TextDecoder().decode(response.bytes);
    assert.ok(
      key,
      `${label} answered ${status}, which the contract does not list (${
        Object.keys(responses).join(", ")
      }): ${text.slice(0, 500)}`,
    );
    const seen = this.exercised.get(label) ?? new Set<string>();
    seen.add(key);
    this.exercised.set(label, seen);

    const spec = this.deref(pointer("paths", template, m, "responses", key));
    const content = spec.value.content as Record<string, Json> | undefined;
    let body: unknown = undefined;
    if (!content || Object.keys(content).length === 0) {
      assert.equal(response.bytes.length, 0, `${label} ${status} has no content in the contract`);
    } else {
      const type = response.contentType?.split(";")[0].trim().toLowerCase() ?? "";
      const listed = Object.keys(content).find((t) =>
        t === type || t === "*/*" || (t.endsWith("/*") && type.startsWith(t.slice(0, -1)))
      );
      assert.ok(
        listed,
        `${label} ${status} answered content-type ${type}, not one of ${
          Object.keys(content).join(", ")
        }`,
      );
      if (isJsonMediaType(type)) {
        body = JSON.parse(text);
        if (content[listed].schema !== undefined) {
          this.assertValid(
            `${spec.where}${pointer("content", listed, "schema")}`,
            body,
            `${label} ${status} body`,
          );
        }
      }
    }

    if (response.status < 300 && request.body !== undefined && operation.requestBody) {
      const requestBody = this.deref(pointer("paths", template, m, "requestBody"));
      const type = request.contentType ?? "application/json";
      const media = (requestBody.value.content as Record<string, Json>)[type];
      assert.ok(media, `${label} accepted a ${type} body the contract does not list`);
      if (isJsonMediaType(type) && media.schema !== undefined) {
        this.assertValid(
          `${requestBody.where}${pointer("content", type, "schema")}`,
          JSON.parse(request.body),
          `the request body ${label} accepted`,
        );
      }
    }
    return body;
  }
}

/** Every Schema Object of the document with its pointer (not descending into schemas). */
function schemaPointers(doc: Json): string[] {
  const found: string[] = [];
  const record = (where: string, value: unknown) => {
    if (value !== undefined) found.push(where);
  };
  const media = (where: string, content: unknown) => {
    for (const [type, m] of Object.entries((content ?? {}) as Record<string, Json>)) {
      record(`${where}${pointer("content", type, "schema")}`, m.schema);
    }
  };
  const parameters = (where: string, list: unknown) => {
    ((list ?? []) as Json[]).forEach((p, i) => {
      if (p.$ref === undefined) {
        record(`${where}${pointer("parameters", String(i), "schema")}`, p.schema);
      }
    });
  };
  const headers = (where: string, map: unknown) => {
    for (const [name, h] of Object.entries((map ?? {}) as Record<string, Json>)) {
      if (h.$ref === undefined) record(`${where}${pointer("headers", name, "schema")}`, h.schema);
    }
  };
  const response = (where: string, r: Json) => {
    if (r.$ref !== undefined) return;
    media(where, r.content);
    headers(where, r.headers);
  };
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    const base = pointer("paths", path);
    parameters(base, item.parameters);
    for (const m of METHODS) {
      const op = item[m] as Json | undefined;
      if (!op) continue;
      const at = `${base}${pointer(m)}`;
      parameters(at, op.parameters);
      const body = op.requestBody as Json | undefined;
      if (body && body.$ref === undefined) media(`${at}${pointer("requestBody")}`, body.content);
      for (const [status, r] of Object.entries((op.responses ?? {}) as Record<string, Json>)) {
        response(`${at}${pointer("responses", status)}`, r);
      }
    }
  }
  const components = (doc.components ?? {}) as Record<string, Record<string, Json>>;
  for (const name of Object.keys(components.schemas ?? {})) {
    found.push(pointer("components", "schemas", name));
  }
  for (const [name, p] of Object.entries(components.parameters ?? {})) {
    record(pointer("components", "parameters", name, "schema"), p.schema);
  }
  for (const [name, h] of Object.entries(components.headers ?? {})) {
    record(pointer("components", "headers", name, "schema"), h.schema);
  }
  for (const [name, b] of Object.entries(components.requestBodies ?? {})) {
    media(pointer("components", "requestBodies", name), b.content);
  }
  for (const [name, r] of Object.entries(components.responses ?? {})) {
    response(pointer("components", "responses", name), r);
  }
  return found;
}

const VARIABLES = compositionHtml(
  `<div style="position:absolute;inset:0;animation:fade 1s linear both"></div>`,
  {
    id: "contract",
    variables: [{ id: "label", type: "string", default: "hi" }, {
      id: "n",
      type: "number",
      default: 1,
    }],
    head:
      `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(0,0,255) } }</style>`,
  },
);

function projectZip(html = VARIABLES, name = "index.html"): Uint8Array<ArrayBuffer> {
  return new Uint8Array(zipSync({ [name]: new TextEncoder().encode(html) }));
}

describe("api/openapi.yaml against the real server", () => {
  const doc = parseYaml(Deno.readTextFileSync(`${ROOT}api/openapi.yaml`)) as Json;
  const contract = new Contract(doc);
  let dataDir: string;
  let server: ServerProcess;
  let key: string;
  let otherKey: string;

  /** One request, checked against the contract; returns the status and body. */
  const call = async (
    method: string,
    path: string,
    options: {
      key?: string | null;
      json?: unknown;
      raw?: string;
      bytes?: Uint8Array<ArrayBuffer>;
      headers?: Record<string, string>;
      absolute?: string;
    } = {},
  ): Promise<{ status: number; body: Json; bytes: Uint8Array; headers: Headers }> => {
    const url = new URL(options.absolute ?? `${server.url}${path}`);
    const headers = new Headers(options.headers);
    const credential = options.key === undefined ? key : options.key;
    if (credential) headers.set("authorization", `Bearer ${credential}`);
    let body: BodyInit | undefined;
    let text: string | undefined;
    if (options.json !== undefined || options.raw !== undefined) {
      text = options.raw ?? JSON.stringify(options.json);
      body = text;
      headers.set("content-type", "application/json");
    } else if (options.bytes) {
      body = options.bytes;
      headers.set("content-type", "application/zip");
    }
    const response = await fetch(url, { method, headers, body });
    const bytes = new Uint8Array(await response.arrayBuffer());
    const parsed = contract.check(method, url.pathname, {
      body: text,
      contentType: headers.get("content-type") ?? undefined,
    }, {
      status: response.status,
      contentType: response.headers.get("content-type"),
      bytes,
    });
    return {
      status: response.status,
      body: (parsed ?? {}) as Json,
      bytes,
      headers: response.headers,
    };
  };

  const expectStatus = (
    result: { status: number; body: Json },
    status: number,
    code?: string,
  ): void => {
    assert.equal(result.status, status, JSON.stringify(result.body));
    if (code !== undefined) {
      assert.equal((result.body.error as Json).code, code, JSON.stringify(result.body));
    }
  };

  /** Creates an asset for `zip`; uploads it unless `upload` is false. */
  const asset = async (zip: Uint8Array<ArrayBuffer>, upload = true): Promise<Json> => {
    const created = await call("POST", "/v3/assets", { json: { size_bytes: zip.length } });
    expectStatus(created, 201);
    if (!upload) return created.body;
    const put = await call("PUT", "", { absolute: String(created.body.upload_url), bytes: zip });
    expectStatus(put, 200);
    return put.body;
  };

  const waitFor = async (renderId: string, timeoutMs = 120000): Promise<Json> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { status, body } = await call("GET", `/v3/vid/renders/${renderId}`);
      assert.equal(status, 200);
      if (body.status === "completed" || body.status === "failed") return body;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`render ${renderId} did not finish`);
  };

  before(async () => {
    dataDir = await Deno.makeTempDir({ prefix: "vid-openapi-test-" });
    for (const [email, credits] of [["ana@example.com", "100"], ["bo@example.com", "5"]]) {
      const added = await runVid([
        "server",
        "users",
        "add",
        email,
        "--password",
        "correct horse",
        "--data-dir",
        dataDir,
        "--credits",
        credits,
      ]);
      assert.equal(added.code, 0, added.stderr);
    }
    const k1 = await runVid(["server", "keys", "create", "ana@example.com", "--data-dir", dataDir]);
    assert.equal(k1.code, 0, k1.stderr);
    key = k1.stdout.trim();
    const k2 = await runVid(["server", "keys", "create", "bo@example.com", "--data-dir", dataDir]);
    assert.equal(k2.code, 0, k2.stderr);
    otherKey = k2.stdout.trim();
    server = await startServerProcess(dataDir, [
      "--allow-private-urls",
      "--metrics-token",
      METRICS_TOKEN,
    ]);
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(doc);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.equal(validator.version, "3.1");
  });

  it("has only JSON Schema 2020-12 schemas that compile in ajv's strict mode", () => {
    const pointers = schemaPointers(doc);
    assert.ok(pointers.length > 20, `found only ${pointers.length} schemas`);
    for (const where of pointers) {
      const schema = contract.at(where) as Json;
      assert.ok(
        contract.ajv.validateSchema(schema),
        `${where} is not a 2020-12 schema: ${contract.ajv.errorsText()}`,
      );
      contract.validator(where);
    }
  });

  it("serves itself at /v3/openapi.json, equal to api/openapi.yaml", async () => {
    const served = await call("GET", "/v3/openapi.json", { key: null });
    expectStatus(served, 200);
    assert.deepEqual(served.body, doc);
  });

  it("answers the operator's probes and metrics, and 503 from /readyz without its storage", async () => {
    expectStatus(await call("GET", "/healthz", { key: null }), 200);
    expectStatus(await call("GET", "/readyz", { key: null }), 200);
    expectStatus(await call("GET", "/metrics", { key: null }), 401, "vid_unauthorized");
    expectStatus(await call("GET", "/metrics"), 401, "vid_unauthorized");
    const metrics = await call("GET", "/metrics", { key: METRICS_TOKEN });
    expectStatus(metrics, 200);
    assert.match(new TextDecoder().decode(metrics.bytes), /^# TYPE vid_queue_depth gauge$/m);
    await Deno.rename(`${dataDir}/storage`, `${dataDir}/storage.away`);
    try {
      const away = await call("GET", "/readyz", { key: null });
      expectStatus(away, 503);
      assert.equal(away.headers.get("retry-after"), "5");
    } finally {
      await Deno.rename(`${dataDir}/storage.away`, `${dataDir}/storage`);
    }
  });

  it("answers 401 on every operation that needs a credential", async () => {
    const secured = contract.operations().filter(([path, , op]) => {
      const security = (op.security ?? doc.security ?? []) as Json[];
      return !isOAuth(path) && security.length > 0 &&
        !security.some((s) => Object.keys(s).length === 0);
    });
    assert.ok(secured.length >= 6, `only ${secured.length} secured operations`);
    for (const [path, method] of secured) {
      const concrete = path.replace(/\{[^}]+\}/g, "nope");
      for (const credential of [null, "vid_sk_nope", "vid_at_nope"]) {
        const result = await call(method.toUpperCase(), concrete, {
          key: credential,
          ...(method === "post" || method === "put" ? { json: {} } : {}),
        });
        expectStatus(result, 401, "vid_unauthorized");
      }
    }
  });

  it("GET /v3/me: 200 with the account", async () => {
    const me = await call("GET", "/v3/me");
    expectStatus(me, 200);
    assert.equal(me.body.email, "ana@example.com");
    assert.equal(me.body.credential, "api_key");
    assert.equal(me.body.credits, 100);
  });

  it("POST /v3/assets: 201, replay 200, 400, 409, 413; GET /v3/assets/{id}: 200, 404", async () => {
    const zip = projectZip();
    const headers = { "idempotency-key": "contract:asset-1" };
    const first = await call("POST", "/v3/assets", {
      json: { size_bytes: zip.length, filename: "p.zip", composition: "index.html" },
      headers,
    });
    expectStatus(first, 201);
    assert.equal(first.body.status, "pending_upload");
    assert.ok(first.body.upload_url);
    const replay = await call("POST", "/v3/assets", {
      json: { size_bytes: zip.length, filename: "p.zip", composition: "index.html" },
      headers,
    });
    expectStatus(replay, 200);
    assert.equal(replay.body.asset_id, first.body.asset_id);
    expectStatus(
      await call("POST", "/v3/assets", { json: { size_bytes: zip.length + 1 }, headers }),
      409,
      "vid_idempotency_conflict",
    );
    for (
      const [options, field] of [
        [{ json: {} }, "size_bytes"],
        [{ json: { size_bytes: 0 } }, "size_bytes"],
        [{ json: { size_bytes: 1.5 } }, "size_bytes"],
        [{ json: { size_bytes: 10, sha256: "ABC" } }, "sha256"],
        [{ json: { size_bytes: 10, composition: "" } }, "composition"],
        [{ json: [1] }, "body"],
        [{ raw: "{not json" }, "body"],
        [
          { json: { size_bytes: 10 }, headers: { "idempotency-key": "has space" } },
          "Idempotency-Key",
        ],
      ] as const
    ) {
      const result = await call("POST", "/v3/assets", options);
      expectStatus(result, 400, "vid_invalid_request");
      assert.equal((result.body.error as Json).field, field);
    }
    expectStatus(
      await call("POST", "/v3/assets", { json: { size_bytes: 200 * 1024 * 1024 + 1 } }),
      413,
      "vid_payload_too_large",
    );

    const read = await call("GET", `/v3/assets/${first.body.asset_id}`);
    expectStatus(read, 200);
    assert.equal(read.body.status, "pending_upload");
    expectStatus(await call("GET", "/v3/assets/ast_nope"), 404, "vid_not_found");
    expectStatus(
      await call("GET", `/v3/assets/${first.body.asset_id}`, { key: otherKey }),
      404,
      "vid_not_found",
    );
  });

  it("PUT /v3/uploads/{id}: 200, 400, 403, 409, 413, 422", async () => {
    const zip = projectZip();
    const created = await asset(zip, false);
    const uploadUrl = String(created.upload_url);
    const forged = uploadUrl.replace(/expires=(\d+)/, (_m, e) => `expires=${Number(e) + 1}`);
    expectStatus(await call("PUT", "", { absolute: forged, bytes: zip }), 403, "vid_forbidden");
    const unsigned = uploadUrl.replace(/\?.*$/, "");
    expectStatus(await call("PUT", "", { absolute: unsigned, bytes: zip }), 403, "vid_forbidden");
    const bigger = new Uint8Array(zip.length + 1);
    bigger.set(zip);
    expectStatus(
      await call("PUT", "", { absolute: uploadUrl, bytes: bigger }),
      413,
      "vid_payload_too_large",
    );
    expectStatus(
      await call("PUT", "", { absolute: uploadUrl, bytes: zip.slice(0, -1) }),
      400,
      "vid_invalid_request",
    );
    const ready = await call("PUT", "", { absolute: uploadUrl, bytes: zip });
    expectStatus(ready, 200);
    assert.equal(ready.body.status, "ready");
    assert.equal(ready.body.upload_url, undefined);
    expectStatus(await call("PUT", "", { absolute: uploadUrl, bytes: zip }), 409);
    const read = await call("GET", `/v3/assets/${created.asset_id}`);
    expectStatus(read, 200);
    assert.equal(read.body.status, "ready");

    const sha = await asset(zip, false);
    const other = await call("POST", "/v3/assets", {
      json: { size_bytes: zip.length, sha256: "0".repeat(64) },
    });
    expectStatus(other, 201);
    const mismatch = await call("PUT", "", { absolute: String(other.body.upload_url), bytes: zip });
    expectStatus(mismatch, 400, "vid_invalid_request");
    assert.match(String((mismatch.body.error as Json).message), /sha256/);
    expectStatus(await call("PUT", "", { absolute: String(sha.upload_url), bytes: zip }), 200);

    const bad = projectZip("<p>no composition</p>", "other.html");
    const badAsset = await asset(bad, false);
    expectStatus(
      await call("PUT", "", { absolute: String(badAsset.upload_url), bytes: bad }),
      422,
      "vid_project_invalid",
    );
  });

  let queuedId = "";
  let firstId = "";

  it("GET /v3/sites/{token}/{path}: 200 with CORS, 403 bad signature, 404", async () => {
    const zip = projectZip();
    const created = await asset(zip, false);
    const ready = await call("PUT", "", { absolute: String(created.upload_url), bytes: zip });
    expectStatus(ready, 200);
    const siteUrl = String(ready.body.site_url);
    assert.match(siteUrl, /\/v3\/sites\/ast_[^/]+\/index\.html$/);
    const page = await call("GET", "", { absolute: siteUrl, key: null });
    expectStatus(page, 200);
    assert.equal(page.headers.get("access-control-allow-origin"), "*");
    // Opened directly, a tenant's page runs in an opaque origin, never as the API's.
    assert.equal(page.headers.get("content-security-policy"), "sandbox allow-scripts");
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    assert.match(new TextDecoder().decode(page.bytes), /data-composition-id/);
    const forged = siteUrl.replace(
      /\.([0-9a-f])([0-9a-f]*)\/index/,
      (_m, c, r) => `.${c === "0" ? "1" : "0"}${r}/index`,
    );
    const refused = await call("GET", "", { absolute: forged, key: null });
    expectStatus(refused, 403, "vid_forbidden");
    assert.equal(refused.headers.get("access-control-allow-origin"), "*");
    const missing = await call("GET", "", {
      absolute: siteUrl.replace(/index\.html$/, "nope.css"),
      key: null,
    });
    expectStatus(missing, 404, "vid_not_found");
  });

  it("POST /v3/vid/renders: 201, replay 200, 400, 402, 404, 409, 422", async () => {
    const ready = await asset(projectZip());
    const assetId = String(ready.asset_id);
    const cases: [Json, string][] = [
      [{ asset_id: assetId, fps: 0 }, "fps"],
      [{ asset_id: assetId, quality: "ultra" }, "quality"],
      [{ asset_id: assetId, format: "gif" }, "format"],
      [{ asset_id: assetId, resolution: "4k", format: "webm" }, "resolution"],
      [{ asset_id: assetId, aspect_ratio: "4:3" }, "aspect_ratio"],
      [{ asset_id: assetId, callback_url: "http://example.com/hook" }, "callback_url"],
      [{ asset_id: assetId, url: "https://example.com/p.zip" }, "url"],
      [{ asset_id: assetId, composition: "other.html" }, "composition"],
      [{ fps: 30 }, "asset_id"],
    ];
    for (const [json, field] of cases) {
      const result = await call("POST", "/v3/vid/renders", { json });
      expectStatus(result, 400, "vid_invalid_request");
      assert.equal((result.body.error as Json).field, field);
    }
    expectStatus(
      await call("POST", "/v3/vid/renders", { json: { asset_id: "ast_nope" } }),
      404,
      "vid_not_found",
    );
    expectStatus(
      await call("POST", "/v3/vid/renders", { json: { asset_id: assetId }, key: otherKey }),
      404,
      "vid_not_found",
    );
    const pending = await asset(projectZip(), false);
    expectStatus(
      await call("POST", "/v3/vid/renders", { json: { asset_id: pending.asset_id } }),
      409,
      "vid_asset_not_ready",
    );
    const strict = await call("POST", "/v3/vid/renders", {
      json: { asset_id: assetId, variables: { n: "five" }, strict_variables: true },
    });
    expectStatus(strict, 422, "vid_project_invalid");
    assert.equal((strict.body.error as Json).field, "variables.n");
    const long = await asset(projectZip(compositionHtml("<div></div>", { duration: 500 })));
    expectStatus(
      await call("POST", "/v3/vid/renders", { json: { asset_id: long.asset_id } }),
      402,
      "vid_insufficient_credits",
    );

    const headers = { "idempotency-key": "contract:render-1" };
    const json = {
      asset_id: assetId,
      fps: 5,
      quality: "draft",
      format: "mp4",
      resolution: "1080p",
      aspect_ratio: "16:9",
      variables: { label: "yo", extra: 1 },
      strict_variables: false,
      callback_id: "order-1",
    };
    const first = await call("POST", "/v3/vid/renders", { json, headers });
    expectStatus(first, 201);
    assert.equal(first.body.status, "queued");
    assert.equal(first.body.video_url, null);
    const replay = await call("POST", "/v3/vid/renders", { json, headers });
    expectStatus(replay, 200);
    assert.equal(replay.body.render_id, first.body.render_id);
    expectStatus(
      await call("POST", "/v3/vid/renders", { json: { ...json, fps: 6 }, headers }),
      409,
      "vid_idempotency_conflict",
    );
    // One worker: the second render waits behind the first.
    const second = await call("POST", "/v3/vid/renders", { json: { asset_id: assetId, fps: 5 } });
    expectStatus(second, 201);
    firstId = String(first.body.render_id);
    queuedId = String(second.body.render_id);
  });

  it("GET /v3/vid/renders/{id}: 200 queued, then completed with signed links; 404", async () => {
    const queued = await call("GET", `/v3/vid/renders/${queuedId}`);
    expectStatus(queued, 200);
    assert.equal(queued.body.status, "queued");
    assert.equal(queued.body.video_url, null);
    assert.equal(queued.body.thumbnail_url, null);
    assert.equal(queued.body.completed_at, null);
    for (const id of [firstId, queuedId]) {
      const done = await waitFor(id);
      assert.equal(done.status, "completed", String(done.error));
      assert.equal(done.progress, 1);
      assert.match(String(done.video_url), /\/v3\/files\/[^/]+\/video\?expires=\d+&sig=/);
      assert.match(String(done.thumbnail_url), /\/v3\/files\/[^/]+\/thumbnail\?expires=\d+&sig=/);
      assert.ok(done.completed_at);
    }
    expectStatus(await call("GET", "/v3/vid/renders/rnd_nope"), 404, "vid_not_found");
    expectStatus(
      await call("GET", `/v3/vid/renders/${firstId}`, { key: otherKey }),
      404,
      "vid_not_found",
    );
  });

  it("GET /v3/files/{id}/{kind}: 200 video and thumbnail, 403 bad signature, 404", async () => {
    const done = (await call("GET", `/v3/vid/renders/${firstId}`)).body;
    const video = await call("GET", "", { absolute: String(done.video_url), key: null });
    expectStatus(video, 200);
    assert.equal(video.headers.get("content-type"), "video/mp4");
    assert.ok(video.bytes.length > 1000);
    const thumbnail = await call("GET", "", { absolute: String(done.thumbnail_url), key: null });
    expectStatus(thumbnail, 200);
    assert.equal(thumbnail.headers.get("content-type"), "image/jpeg");
    assert.deepEqual([...thumbnail.bytes.slice(0, 2)], [0xff, 0xd8]);
    const tampered = String(done.video_url).replace(
      /sig=([0-9a-f])/,
      (_m, c) => `sig=${c === "0" ? "1" : "0"}`,
    );
    expectStatus(await call("GET", "", { absolute: tampered, key: null }), 403, "vid_forbidden");
    const otherKind = String(done.video_url).replace("/video?", "/thumbnail?");
    expectStatus(await call("GET", "", { absolute: otherKind, key: null }), 403, "vid_forbidden");
    expectStatus(
      await call("GET", `/v3/files/${firstId}/video`, { key: null }),
      403,
      "vid_forbidden",
    );
    expectStatus(
      await call("GET", `/v3/files/${firstId}/audio?expires=1&sig=00`, { key: null }),
      404,
      "vid_not_found",
    );
  });

  it("GET /v3/vid/renders: 200 pages, 400 for a bad limit or token", async () => {
    const page1 = await call("GET", "/v3/vid/renders?limit=1");
    expectStatus(page1, 200);
    assert.equal((page1.body.data as Json[]).length, 1);
    assert.equal((page1.body.data as Json[])[0].render_id, queuedId);
    assert.equal(typeof page1.body.next_token, "string");
    const page2 = await call("GET", `/v3/vid/renders?limit=1&token=${page1.body.next_token}`);
    expectStatus(page2, 200);
    assert.equal((page2.body.data as Json[])[0].render_id, firstId);
    const all = await call("GET", "/v3/vid/renders?all=true");
    expectStatus(all, 200);
    assert.equal(all.body.next_token, null);
    for (const query of ["limit=0", "limit=101", "limit=two", "token=AAAA", "token=!!!"]) {
      const result = await call("GET", `/v3/vid/renders?${query}`);
      expectStatus(result, 400, "vid_invalid_request");
    }
  });

  it("DELETE /v3/vid/renders/{id}: 200, then 404 for get, delete, files; listed with all", async () => {
    const done = (await call("GET", `/v3/vid/renders/${queuedId}`)).body;
    expectStatus(
      await call("DELETE", `/v3/vid/renders/${queuedId}`, { key: otherKey }),
      404,
      "vid_not_found",
    );
    const deleted = await call("DELETE", `/v3/vid/renders/${queuedId}`);
    expectStatus(deleted, 200);
    // A completed render keeps its credits.
    assert.deepEqual(deleted.body, { render_id: queuedId, deleted: true, refunded_credits: 0 });
    expectStatus(await call("GET", `/v3/vid/renders/${queuedId}`), 404, "vid_not_found");
    expectStatus(await call("DELETE", `/v3/vid/renders/${queuedId}`), 404, "vid_not_found");
    expectStatus(
      await call("GET", "", { absolute: String(done.video_url), key: null }),
      404,
      "vid_not_found",
    );
    const visible = await call("GET", "/v3/vid/renders?limit=100");
    assert.ok(!(visible.body.data as Json[]).some((r) => r.render_id === queuedId));
    const all = await call("GET", "/v3/vid/renders?limit=100&all=1");
    const gone = (all.body.data as Json[]).find((r) => r.render_id === queuedId);
    assert.equal(gone?.status, "deleted");
    assert.equal(gone?.video_url, null);
  });

  it("POST /v3/vid/renders from a url: 201, 413 over the limit, 422 when it fails", async () => {
    const site = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      (request) =>
        new URL(request.url).pathname === "/page.html"
          ? new Response(VARIABLES, { headers: { "content-type": "text/html" } })
          : new Response("gone", { status: 404 }),
    );
    // Declares a body over the 200 MB limit and sends none of it.
    const huge = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const answering = (async () => {
      for await (const conn of huge) {
        await conn.read(new Uint8Array(4096));
        await conn.write(
          new TextEncoder().encode(
            "HTTP/1.1 200 OK\r\ncontent-type: application/zip\r\ncontent-length: 300000000\r\n\r\n",
          ),
        );
        conn.close();
      }
    })();
    try {
      const base = `http://127.0.0.1:${site.addr.port}`;
      const fromUrl = await call("POST", "/v3/vid/renders", {
        json: { url: `${base}/page.html`, fps: 5 },
      });
      expectStatus(fromUrl, 201);
      assert.equal(typeof fromUrl.body.asset_id, "string");
      expectStatus(await call("DELETE", `/v3/vid/renders/${fromUrl.body.render_id}`), 200);
      const missing = await call("POST", "/v3/vid/renders", { json: { url: `${base}/gone.zip` } });
      expectStatus(missing, 422, "vid_project_invalid");
      assert.equal((missing.body.error as Json).field, "url");
      const tooBig = await call("POST", "/v3/vid/renders", {
        json: { url: `http://127.0.0.1:${(huge.addr as Deno.NetAddr).port}/big.zip` },
      });
      expectStatus(tooBig, 413, "vid_payload_too_large");
      expectStatus(
        await call("POST", "/v3/vid/renders", { json: { url: "ftp://example.com/p.zip" } }),
        400,
        "vid_invalid_request",
      );
    } finally {
      huge.close();
      await answering.catch(() => {});
      await site.shutdown();
    }
  });

  // Last of the calls: it locks this address's failing credentials out for a minute.
  it("answers 429 with Retry-After to a failing credential on every operation once this address failed 30 key checks", async () => {
    const secured = contract.operations().filter(([path, , op]) => {
      const security = (op.security ?? doc.security ?? []) as Json[];
      return !isOAuth(path) && security.length > 0 &&
        !security.some((s) => Object.keys(s).length === 0);
    });
    let failures = 0;
    for (; failures < 40; failures++) {
      const result = await call("GET", "/v3/me", { key: `vid_sk_wrong${failures}` });
      if (result.status === 429) break;
      expectStatus(result, 401, "vid_unauthorized");
    }
    assert.ok(failures <= 30, `locked out only after ${failures} failures`);
    for (const [path, method] of secured) {
      const concrete = path.replace(/\{[^}]+\}/g, "nope");
      const result = await call(method.toUpperCase(), concrete, {
        key: "vid_sk_still_wrong",
        ...(method === "post" || method === "put" ? { json: {} } : {}),
      });
      expectStatus(result, 429, "vid_rate_limited");
      const retryAfter = Number(result.headers.get("retry-after"));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    }
  });

  it("exercised every operation of the contract and every status it lists", () => {
    const missing: string[] = [];
    for (const [path, method, op] of contract.operations()) {
      if (isOAuth(path)) continue;
      const label = `${method.toUpperCase()} ${path}`;
      const seen = contract.exercised.get(label);
      if (!seen) {
        missing.push(`${label} (never called)`);
        continue;
      }
      for (const status of Object.keys(op.responses as Json)) {
        if (!seen.has(status)) missing.push(`${label} ${status}`);
      }
    }
    assert.deepEqual(missing, []);
  });
});

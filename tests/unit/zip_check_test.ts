/**
 * Tests for the project zip check: a valid project unpacks with its composition parsed,
 * and every kind of bad zip (not a zip, corrupt, escaping or absolute paths, symlinks,
 * too many entries, too large declared or actual size, duplicates, missing or invalid
 * entry HTML) is refused with a ProjectZipError naming the entry, leaving nothing behind.
 * Zips are built with fflate and, where a tool would not write them, patched by hand.
 */

import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { strToU8, type Zippable, zipSync } from "fflate";
import { extractProjectZip, ProjectZipError } from "../../src/server/http/zip_check.ts";
import { CompositionError } from "../../src/composition/errors.ts";

const CENTRAL_SIGNATURE = 0x02014b50;

function page(attrs = 'data-width="1920" data-height="1080" data-duration="5"'): string {
  return `<!doctype html>\n<html><body>\n<div data-composition-id="promo" ${attrs}>` +
    `<h1>Hello</h1></div>\n</body></html>\n`;
}

/** A zip of the given text files, stored or deflated as fflate picks. */
function zipOf(files: Record<string, string | Uint8Array>): Uint8Array {
  const zippable: Zippable = {};
  for (const [name, content] of Object.entries(files)) {
    zippable[name] = typeof content === "string" ? strToU8(content) : content;
  }
  return zipSync(zippable);
}

/** Offsets of the central directory records, keyed by entry name. */
function centralRecords(zip: Uint8Array): Map<string, number> {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const eocd = zip.length - 22;
  assert.equal(view.getUint32(eocd, true), 0x06054b50, "test zips have no comment");
  const records = new Map<string, number>();
  let p = view.getUint32(eocd + 16, true);
  while (p < eocd && view.getUint32(p, true) === CENTRAL_SIGNATURE) {
    const nameLength = view.getUint16(p + 28, true);
    const name = new TextDecoder().decode(zip.subarray(p + 46, p + 46 + nameLength));
    records.set(name, p);
    p += 46 + nameLength + view.getUint16(p + 30, true) + view.getUint16(p + 32, true);
  }
  return records;
}

/** Rewrites a field of one entry's central directory record. */
function patchCentral(
  zip: Uint8Array,
  name: string,
  offset: number,
  value: number,
  bytes: 2 | 4,
): Uint8Array {
  const out = zip.slice();
  const record = centralRecords(out).get(name);
  assert.ok(record !== undefined, `no central record for ${name}`);
  const view = new DataView(out.buffer);
  if (bytes === 2) view.setUint16(record + offset, value, true);
  else view.setUint32(record + offset, value, true);
  return out;
}

/** Replaces every occurrence of one name with another of the same length (local and central). */
function renameEntry(zip: Uint8Array, from: string, to: string): Uint8Array {
  assert.equal(from.length, to.length);
  const out = zip.slice();
  const needle = strToU8(from);
  const replacement = strToU8(to);
  for (let i = 0; i + needle.length <= out.length; i++) {
    if (needle.every((byte, k) => out[i + k] === byte)) out.set(replacement, i);
  }
  return out;
}

/** Offset of an entry's data, from its local header. */
function dataOffset(zip: Uint8Array, name: string): number {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const local = view.getUint32(centralRecords(zip).get(name)! + 42, true);
  return local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
}

/** A zip64 archive of stored files, the way streaming zippers write one. */
function zip64Of(files: Record<string, string>): Uint8Array {
  const parts: Uint8Array[] = [];
  const central: Uint8Array[] = [];
  let offset = 0;
  for (const [name, text] of Object.entries(files)) {
    const nameBytes = strToU8(name);
    const data = strToU8(text);
    const crc = crc32(data);
    const local = new DataView(new ArrayBuffer(30 + nameBytes.length + 20));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 45, true);
    local.setUint16(6, 0x0800, true);
    local.setUint32(14, crc, true);
    local.setUint32(18, 0xffffffff, true);
    local.setUint32(22, 0xffffffff, true);
    local.setUint16(26, nameBytes.length, true);
    local.setUint16(28, 20, true);
    new Uint8Array(local.buffer).set(nameBytes, 30);
    local.setUint16(30 + nameBytes.length, 1, true);
    local.setUint16(32 + nameBytes.length, 16, true);
    local.setBigUint64(34 + nameBytes.length, BigInt(data.length), true);
    local.setBigUint64(42 + nameBytes.length, BigInt(data.length), true);

    const record = new DataView(new ArrayBuffer(46 + nameBytes.length + 28));
    record.setUint32(0, CENTRAL_SIGNATURE, true);
    record.setUint16(4, (3 << 8) | 45, true);
    record.setUint16(6, 45, true);
    record.setUint16(8, 0x0800, true);
    record.setUint32(16, crc, true);
    record.setUint32(20, 0xffffffff, true);
    record.setUint32(24, 0xffffffff, true);
    record.setUint16(28, nameBytes.length, true);
    record.setUint16(30, 28, true);
    record.setUint32(38, (0o100644 << 16) >>> 0, true);
    record.setUint32(42, 0xffffffff, true);
    new Uint8Array(record.buffer).set(nameBytes, 46);
    record.setUint16(46 + nameBytes.length, 1, true);
    record.setUint16(48 + nameBytes.length, 24, true);
    record.setBigUint64(50 + nameBytes.length, BigInt(data.length), true);
    record.setBigUint64(58 + nameBytes.length, BigInt(data.length), true);
    record.setBigUint64(66 + nameBytes.length, BigInt(offset), true);

    parts.push(new Uint8Array(local.buffer), data);
    central.push(new Uint8Array(record.buffer));
    offset += local.byteLength + data.length;
  }
  const count = central.length;
  const centralSize = central.reduce((sum, record) => sum + record.length, 0);
  const end = new DataView(new ArrayBuffer(56 + 20 + 22));
  end.setUint32(0, 0x06064b50, true);
  end.setBigUint64(4, 44n, true);
  end.setUint16(12, (3 << 8) | 45, true);
  end.setUint16(14, 45, true);
  end.setBigUint64(24, BigInt(count), true);
  end.setBigUint64(32, BigInt(count), true);
  end.setBigUint64(40, BigInt(centralSize), true);
  end.setBigUint64(48, BigInt(offset), true);
  end.setUint32(56, 0x07064b50, true);
  end.setBigUint64(64, BigInt(offset + centralSize), true);
  end.setUint32(72, 1, true);
  end.setUint32(76, 0x06054b50, true);
  end.setUint16(86, 0xffff, true);
  end.setUint16(84, 0xffff, true);
  end.setUint32(88, 0xffffffff, true);
  end.setUint32(92, 0xffffffff, true);
  const all = [...parts, ...central, new Uint8Array(end.buffer)];
  const out = new Uint8Array(all.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of all) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

describe("extractProjectZip", () => {
  let parent: string;
  let dest: string;

  beforeEach(async () => {
    parent = await mkdtemp(join(tmpdir(), "vid-zip-check-"));
    dest = join(parent, "project");
  });

  afterEach(async () => {
    await rm(parent, { recursive: true, force: true });
  });

  /** Expects a refusal naming `field`, with nothing left in or beside `dest`. */
  async function refused(
    zip: Uint8Array,
    field: string,
    message: RegExp,
    options: Parameters<typeof extractProjectZip>[2] = {},
  ): Promise<ProjectZipError> {
    let caught: unknown;
    try {
      await extractProjectZip(zip, dest, options);
    } catch (error) {
      caught = error;
    }
    assert.ok(caught instanceof ProjectZipError, `expected a ProjectZipError, got ${caught}`);
    assert.equal(caught.name, "ProjectZipError");
    assert.equal(caught.code, "vid_project_invalid");
    assert.equal(caught.field, field);
    assert.match(caught.message, message);
    assert.deepEqual(await readdir(parent), [], "nothing is left behind");
    return caught;
  }

  describe("a valid project", () => {
    it("unpacks every file with its content and parses the composition", async () => {
      const logo = new Uint8Array(4096).map((_, i) => (i * 7) % 256);
      const zip = zipSync({
        "index.html": strToU8(page()),
        "css/": {},
        "css/style.css": strToU8("h1 { color: red; }\n"),
        "assets/logo.bin": [logo, { level: 0 }],
        "assets/deep/note.txt": [strToU8("x".repeat(10_000)), { level: 9 }],
      });
      const project = await extractProjectZip(zip, dest, {});
      assert.equal(project.composition.id, "promo");
      assert.equal(project.composition.width, 1920);
      assert.equal(project.composition.height, 1080);
      assert.equal(project.composition.duration, 5);
      assert.equal(project.composition.file, join(dest, "index.html"));
      assert.equal(project.composition.projectDir, dest);
      assert.equal(project.entries, 5);
      assert.equal(project.expandedBytes, page().length + 19 + 4096 + 10_000);
      assert.equal(await readFile(join(dest, "index.html"), "utf8"), page());
      assert.equal(await readFile(join(dest, "css/style.css"), "utf8"), "h1 { color: red; }\n");
      assert.deepEqual(new Uint8Array(await readFile(join(dest, "assets/logo.bin"))), logo);
      assert.equal(
        await readFile(join(dest, "assets/deep/note.txt"), "utf8"),
        "x".repeat(10_000),
      );
      assert.deepEqual(await readdir(parent), ["project"], "no staging folder is left");
    });

    it("takes another composition entry, a ./ prefix and an existing empty folder", async () => {
      await mkdir(dest);
      const zip = zipOf({
        "./scenes/intro.html": page('data-width="1080" data-height="1920" data-duration="2"'),
      });
      const project = await extractProjectZip(zip, dest, { composition: "scenes/intro.html" });
      assert.equal(project.composition.width, 1080);
      assert.equal(project.composition.height, 1920);
      assert.equal(project.composition.aspectRatio, "9:16");
      assert.equal(project.composition.file, join(dest, "scenes", "intro.html"));
      assert.ok((await readFile(join(dest, "scenes/intro.html"), "utf8")).includes("promo"));
    });

    it("reads zip64 archives", async () => {
      const zip = zip64Of({ "index.html": page(), "data/a.txt": "alpha" });
      const project = await extractProjectZip(zip, dest);
      assert.equal(project.composition.id, "promo");
      assert.equal(await readFile(join(dest, "data/a.txt"), "utf8"), "alpha");
    });

    it("reads backslash separators as folders", async () => {
      const zip = zipOf({ "index.html": page(), "assets\\logo.txt": "logo" });
      await extractProjectZip(zip, dest);
      assert.equal(await readFile(join(dest, "assets", "logo.txt"), "utf8"), "logo");
    });

    it("refuses a destination that already holds files, with a plain Error", async () => {
      await mkdir(dest);
      await writeFile(join(dest, "keep.txt"), "mine");
      await assert.rejects(
        extractProjectZip(zipOf({ "index.html": page() }), dest),
        (error: Error) =>
          !(error instanceof ProjectZipError) && /already holds files/.test(error.message),
      );
      assert.equal(await readFile(join(dest, "keep.txt"), "utf8"), "mine");
    });
  });

  describe("not a zip or corrupt", () => {
    it("refuses bytes that are not a zip", async () => {
      await refused(strToU8("<!doctype html><p>hi</p>"), "zip", /not a zip archive/);
      await refused(new Uint8Array(0), "zip", /not a zip archive/);
    });

    it("refuses a truncated zip", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "a" });
      await refused(zip.subarray(0, zip.length - 30), "zip", /not a zip archive|corrupt/);
      const eocdOnly = zip.subarray(zip.length - 22);
      await refused(eocdOnly, "zip", /corrupt: its central directory lies outside/);
    });

    it("refuses an entry whose data is damaged", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "a".repeat(2000) });
      const broken = zip.slice();
      broken[dataOffset(zip, "a.txt")] = 0xff;
      await refused(broken, "a.txt", /corrupt: entry "a\.txt" (does not inflate|holds|inflates)/);
    });

    it("refuses an entry whose CRC does not match, after earlier files were written", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "first", "z.txt": "last" });
      const broken = patchCentral(zip, "z.txt", 16, 0x12345678, 4);
      await refused(broken, "z.txt", /corrupt: entry "z\.txt" fails its CRC-32 check/);
    });

    it("refuses entries that share data", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "a" });
      const view = new DataView(zip.buffer);
      const indexLocal = view.getUint32(centralRecords(zip).get("index.html")! + 42, true);
      const shared = patchCentral(zip, "a.txt", 42, indexLocal, 4);
      await refused(shared, "a.txt", /corrupt: entries "index\.html" and "a\.txt" overlap/);
    });

    it("refuses encrypted entries and unsupported compression", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "a" });
      await refused(patchCentral(zip, "a.txt", 8, 1, 2), "a.txt", /"a\.txt" is encrypted/);
      await refused(
        patchCentral(zip, "a.txt", 10, 12, 2),
        "a.txt",
        /compression method 12 \(bzip2\).*Deflate/,
      );
    });
  });

  describe("paths", () => {
    it("refuses absolute paths", async () => {
      await refused(
        zipOf({ "index.html": page(), "/etc/cron.d/x": "x" }),
        "/etc/cron.d/x",
        /"\/etc\/cron\.d\/x" is an absolute path.*relative/,
      );
      await refused(
        zipOf({ "index.html": page(), "C:/Windows/x.txt": "x" }),
        "C:/Windows/x.txt",
        /absolute path/,
      );
      await refused(
        zipOf({ "index.html": page(), "\\\\server\\share\\x.txt": "x" }),
        "\\\\server\\share\\x.txt",
        /absolute path \(backslashes count as folder separators\)/,
      );
    });

    it("refuses any .. segment, with slashes or backslashes", async () => {
      await refused(
        zipOf({ "index.html": page(), "../evil.txt": "x" }),
        "../evil.txt",
        /"\.\.\/evil\.txt" has a "\.\." segment and would be written outside/,
      );
      await refused(
        zipOf({ "index.html": page(), "assets/../../evil.txt": "x" }),
        "assets/../../evil.txt",
        /"\.\." segment/,
      );
      await refused(
        zipOf({ "index.html": page(), "..\\..\\evil.txt": "x" }),
        "..\\..\\evil.txt",
        /"\.\." segment \(backslashes count as folder separators\)/,
      );
    });

    it("refuses a .. name crafted into the central directory", async () => {
      // Same length as "../a.txt" so only the name bytes change.
      const zip = renameEntry(
        zipOf({ "index.html": page(), "xx/a.txt": "x" }),
        "xx/a.txt",
        "../a.txt",
      );
      await refused(zip, "../a.txt", /"\.\." segment/);
    });

    it("refuses a bad composition option the same way", async () => {
      const zip = zipOf({ "index.html": page() });
      await refused(zip, "../index.html", /composition entry "\.\.\/index\.html" has a "\.\."/, {
        composition: "../index.html",
      });
    });
  });

  describe("symlinks", () => {
    it("refuses an entry whose external attributes mark a symlink", async () => {
      const zip = zipOf({ "index.html": page(), "link": "/etc/passwd" });
      const withMode = patchCentral(zip, "link", 38, (0o120777 << 16) >>> 0, 4);
      const symlink = patchCentral(withMode, "link", 4, (3 << 8) | 20, 2);
      await refused(
        symlink,
        "link",
        /"link" is a symbolic link \(made on Unix\).*file it points to/,
      );
    });

    it("accepts regular files with Unix modes", async () => {
      const zip = zipSync({
        "index.html": [strToU8(page()), { os: 3, attrs: (0o100644 << 16) >>> 0 }],
        "run.sh": [strToU8("#!/bin/sh\n"), { os: 3, attrs: (0o100755 << 16) >>> 0 }],
      });
      const project = await extractProjectZip(zip, dest);
      assert.equal(project.entries, 2);
    });
  });

  describe("limits", () => {
    it("refuses more entries than maxEntries", async () => {
      const files: Record<string, string> = { "index.html": page() };
      for (let i = 0; i < 5; i++) files[`f${i}.txt`] = String(i);
      await refused(zipOf(files), "zip", /the zip has 6 entries, over the limit of 5/, {
        limits: { maxEntries: 5 },
      });
      await extractProjectZip(zipOf(files), dest, { limits: { maxEntries: 6 } });
    });

    it("refuses a declared expanded size over the limit before inflating anything", async () => {
      const zip = zipOf({ "index.html": page(), "big.txt": "a".repeat(50_000) });
      // Garbage deflate data: were it inflated, the error would be "corrupt" instead.
      const broken = zip.slice();
      broken.fill(0xff, dataOffset(zip, "big.txt"), dataOffset(zip, "big.txt") + 8);
      await refused(
        broken,
        "zip",
        /files expand to [\d.]+ KiB \(\d+ bytes\), over the limit of 10 KiB \(10240 bytes\)/,
        {
          limits: { maxExpandedBytes: 10 * 1024 },
        },
      );
    });

    it("stops inflating once the actual bytes pass the limit, whatever the zip declares", async () => {
      const zip = zipOf({ "index.html": page(), "bomb.txt": "a".repeat(200_000) });
      const lying = patchCentral(zip, "bomb.txt", 24, 10, 4);
      await refused(
        lying,
        "bomb.txt",
        /expand to more than the limit of 10 KiB.*found while inflating "bomb\.txt"/,
        {
          limits: { maxExpandedBytes: 10 * 1024 },
        },
      );
    });

    it("refuses an entry that inflates past its declared size", async () => {
      const zip = zipOf({ "index.html": page(), "a.txt": "a".repeat(5000) });
      const lying = patchCentral(zip, "a.txt", 24, 100, 4);
      await refused(lying, "a.txt", /corrupt: entry "a\.txt" inflates to more than the 100 bytes/);
    });
  });

  describe("duplicates", () => {
    it("refuses two entries with the same name", async () => {
      const zip = renameEntry(
        zipOf({ "index.html": page(), "a.txt": "1", "b.txt": "2" }),
        "b.txt",
        "a.txt",
      );
      await refused(zip, "a.txt", /"a\.txt" appears twice in the zip;/);
    });

    it("refuses names that differ only in case", async () => {
      await refused(
        zipOf({ "index.html": page(), "Logo.png": "1", "logo.png": "2" }),
        "logo.png",
        /"logo\.png" appears twice in the zip \("Logo\.png" differs only in case\)/,
      );
    });

    it("refuses a path that is both a file and a folder", async () => {
      await refused(
        zipOf({ "index.html": page(), "assets": "file", "assets/x.txt": "x" }),
        "assets",
        /"assets" is a file but "assets\/x\.txt" needs it to be a folder/,
      );
    });
  });

  describe("the composition entry", () => {
    it("is refused when missing, listing the HTML files there are", async () => {
      const error = await refused(
        zipOf({ "site/index.html": page(), "about.html": "<p>", "a.txt": "a" }),
        "index.html",
        /composition entry "index\.html" is not in the zip; the zip has "site\/index\.html", "about\.html"; set composition/,
      );
      assert.doesNotMatch(error.message, /a\.txt/);
      await refused(zipOf({ "a.txt": "a" }), "index.html", /the zip has no \.html files/);
    });

    it("is refused when it is not a valid composition, without the server path", async () => {
      const error = await refused(
        zipOf({ "index.html": page('data-height="1080" data-duration="5"') }),
        "index.html",
        /composition entry "index\.html" is not a valid composition: the composition root has no data-width attribute/,
      );
      assert.ok(error.cause instanceof CompositionError);
      assert.ok(!error.message.includes(parent), error.message);
    });
  });
});

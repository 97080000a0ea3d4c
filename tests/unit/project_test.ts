/**
 * Tests for project packaging: the upload exclusions (built-in and from
 * `.hyperframesignore` / `.vidignore`), the deterministic zip and its content address,
 * symlink handling, the composition entry checks and the size limit.
 */

import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { unzipSync } from "fflate";
import { IgnoreRulesError, projectFilter, projectRules } from "../../src/project/ignore_rules.ts";
import {
  HOSTED_UPLOAD_LIMIT_BYTES,
  packageProject,
  ProjectPackageError,
} from "../../src/project/package.ts";
import { CLOUD_MAX_UPLOAD_BYTES } from "../../src/cloud/render.ts";
import { MAX_UPLOAD_BYTES } from "../../src/server/context.ts";

const temps: string[] = [];

after(async () => {
  await Promise.all(temps.map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A fresh temp folder holding `files` (path -> content). */
async function project(files: Record<string, string | Uint8Array>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "vid-project-"));
  temps.push(dir);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  return dir;
}

const INDEX = '<div data-composition-id="p" data-width="320" data-height="180" ' +
  'data-duration="1"></div>';

/** The zip's entries decoded as text. */
function unzipText(zip: Uint8Array): Record<string, string> {
  const decoder = new TextDecoder();
  return Object.fromEntries(
    Object.entries(unzipSync(zip)).map(([name, bytes]) => [name, decoder.decode(bytes)]),
  );
}

/** Entry names in the order they appear in the zip's central directory. */
function centralDirectoryNames(zip: Uint8Array): string[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const end = zip.length - 22;
  assert.equal(view.getUint32(end, true), 0x06054b50);
  const count = view.getUint16(end + 10, true);
  let p = view.getUint32(end + 16, true);
  const names: string[] = [];
  for (let i = 0; i < count; i++) {
    assert.equal(view.getUint32(p, true), 0x02014b50);
    const nameLength = view.getUint16(p + 28, true);
    const extraLength = view.getUint16(p + 30, true);
    const commentLength = view.getUint16(p + 32, true);
    names.push(new TextDecoder().decode(zip.subarray(p + 46, p + 46 + nameLength)));
    p += 46 + nameLength + extraLength + commentLength;
  }
  return names;
}

describe("projectFilter: built-in exclusions", () => {
  it("excludes renders/ and snapshots/ only at the project root", async () => {
    const include = await projectFilter(await project({}));
    assert.equal(include("renders", true), false);
    assert.equal(include("renders/out.mp4", false), false);
    assert.equal(include("snapshots", true), false);
    assert.equal(include("snapshots/a/b.png", false), false);
    assert.equal(include("scenes/renders", true), true);
    assert.equal(include("scenes/renders/clip.mp4", false), true);
    assert.equal(include("scenes/snapshots/s.png", false), true);
    // A file that happens to be named like the folder is not the folder.
    assert.equal(include("renders", false), true);
  });

  it("excludes .git, node_modules, dist, .next and coverage at any depth", async () => {
    const include = await projectFilter(await project({}));
    for (const name of [".git", "node_modules", "dist", ".next", "coverage"]) {
      assert.equal(include(name, true), false, name);
      assert.equal(include(`${name}/x.js`, false), false, name);
      assert.equal(include(`a/b/${name}`, true), false, name);
      assert.equal(include(`a/b/${name}/c/d.js`, false), false, name);
    }
    assert.equal(include("distant/x.js", false), true);
    assert.equal(include("assets/dist.css", false), true);
  });

  it("excludes dotfiles and dot-folders at any depth", async () => {
    const include = await projectFilter(await project({}));
    assert.equal(include(".env", false), false);
    assert.equal(include(".DS_Store", false), false);
    assert.equal(include("assets/.DS_Store", false), false);
    assert.equal(include(".cache", true), false);
    assert.equal(include(".cache/x.png", false), false);
    assert.equal(include("a/.hidden/b.png", false), false);
    assert.equal(include(".vidignore", false), false);
    assert.equal(include(".hyperframesignore", false), false);
    assert.equal(include("assets/logo.v2.png", false), true);
  });

  it("normalizes ./ and trailing slashes, and never includes paths outside", async () => {
    const rules = await projectRules(await project({}));
    assert.equal(rules.includes("./index.html", false), true);
    assert.equal(rules.includes("renders/", true), false);
    assert.equal(rules.includes("", true), true);
    assert.equal(rules.includes("../secret.txt", false), false);
    assert.equal(rules.includes("a/../../x", false), false);
    assert.equal(rules.includes("/etc/passwd", false), false);
    assert.equal(rules.exclusionReason("renders/x.mp4", false), 'root-level "renders/"');
    assert.equal(rules.exclusionReason("a/node_modules/x", false), '"node_modules/" folder');
    assert.equal(rules.exclusionReason("a/.env", false), 'dotfile ".env"');
    assert.deepEqual(rules.sources, []);
  });
});

describe("projectFilter: .hyperframesignore and .vidignore", () => {
  it("applies patterns from .hyperframesignore", async () => {
    const dir = await project({
      ".hyperframesignore": "# drafts\n*.psd\nraw/\n/top.txt\n",
    });
    const include = await projectFilter(dir);
    assert.equal(include("art/cover.psd", false), false);
    assert.equal(include("raw", true), false);
    assert.equal(include("raw/take1.wav", false), false);
    assert.equal(include("scenes/raw/take1.wav", false), false);
    // A directory pattern does not match a file of that name.
    assert.equal(include("raw", false), true);
    // An anchored pattern matches only at the root.
    assert.equal(include("top.txt", false), false);
    assert.equal(include("sub/top.txt", false), true);
    assert.equal(include("art/cover.png", false), true);
  });

  it("applies patterns from .vidignore, with negation", async () => {
    const dir = await project({
      ".vidignore": "media/*.mov\n!media/keep.mov\n",
    });
    const rules = await projectRules(dir);
    assert.equal(rules.includes("media/a.mov", false), false);
    assert.equal(rules.includes("media/keep.mov", false), true);
    assert.equal(rules.includes("media/a.mp4", false), true);
    assert.equal(rules.exclusionReason("media/a.mov", false), '.vidignore line 1 "media/*.mov"');
  });

  it("reads both files, .hyperframesignore first, so .vidignore can re-include", async () => {
    const dir = await project({
      ".hyperframesignore": "*.wav\nbig/\n",
      ".vidignore": "!voice.wav\n*.tmp\n",
    });
    const rules = await projectRules(dir);
    assert.deepEqual(rules.sources, [".hyperframesignore", ".vidignore"]);
    assert.equal(rules.includes("music.wav", false), false);
    assert.equal(rules.includes("voice.wav", false), true);
    assert.equal(rules.includes("x.tmp", false), false);
    assert.equal(rules.includes("big/a.png", false), false);
  });

  it("cannot re-include a file inside an excluded folder (as in git)", async () => {
    const include = await projectFilter(await project({ ".vidignore": "big/\n!big/keep.png\n" }));
    assert.equal(include("big/keep.png", false), false);
  });

  it("cannot re-include the built-in exclusions", async () => {
    const dir = await project({
      ".vidignore": "!renders/\n!renders/**\n!node_modules/\n!.env\n!dist\n",
    });
    const include = await projectFilter(dir);
    assert.equal(include("renders/out.mp4", false), false);
    assert.equal(include("node_modules/x/index.js", false), false);
    assert.equal(include(".env", false), false);
    assert.equal(include("dist", true), false);
  });

  it("matches case-sensitively", async () => {
    const include = await projectFilter(await project({ ".vidignore": "Drafts/\n" }));
    assert.equal(include("Drafts/a.png", false), false);
    assert.equal(include("drafts/a.png", false), true);
  });

  it("ignores ignore files below the root", async () => {
    const include = await projectFilter(await project({ "sub/.vidignore": "*.png\n" }));
    assert.equal(include("sub/a.png", false), true);
  });

  it("reports an unreadable ignore file as IgnoreRulesError naming it", async () => {
    const dir = await project({});
    await mkdir(join(dir, ".vidignore"));
    await assert.rejects(
      projectFilter(dir),
      (error: unknown) =>
        error instanceof IgnoreRulesError && error.field === ".vidignore" &&
        error.message.includes(".vidignore"),
    );
  });
});

describe("packageProject", () => {
  /** A project exercising every exclusion rule. */
  function fullTree(): Record<string, string> {
    return {
      "index.html": INDEX,
      "assets/logo.svg": "<svg/>",
      "assets/clip.mp4": "not really a video",
      "scenes/renders/kept.txt": "nested renders/ is kept",
      "renders/out.mp4": "previous output",
      "snapshots/s.png": "snapshot",
      "node_modules/pkg/index.js": "module",
      "lib/node_modules/pkg/index.js": "module",
      "lib/util.js": "export {}",
      "dist/bundle.js": "bundle",
      "coverage/lcov.info": "lcov",
      ".next/cache": "next",
      ".git/HEAD": "ref",
      ".env": "SECRET=1",
      "assets/.DS_Store": "junk",
      "drafts/a.psd": "psd",
      "drafts/keep.psd": "psd keep",
      "notes.tmp": "tmp",
      ".hyperframesignore": "*.psd\n",
      ".vidignore": "!drafts/keep.psd\n*.tmp\n",
    };
  }

  it("zips exactly the included files, sorted, with their contents", async () => {
    const tree = fullTree();
    const pkg = await packageProject(await project(tree));
    const expected = [
      "assets/clip.mp4",
      "assets/logo.svg",
      "drafts/keep.psd",
      "index.html",
      "lib/util.js",
      "scenes/renders/kept.txt",
    ];
    assert.deepEqual(pkg.files.map((f) => f.path), expected);
    assert.deepEqual(centralDirectoryNames(pkg.zip), expected);
    const unzipped = unzipText(pkg.zip);
    assert.deepEqual(Object.keys(unzipped).sort(), expected);
    for (const path of expected) assert.equal(unzipped[path], tree[path], path);
    assert.equal(pkg.fileCount, expected.length);
    assert.equal(
      pkg.uncompressedBytes,
      expected.reduce((sum, path) => sum + new TextEncoder().encode(tree[path]).length, 0),
    );
    assert.equal(pkg.compressedBytes, pkg.zip.length);
    assert.equal(pkg.entry, "index.html");
    assert.deepEqual(pkg.warnings, []);
    assert.match(pkg.sha256, /^[0-9a-f]{64}$/);
    assert.equal(pkg.siteId, `site-${pkg.sha256.slice(0, 16)}`);
  });

  it("sorts by path in code-unit order, including numeric root names", async () => {
    const pkg = await packageProject(
      await project({ "index.html": INDEX, "10": "a", "2": "b", "a-b": "c", "a/c": "d" }),
    );
    const expected = ["10", "2", "a-b", "a/c", "index.html"];
    assert.deepEqual(pkg.files.map((f) => f.path), expected);
    assert.deepEqual(centralDirectoryNames(pkg.zip), expected);
  });

  it("is byte-identical for the same tree, even after touching mtimes", async () => {
    const dir = await project(fullTree());
    const first = await packageProject(dir);
    const later = new Date(Date.now() + 3_600_000);
    for (const path of ["index.html", "assets/logo.svg", "lib/util.js"]) {
      await utimes(join(dir, path), later, later);
    }
    const second = await packageProject(dir);
    assert.deepEqual(second.zip, first.zip);
    assert.equal(second.sha256, first.sha256);
    assert.equal(second.siteId, first.siteId);

    // The same tree in another folder packages identically too.
    const copy = await packageProject(await project(fullTree()));
    assert.equal(copy.sha256, first.sha256);
  });

  it("changes sha256 and siteId when a file's content changes", async () => {
    const dir = await project(fullTree());
    const before = await packageProject(dir);
    await writeFile(join(dir, "lib/util.js"), "export {};");
    const after = await packageProject(dir);
    assert.notEqual(after.sha256, before.sha256);
    assert.notEqual(after.siteId, before.siteId);
  });

  it("does not change when an excluded file changes", async () => {
    const dir = await project(fullTree());
    const before = await packageProject(dir);
    await writeFile(join(dir, "renders/out.mp4"), "a new render");
    await writeFile(join(dir, ".env"), "SECRET=2");
    assert.equal((await packageProject(dir)).sha256, before.sha256);
  });

  it("reports the ten largest files by size, then path", async () => {
    // The entry is smaller than every file that makes the ten.
    const files: Record<string, string> = { "index.html": "<p>" };
    for (let i = 0; i < 12; i++) {
      files[`media/f${String(i).padStart(2, "0")}.bin`] = "x".repeat(i * 10);
    }
    files["media/tie-b.bin"] = "y".repeat(110);
    files["media/tie-a.bin"] = "z".repeat(110);
    const pkg = await packageProject(await project(files));
    assert.deepEqual(pkg.largest.map((f) => [f.path, f.size]), [
      ["media/f11.bin", 110],
      ["media/tie-a.bin", 110],
      ["media/tie-b.bin", 110],
      ["media/f10.bin", 100],
      ["media/f09.bin", 90],
      ["media/f08.bin", 80],
      ["media/f07.bin", 70],
      ["media/f06.bin", 60],
      ["media/f05.bin", 50],
      ["media/f04.bin", 40],
    ]);
  });

  it("stores a symlink to a file inside the project as that file's content", async () => {
    const dir = await project({ "index.html": INDEX, "assets/real.svg": "<svg id=real/>" });
    await symlink(join(dir, "assets/real.svg"), join(dir, "logo.svg"));
    await symlink("real.svg", join(dir, "assets/relative.svg"));
    const pkg = await packageProject(dir);
    const unzipped = unzipText(pkg.zip);
    assert.equal(unzipped["logo.svg"], "<svg id=real/>");
    assert.equal(unzipped["assets/relative.svg"], "<svg id=real/>");
    assert.deepEqual(pkg.warnings, []);
  });

  it("skips symlinks pointing outside, broken, to excluded files or to folders", async () => {
    const outside = await project({ "secret.txt": "outside" });
    const dir = await project({
      "index.html": INDEX,
      ".env": "SECRET=1",
      "assets/a.svg": "<svg/>",
    });
    await symlink(join(outside, "secret.txt"), join(dir, "leak.txt"));
    await symlink(join(dir, "missing.txt"), join(dir, "broken.txt"));
    await symlink(join(dir, ".env"), join(dir, "env.txt"));
    await symlink(join(dir, "assets"), join(dir, "assets-link"));
    await symlink(outside, join(dir, "outside-folder"));
    const pkg = await packageProject(dir);
    assert.deepEqual(pkg.files.map((f) => f.path), ["assets/a.svg", "index.html"]);
    const text = pkg.warnings.join("\n");
    assert.match(text, /leak\.txt: symlink points outside the project/);
    assert.match(text, /broken\.txt: broken symlink/);
    assert.match(text, /env\.txt: symlink to \.env, which the upload rules exclude/);
    assert.match(text, /assets-link: symlink to the folder assets\/ is not followed/);
    assert.match(text, /outside-folder: symlink points outside the project/);
    assert.equal(pkg.warnings.length, 5);
    assert.ok(!Object.values(unzipText(pkg.zip)).includes("outside"));
  });

  it("packages a composition entry other than index.html", async () => {
    const dir = await project({ "scenes/intro.html": INDEX, "a.txt": "a" });
    const pkg = await packageProject(dir, { composition: "scenes/intro.html" });
    assert.equal(pkg.entry, "scenes/intro.html");
    const absolute = await packageProject(dir, { composition: join(dir, "scenes/intro.html") });
    assert.equal(absolute.entry, "scenes/intro.html");
    assert.equal(absolute.sha256, pkg.sha256);
  });

  it("fails naming a missing composition entry", async () => {
    const dir = await project({ "main.html": INDEX });
    await assert.rejects(
      packageProject(dir),
      (error: unknown) =>
        error instanceof ProjectPackageError && error.field === "composition" &&
        error.message.includes("index.html") && error.message.includes("not found"),
    );
  });

  it("fails naming an excluded composition entry and the rule", async () => {
    const dir = await project({ "renders/index.html": INDEX, "draft.html": INDEX });
    await assert.rejects(
      packageProject(dir, { composition: "renders/index.html" }),
      (error: unknown) =>
        error instanceof ProjectPackageError && error.field === "composition" &&
        error.message.includes("renders/index.html") && error.message.includes("excluded") &&
        error.message.includes('root-level "renders/"'),
    );
    await writeFile(join(dir, ".vidignore"), "draft.html\n");
    await assert.rejects(
      packageProject(dir, { composition: "draft.html" }),
      (error: unknown) =>
        error instanceof ProjectPackageError && error.field === "composition" &&
        error.message.includes('.vidignore line 1 "draft.html"'),
    );
  });

  it("fails on an entry outside the project and on a missing project directory", async () => {
    const dir = await project({ "index.html": INDEX });
    await assert.rejects(
      packageProject(dir, { composition: "../index.html" }),
      (error: unknown) => error instanceof ProjectPackageError && error.field === "composition",
    );
    await assert.rejects(
      packageProject(join(dir, "nope")),
      (error: unknown) => error instanceof ProjectPackageError && error.field === "projectDir",
    );
  });

  it("fails over maxBytes naming the limit and the ten largest files", async () => {
    const files: Record<string, Uint8Array | string> = { "index.html": INDEX };
    // Random bytes do not deflate, so the zip is at least their size.
    for (let i = 0; i < 12; i++) {
      files[`media/clip${String(i).padStart(2, "0")}.bin`] = crypto.getRandomValues(
        new Uint8Array(1000 + i * 100),
      );
    }
    const dir = await project(files);
    const pkg = await packageProject(dir, { maxBytes: 100_000 });
    assert.ok(pkg.compressedBytes > 15_000);
    await assert.rejects(
      packageProject(dir, { maxBytes: 10_000 }),
      (error: unknown) => {
        assert.ok(error instanceof ProjectPackageError);
        assert.equal(error.field, "maxBytes");
        assert.match(error.message, /10000 bytes/);
        assert.match(error.message, /ten largest/);
        for (let i = 2; i < 12; i++) {
          assert.ok(error.message.includes(`media/clip${String(i).padStart(2, "0")}.bin`));
        }
        assert.ok(!error.message.includes("media/clip01.bin"));
        assert.deepEqual(error.largest?.map((f) => f.path)[0], "media/clip11.bin");
        assert.equal(error.largest?.length, 10);
        return true;
      },
    );
  });

  it("stores the fixed timestamp and attributes in every entry", async () => {
    const pkg = await packageProject(await project({ "index.html": INDEX, "a.png": "png" }));
    const view = new DataView(pkg.zip.buffer, pkg.zip.byteOffset, pkg.zip.byteLength);
    let p = view.getUint32(pkg.zip.length - 22 + 16, true);
    for (let i = 0; i < 2; i++) {
      // DOS date 1980-01-01 (0x0021), time 00:00.
      assert.equal(view.getUint16(p + 12, true), 0);
      assert.equal(view.getUint16(p + 14, true), 0x21);
      assert.equal(view.getUint32(p + 38, true) >>> 16, 0o100644);
      const method = view.getUint16(p + 10, true);
      const name = new TextDecoder().decode(
        pkg.zip.subarray(p + 46, p + 46 + view.getUint16(p + 28, true)),
      );
      // Already-compressed formats are stored, the rest deflated.
      assert.equal(method, name === "a.png" ? 0 : 8, name);
      p += 46 + view.getUint16(p + 28, true) + view.getUint16(p + 30, true) +
        view.getUint16(p + 32, true);
    }
  });
});

describe("the 200 MB upload limit", () => {
  it("is one figure: the packager's, the cloud client's and the server's (200 x 1024 x 1024)", () => {
    assert.equal(HOSTED_UPLOAD_LIMIT_BYTES, 209_715_200);
    assert.equal(CLOUD_MAX_UPLOAD_BYTES, HOSTED_UPLOAD_LIMIT_BYTES);
    assert.equal(MAX_UPLOAD_BYTES, HOSTED_UPLOAD_LIMIT_BYTES);
  });
});

describe("the guide on ignore rules", () => {
  it("discourages broad patterns, since media chosen by a variable may be excluded (spec)", async () => {
    for (const page of ["docs/server.md", "docs/lambda.md"]) {
      const text = await Deno.readTextFile(new URL(`../../${page}`, import.meta.url));
      assert.match(text, /narrow/, page);
      assert.match(text, /whole assets directory/, page);
    }
  });
});

describe("packageProject keepContents", () => {
  it("returns the bytes it zipped, by path, so deploySite uploads them without unzipping", async () => {
    const dir = await project({ "index.html": INDEX, "assets/a.txt": "alpha", ".hidden": "x" });
    const pkg = await packageProject(dir, { keepContents: true });
    const contents = pkg.contents!;
    assert.deepEqual(Object.keys(contents).sort(), ["assets/a.txt", "index.html"]);
    const decoder = new TextDecoder();
    assert.deepEqual(
      Object.fromEntries(Object.entries(contents).map(([p, b]) => [p, decoder.decode(b)])),
      unzipText(pkg.zip),
    );
    assert.equal((await packageProject(dir)).contents, undefined, "not kept by default");
  });
});

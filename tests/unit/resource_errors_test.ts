/**
 * The page runtime's table of vendored libraries (src/runtime/resource_errors.ts), which names
 * the `vid add` fix for a script that did not load: it must say what `vid add` really copies
 * (src/init/vendor.ts), and recognise the URLs CDNs give those files. The failure itself, with
 * real Chromium, is in tests/integration/hyperframes_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { VENDORED_LIBRARIES } from "../../src/runtime/resource_errors.ts";
import { LIBRARIES, type LibraryName } from "../../src/init/vendor.ts";

const libraryOf = (path: string): string | undefined =>
  VENDORED_LIBRARIES.find((l) => l.pattern.test(path))?.name;

describe("vendored libraries of a failed script", () => {
  it("name vid add's libraries and the file it puts in the project", () => {
    for (const library of VENDORED_LIBRARIES) {
      const vendored = LIBRARIES[library.name as LibraryName];
      assert.ok(vendored, `${library.name} is a vid add library`);
      assert.ok(
        vendored.files.some((f) => f.to === library.file),
        `${library.name}: vid add writes ${library.file}`,
      );
    }
  });

  it("recognise the CDN paths of their files, and no other script", () => {
    assert.equal(libraryOf("/npm/gsap@3.14.2/dist/gsap.min.js"), "gsap");
    assert.equal(libraryOf("/ajax/libs/gsap/3.12.5/gsap.min.js"), "gsap");
    assert.equal(libraryOf("/gsap@3/dist/ScrollTrigger.min.js"), "gsap");
    assert.equal(libraryOf("/npm/lottie-web@5.12.2/build/player/lottie.min.js"), "lottie");
    assert.equal(libraryOf("/npm/three@0.160.0/build/three.module.js"), "three");
    assert.equal(libraryOf("/js/scene.js"), undefined);
    assert.equal(libraryOf("/npm/gsapish@1/x.js"), undefined);
  });
});

/**
 * The project's images for the studio's image picker (`GET /__preview/images`).
 *
 * @module
 */

import { readdir } from "node:fs/promises";
import { extname, join } from "node:path";

/** Extensions the studio's image picker offers. */
const IMAGE_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".avif"]);
/** Most images the picker lists. */
const MAX_PICKER_IMAGES = 200;

/**
 * The project's image files as project paths (`img/logo.png`), sorted, for the studio's
 * image picker: hidden folders, `node_modules` and `renders` left out, at most
 * {@linkcode MAX_PICKER_IMAGES}.
 */
export async function projectImages(projectDir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (depth > 6 || found.length >= MAX_PICKER_IMAGES) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        if (path !== "renders") await walk(join(dir, entry.name), `${path}/`, depth + 1);
      } else if (entry.isFile() && IMAGE_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
        if (found.length < MAX_PICKER_IMAGES) found.push(path);
      }
    }
  };
  await walk(projectDir, "", 0);
  return found;
}

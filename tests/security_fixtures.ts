/**
 * Test helper: what the server's security tests send and check, shared by the attacks that
 * assert no time (tests/integration/security_server_test.ts, run in parallel with other
 * files) and the ones that time the server's answers and deadlines
 * (tests/integration/security_server_deadlines_test.ts, run alone): a one-colour
 * composition, project zips (also hand-built ones that declare what they like), and whether
 * a process group still runs.
 *
 * @module
 */

import { crc32 } from "node:zlib";
import { zipSync } from "fflate";
import { compositionHtml, waitFor } from "./helpers.ts";

const encoder = new TextEncoder();

/** A composition of `duration` seconds at 320x180 (the server renders it at 1080p). */
export function page(duration = 1, id = "sec"): string {
  return compositionHtml(
    `<div style="position:absolute;inset:0;background:rgb(0,0,255)"></div>`,
    { id, duration },
  );
}

/** A project zip holding `html` as its index.html. */
export function projectZip(html: string = page()): Uint8Array<ArrayBuffer> {
  return new Uint8Array(zipSync({ "index.html": encoder.encode(html) }));
}

/** One entry of a hand-built zip; sizes are what the headers declare. */
export interface RawEntry {
  name: string;
  method: 0 | 8;
  data: Uint8Array;
  crc: number;
  uncompressedSize: number;
}

/** A zip written byte by byte, so tests can declare what they like. */
export function rawZip(entries: RawEntry[]): Uint8Array<ArrayBuffer> {
  const locals: Uint8Array[] = [];
  const centrals: Uint8Array[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = encoder.encode(entry.name);
    const local = new DataView(new ArrayBuffer(30));
    local.setUint32(0, 0x04034b50, true);
    local.setUint16(4, 20, true);
    local.setUint16(8, entry.method, true);
    local.setUint16(12, 0x21, true);
    local.setUint32(14, entry.crc, true);
    local.setUint32(18, entry.data.length, true);
    local.setUint32(22, entry.uncompressedSize, true);
    local.setUint16(26, name.length, true);
    locals.push(new Uint8Array(local.buffer), name, entry.data);
    const central = new DataView(new ArrayBuffer(46));
    central.setUint32(0, 0x02014b50, true);
    central.setUint16(4, 20, true);
    central.setUint16(6, 20, true);
    central.setUint16(10, entry.method, true);
    central.setUint16(14, 0x21, true);
    central.setUint32(16, entry.crc, true);
    central.setUint32(20, entry.data.length, true);
    central.setUint32(24, entry.uncompressedSize, true);
    central.setUint16(28, name.length, true);
    central.setUint32(42, offset, true);
    centrals.push(new Uint8Array(central.buffer), name);
    offset += 30 + name.length + entry.data.length;
  }
  const centralSize = centrals.reduce((sum, part) => sum + part.length, 0);
  const end = new DataView(new ArrayBuffer(22));
  end.setUint32(0, 0x06054b50, true);
  end.setUint16(8, entries.length, true);
  end.setUint16(10, entries.length, true);
  end.setUint32(12, centralSize, true);
  end.setUint32(16, offset, true);
  const parts = [...locals, ...centrals, new Uint8Array(end.buffer)];
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A stored (uncompressed) entry holding `text`. */
export function storedEntry(name: string, text: string): RawEntry {
  const data = encoder.encode(text);
  return { name, method: 0, data, crc: crc32(data), uncompressedSize: data.length };
}

/**
 * Whether any process of group `pgid` is alive. A zombie does not count: a killed browser's
 * helpers are re-parented to init, which reaps them when it gets to it (late on a loaded
 * host), and `kill(-pgid, 0)` still finds the group until then.
 */
export function groupAlive(pgid: number): boolean {
  return groupMembers([pgid]).some((member) => member.state !== "Z");
}

/** Waits until `check` holds, for `ms` at most (both security files' polling). */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  ms = 60000,
): Promise<void> {
  await waitFor(what, check, { timeoutMs: ms });
}

/** One process of a group, as `/proc/<pid>/stat` gives it. */
export interface GroupMember {
  pid: number;
  state: string;
  comm: string;
  ppid: number;
}

/**
 * The processes of the groups `pgids`, zombies included (each with its state): what
 * {@linkcode groupAlive} reads, and what a failed wait for them to die names.
 */
export function groupMembers(pgids: readonly number[]): GroupMember[] {
  const members: GroupMember[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (pgids.includes(Number(pgrp))) {
      members.push({ pid: Number(entry.name), state, comm, ppid: Number(ppid) });
    }
  }
  return members;
}

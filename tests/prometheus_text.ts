/**
 * Test helper: a strict reader of the Prometheus text exposition format (0.0.4), so tests
 * of `GET /metrics` check what a real Prometheus would accept — names, label escaping,
 * `# HELP`/`# TYPE` before a family's samples, families kept together, histograms with
 * cumulative buckets ending in `+Inf` equal to `_count` — and then read values by name and
 * labels. It throws on the first line a scraper would reject, naming the line.
 *
 * @module
 */

/** One sample line. */
export interface Sample {
  /** The sample's own name (a histogram's `_bucket`, `_sum` or `_count` included). */
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A metric family: its `# TYPE`, `# HELP` and samples. */
export interface MetricFamily {
  name: string;
  type: "counter" | "gauge" | "histogram" | "summary" | "untyped";
  help: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text: string, where: string): number {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new Error(`${where}: "${text}" is not a number`);
  }
  return Number(text);
}

/** Reads `{a="x",b="y"}` from `text` at `start` (the `{`); returns the labels and the end. */
function parseLabels(
  text: string,
  start: number,
  where: string,
): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  while (true) {
    if (text[i] === "}") return { labels, end: i + 1 };
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new Error(`${where}: a label without "="`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`${where}: bad label name "${name}"`);
    if (name in labels) throw new Error(`${where}: label "${name}" given twice`);
    if (text[eq + 1] !== '"') throw new Error(`${where}: label ${name}'s value is not quoted`);
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new Error(`${where}: bad escape "\\${next}" in label ${name}`);
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) throw new Error(`${where}: label ${name}'s value is not closed`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") throw new Error(`${where}: expected "," or "}" after label ${name}`);
  }
}

/** The family a sample belongs to: a histogram's `_bucket`/`_sum`/`_count` to its base name. */
function familyOf(name: string, families: Map<string, MetricFamily>): MetricFamily | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  const family = families.get(base);
  return family && (family.type === "histogram" || family.type === "summary") ? family : undefined;
}

/** Checks one histogram's series: cumulative buckets, `+Inf` present and equal to `_count`. */
function checkHistogram(family: MetricFamily): void {
  const series = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (sample.name === `${family.name}_bucket`) {
      if (le === undefined) throw new Error(`${family.name}: a bucket without "le"`);
      entry.buckets.push([parseValue(le, family.name), sample.value]);
    } else if (sample.name === `${family.name}_sum`) entry.sum = sample.value;
    else if (sample.name === `${family.name}_count`) entry.count = sample.value;
    else throw new Error(`${family.name}: unexpected sample ${sample.name} in a histogram`);
  }
  for (const [key, { buckets, sum, count }] of series) {
    const at = `${family.name}${key}`;
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i][0] > buckets[i - 1][0])) throw new Error(`${at}: buckets out of order`);
      if (buckets[i][1] < buckets[i - 1][1]) throw new Error(`${at}: buckets not cumulative`);
    }
    const last = buckets[buckets.length - 1];
    if (!last || last[0] !== Infinity) throw new Error(`${at}: no le="+Inf" bucket`);
    if (sum === undefined || count === undefined) throw new Error(`${at}: no _sum or _count`);
    if (last[1] !== count) throw new Error(`${at}: +Inf bucket ${last[1]} != _count ${count}`);
  }
}

/**
 * Parses a `/metrics` body; throws naming the first line Prometheus would refuse.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const families = parsePrometheusText(
 *   '# HELP up Up.\n# TYPE up gauge\nup{job="vid"} 1\n',
 * );
 * assert.equal(families.get("up")?.samples[0].value, 1);
 * ```
 */
export function parsePrometheusText(text: string): Map<string, MetricFamily> {
  if (text !== "" && !text.endsWith("\n")) throw new Error("the body must end with a newline");
  const families = new Map<string, MetricFamily>();
  const finished = new Set<string>();
  let current: MetricFamily | undefined;
  text.split("\n").forEach((line, index) => {
    const where = `line ${index + 1}`;
    if (line.trim() === "") return;
    if (line.startsWith("#")) {
      const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!match) return; // a plain comment
      const [, kind, name, rest] = match;
      if (!METRIC_NAME.test(name)) throw new Error(`${where}: bad metric name "${name}"`);
      let family = families.get(name);
      if (!family) {
        if (finished.has(name)) throw new Error(`${where}: family ${name} is split`);
        family = { name, type: "untyped", help: "", samples: [] };
        families.set(name, family);
      }
      if (current && current !== family) finished.add(current.name);
      current = family;
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`${where}: unknown type "${rest}"`);
        if (family.samples.length > 0) throw new Error(`${where}: TYPE after ${name}'s samples`);
        family.type = rest as MetricFamily["type"];
      } else {
        family.help = rest.replaceAll("\\n", "\n").replaceAll("\\\\", "\\");
      }
      return;
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    if (!nameMatch) throw new Error(`${where}: no metric name in "${line}"`);
    const name = nameMatch[0];
    let labels: Record<string, string> = {};
    let rest = line.slice(name.length);
    if (rest.startsWith("{")) {
      const parsed = parseLabels(line, name.length, where);
      labels = parsed.labels;
      rest = line.slice(parsed.end);
    }
    const parts = rest.trim().split(/\s+/);
    if (!rest.startsWith(" ") || parts.length < 1 || parts.length > 2) {
      throw new Error(`${where}: expected "<name>{labels} <value> [timestamp]", got "${line}"`);
    }
    const family = familyOf(name, families) ??
      (() => {
        if (finished.has(name)) throw new Error(`${where}: family ${name} is split`);
        const untyped: MetricFamily = { name, type: "untyped", help: "", samples: [] };
        families.set(name, untyped);
        return untyped;
      })();
    if (current && current !== family) {
      finished.add(current.name);
      if (finished.has(family.name)) throw new Error(`${where}: family ${family.name} is split`);
    }
    current = family;
    family.samples.push({ name, labels, value: parseValue(parts[0], where) });
  });
  for (const family of families.values()) {
    if (family.type === "histogram") checkHistogram(family);
  }
  return families;
}

/**
 * The value of the sample named `name` whose labels include `labels`; throws when none or
 * more than one matches.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const families = parsePrometheusText('# TYPE a_total counter\na_total{s="x"} 2\n');
 * assert.equal(sampleValue(families, "a_total", { s: "x" }), 2);
 * ```
 */
export function sampleValue(
  families: Map<string, MetricFamily>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const family = familyOf(name, families);
  const matches = (family?.samples ?? []).filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  if (matches.length !== 1) {
    throw new Error(`${matches.length} samples of ${name}${JSON.stringify(labels)}`);
  }
  return matches[0].value;
}

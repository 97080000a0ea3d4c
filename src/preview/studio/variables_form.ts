/**
 * The studio's variables panel: a field per declared variable (text, number, checkbox,
 * select, colour with a picker, image with thumbnails of the project's images), grouped by
 * `group`, each problem of the check beside its field. What a typed field means as a value
 * and which values survive a reload of the composition are pure functions, unit-tested.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";
import type { Declaration, Info, Problem } from "./types.ts";

/**
 * A number field's value: the number typed, or the text itself when it is no number, so
 * the check names it with the CLI's message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(numberFieldValue(" 2.5 "), 2.5);
 * assert.equal(numberFieldValue("abc"), "abc");
 * assert.equal(numberFieldValue(""), "");
 * ```
 */
export function numberFieldValue(text: string): number | string {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return trimmed !== "" && Number.isFinite(n) ? n : trimmed;
}

/**
 * The values after the composition was read again: per declared variable, the URL's value
 * (once, at start-up), else the value it had when a variable of the same id and type was
 * declared before, else its default. Variables no longer declared are dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const title = { id: "title", type: "string" as const, label: "Title" };
 * const count = { id: "count", type: "number" as const, label: "Count" };
 * assert.deepEqual(
 *   keptValues([title, count], { title: "a", count: 1 }, [title], { title: "typed", gone: 1 }),
 *   { title: "typed", count: 1 },
 * );
 * ```
 */
export function keptValues(
  declarations: readonly Declaration[],
  defaults: Record<string, unknown>,
  before: readonly Declaration[] | undefined,
  values: Record<string, unknown>,
  urlValues?: Record<string, unknown>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const d of declarations) {
    const old = before?.find((o) => o.id === d.id && o.type === d.type);
    kept[d.id] = urlValues && d.id in urlValues
      ? urlValues[d.id]
      : old && d.id in values
      ? values[d.id]
      : defaults[d.id];
  }
  return kept;
}

/** The variables panel's elements (`studio_page.ts`). */
export type VariablesPanelElements = Pick<StudioElements, "form" | "droppedList" | "renderMessage">;

/** What the panel reads and tells the studio. */
export interface VariablesPanelHost {
  /** The values on stage, changed in place as fields are edited. */
  values(): Record<string, unknown>;
  /** A field changed: the studio checks the values and reloads the stage. */
  changed(): void;
}

/** The variables panel of one studio page. */
export interface VariablesPanel {
  /** Builds the fields of `info`'s declarations, filled with the values on stage. */
  build(info: Info): void;
  /** Sets a field to `value` (a reset, a reload's URL). */
  writeField(d: Declaration, value: unknown): void;
  /** Shows each problem beside its field; those of no field under the render button. */
  showProblems(problems: Problem[]): void;
}

/**
 * The kind of `<input>` a variable's field is (an enum's is a `<select>`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(inputType({ type: "boolean" }), "checkbox");
 * assert.equal(inputType({ type: "color" }), "text");
 * ```
 */
export function inputType(d: Pick<Declaration, "type">): "checkbox" | "number" | "text" {
  return d.type === "boolean" ? "checkbox" : d.type === "number" ? "number" : "text";
}

/**
 * The event a field reports a new value on: a choice or a box when it changes, text as
 * it is typed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(fieldEvent({ type: "number" }), "input");
 * ```
 */
export function fieldEvent(d: Pick<Declaration, "type">): "change" | "input" {
  return d.type === "enum" || d.type === "boolean" ? "change" : "input";
}

/** A run of the panel: one variable outside any group, or the variables of one group. */
export interface FieldRun {
  /** The group's name; undefined for a variable of no group. */
  group?: string;
  declarations: Declaration[];
}

/**
 * The fields in declaration order, those of one `group` together (placed where the group's
 * first variable is).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const d = (id: string, group?: string) => ({ id, type: "string" as const, label: id, group });
 * const runs = fieldRuns([d("a", "G"), d("b"), d("c", "G")]);
 * assert.deepEqual(runs.map((r) => [r.group, r.declarations.map((x) => x.id)]), [
 *   ["G", ["a", "c"]],
 *   [undefined, ["b"]],
 * ]);
 * ```
 */
export function fieldRuns(declarations: readonly Declaration[]): FieldRun[] {
  const runs: FieldRun[] = [];
  const groups = new Map<string, FieldRun>();
  for (const d of declarations) {
    if (!d.group) {
      runs.push({ declarations: [d] });
      continue;
    }
    let run = groups.get(d.group);
    if (!run) {
      run = { group: d.group, declarations: [] };
      groups.set(d.group, run);
      runs.push(run);
    }
    run.declarations.push(d);
  }
  return runs;
}

/**
 * Where an image variable's thumbnail loads from: a web address as is, a project path from
 * the project; undefined for an empty value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(thumbnailSrc(" img/logo.png "), "/img/logo.png");
 * assert.equal(thumbnailSrc("https://x.test/a.png"), "https://x.test/a.png");
 * assert.equal(thumbnailSrc(""), undefined);
 * ```
 */
export function thumbnailSrc(value: string): string | undefined {
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  return /^https?:\/\//i.test(trimmed) ? trimmed : `/${trimmed}`;
}

/**
 * How the panel lists a declaration vid dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   droppedText({ index: 2, id: "x", reason: "no type" }),
 *   'declaration 2 ("x") dropped: no type',
 * );
 * ```
 */
export function droppedText(d: { index: number; id?: string | null; reason: string }): string {
  return `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`;
}

/** What the panel's fields share: the form, the studio, and the project's images. */
interface PanelContext {
  form: HTMLFormElement;
  host: VariablesPanelHost;
  /** The project's images, asked for once per studio. */
  images(): Promise<string[]>;
}

function fieldInput(form: HTMLElement, id: string): HTMLInputElement | HTMLSelectElement | null {
  return form.querySelector<HTMLInputElement | HTMLSelectElement>(
    `[data-var="${CSS.escape(id)}"]`,
  );
}

/** A CSS colour as `#rrggbb` for the colour picker; undefined when the browser reads none. */
function hexOf(colour: string): string | undefined {
  if (/^#[0-9a-f]{6}$/i.test(colour)) return colour.toLowerCase();
  const probe = document.createElement("canvas").getContext("2d");
  if (!probe) return undefined;
  probe.fillStyle = "#010203";
  probe.fillStyle = colour;
  const parsed = String(probe.fillStyle);
  return /^#[0-9a-f]{6}$/i.test(parsed) && (parsed !== "#010203" || colour === "#010203")
    ? parsed
    : undefined;
}

function readField(ctx: PanelContext, d: Declaration): unknown {
  const input = fieldInput(ctx.form, d.id);
  if (!input) return ctx.host.values()[d.id];
  if (d.type === "boolean") return (input as HTMLInputElement).checked;
  // What is not a number goes to the check as typed, and gets the CLI's message.
  if (d.type === "number") return numberFieldValue(input.value);
  return input.value;
}

function syncPicker(form: HTMLElement, d: Declaration, value: unknown): void {
  const picker = form.querySelector<HTMLInputElement>(`[data-picker="${CSS.escape(d.id)}"]`);
  const hex = hexOf(String(value));
  if (picker && hex) picker.value = hex;
}

function writeField(form: HTMLElement, d: Declaration, value: unknown): void {
  const input = fieldInput(form, d.id);
  if (!input) return;
  if (d.type === "boolean") (input as HTMLInputElement).checked = value === true;
  else input.value = value === undefined ? "" : String(value);
  if (d.type === "color") syncPicker(form, d, value);
  // A value set from code (reset, a reload's URL) updates the image's thumbnail too.
  if (d.type === "image") input.dispatchEvent(new Event("vid-value"));
}

function showProblems(elements: VariablesPanelElements, problems: Problem[]): void {
  const { form, renderMessage } = elements;
  const byKey = new Map(problems.map((p) => [p.key, p.message]));
  for (const field of Array.from(form.querySelectorAll<HTMLElement>(".field"))) {
    const message = byKey.get(field.dataset.id ?? "") ?? "";
    field.classList.toggle("invalid", message !== "");
    const slot = field.querySelector<HTMLElement>(".problem");
    if (slot) slot.textContent = message;
    field.querySelector("[data-var]")?.setAttribute("aria-invalid", String(message !== ""));
  }
  const unplaced = problems.filter((p) => !fieldInput(form, p.key));
  renderMessage.dataset.kind = unplaced.length > 0 ? "error" : "";
  if (unplaced.length > 0) renderMessage.textContent = unplaced.map((p) => p.message).join("\n");
}

/** The grid's choices: a button per project image, or a hint when there is none. */
function imageOptions(images: string[], choose: (path: string) => void): HTMLElement[] {
  if (images.length === 0) {
    return [Object.assign(document.createElement("span"), {
      className: "hint",
      textContent: "no images in the project",
    })];
  }
  return images.map((path) => {
    const option = document.createElement("button");
    option.type = "button";
    option.className = "image-option";
    option.dataset.path = path;
    option.title = path;
    const img = document.createElement("img");
    img.src = `/${path}`;
    img.alt = path;
    option.append(img);
    option.addEventListener("click", () => choose(path));
    return option;
  });
}

/**
 * An image variable's thumbnail (of the value in the field; a value that is no file shows
 * none, and the check marks it) and a picker of the project's images with thumbnails.
 */
function imagePicker(
  ctx: PanelContext,
  d: Declaration,
  input: HTMLInputElement,
): { controls: HTMLElement[]; grid: HTMLElement } {
  const thumb = document.createElement("img");
  thumb.className = "thumb";
  thumb.dataset.thumb = d.id;
  thumb.alt = "";
  const showThumb = (): void => {
    const src = thumbnailSrc(input.value);
    thumb.hidden = src === undefined;
    if (src !== undefined) thumb.src = src;
  };
  thumb.addEventListener("error", () => thumb.hidden = true);
  input.addEventListener("input", showThumb);
  input.addEventListener("vid-value", showThumb);
  const choose = document.createElement("button");
  choose.type = "button";
  choose.textContent = "Choose…";
  choose.dataset.choose = d.id;
  const grid = document.createElement("div");
  grid.className = "image-grid";
  grid.dataset.images = d.id;
  grid.hidden = true;
  choose.addEventListener("click", async () => {
    if (!grid.hidden) {
      grid.hidden = true;
      return;
    }
    grid.replaceChildren(...imageOptions(await ctx.images(), (path) => {
      input.value = path;
      ctx.host.values()[d.id] = path;
      showThumb();
      grid.hidden = true;
      ctx.host.changed();
    }));
    grid.hidden = false;
  });
  queueMicrotask(showThumb);
  return { controls: [thumb, choose], grid };
}

/** The field's input: a select of an enum's options, else an `<input>` of its kind. */
function createInput(d: Declaration): HTMLInputElement | HTMLSelectElement {
  if (d.type === "enum") {
    const select = document.createElement("select");
    for (const option of d.options ?? []) {
      const element = document.createElement("option");
      element.value = option.value;
      element.textContent = option.label;
      select.append(element);
    }
    return select;
  }
  const text = document.createElement("input");
  text.type = inputType(d);
  if (d.type === "number") text.step = "any";
  if (d.type === "color") text.spellcheck = false;
  return text;
}

/** A colour variable's picker, beside its text field. */
function colourPicker(ctx: PanelContext, d: Declaration, input: HTMLInputElement): HTMLElement {
  const picker = document.createElement("input");
  picker.type = "color";
  picker.dataset.picker = d.id;
  picker.setAttribute("aria-label", `${d.label} picker`);
  picker.addEventListener("input", () => {
    ctx.host.values()[d.id] = picker.value;
    input.value = picker.value;
    ctx.host.changed();
  });
  return picker;
}

/** One variable's field: label, input (with its picker), description and problem slot. */
function buildField(ctx: PanelContext, d: Declaration): HTMLElement {
  const field = document.createElement("div");
  field.className = "field";
  field.dataset.id = d.id;
  field.dataset.type = d.type;
  const inputId = `var-${d.id}`;
  const label = document.createElement("label");
  label.htmlFor = inputId;
  label.textContent = d.label;
  const meta = document.createElement("small");
  meta.textContent = `${d.id} · ${d.type}`;
  label.append(" ", meta);
  const row = document.createElement("div");
  row.className = "inputs";
  const input = createInput(d);
  input.id = inputId;
  input.dataset.var = d.id;
  input.addEventListener(fieldEvent(d), () => {
    ctx.host.values()[d.id] = readField(ctx, d);
    if (d.type === "color") syncPicker(ctx.form, d, ctx.host.values()[d.id]);
    ctx.host.changed();
  });
  const picker = d.type === "image" ? imagePicker(ctx, d, input as HTMLInputElement) : undefined;
  if (picker) row.append(...picker.controls);
  if (d.type === "color") row.append(colourPicker(ctx, d, input as HTMLInputElement));
  row.append(input);
  const problem = document.createElement("div");
  problem.className = "problem";
  problem.id = `problem-${d.id}`;
  problem.setAttribute("role", "alert");
  field.append(label, row);
  if (picker) field.append(picker.grid);
  if (d.description) {
    const description = document.createElement("p");
    description.className = "description";
    description.id = `desc-${d.id}`;
    description.textContent = d.description;
    input.setAttribute("aria-describedby", description.id);
    field.append(description);
  }
  field.append(problem);
  return field;
}

/** The fields of {@linkcode fieldRuns}, a group's in a fieldset named by it. */
function groupedFields(ctx: PanelContext, declarations: Declaration[]): HTMLElement[] {
  return fieldRuns(declarations).map((run) => {
    if (run.group === undefined) return buildField(ctx, run.declarations[0]);
    const set = document.createElement("fieldset");
    set.className = "group";
    set.dataset.group = run.group;
    const legend = document.createElement("legend");
    legend.textContent = run.group;
    set.append(legend, ...run.declarations.map((d) => buildField(ctx, d)));
    return set;
  });
}

function buildPanel(ctx: PanelContext, droppedList: HTMLElement, info: Info): void {
  const { form, host } = ctx;
  form.replaceChildren(...groupedFields(ctx, info.declarations));
  if (info.declarations.length === 0) {
    const none = document.createElement("p");
    none.className = "hint";
    none.textContent = "This composition declares no variables.";
    form.append(none);
  }
  for (const d of info.declarations) writeField(form, d, host.values()[d.id]);
  droppedList.replaceChildren(...info.dropped.map((d) => {
    const item = document.createElement("li");
    item.textContent = droppedText(d);
    return item;
  }));
}

/**
 * Creates the panel.
 *
 * @example
 * ```ts no_run
 * import { studioElements } from "./dom.ts";
 *
 * let values: Record<string, unknown> = {};
 * const panel = createVariablesPanel(studioElements(), {
 *   values: () => values,
 *   changed: () => console.log(values),
 * });
 * ```
 */
export function createVariablesPanel(
  elements: VariablesPanelElements,
  host: VariablesPanelHost,
): VariablesPanel {
  const { form, droppedList } = elements;
  let projectImages: Promise<string[]> | undefined;
  const ctx: PanelContext = {
    form,
    host,
    images: () =>
      projectImages ??= fetch("/__preview/images")
        .then((r) => r.json() as Promise<{ images?: string[] }>)
        .then((body) => body.images ?? [], () => []),
  };
  return {
    build: (info) => buildPanel(ctx, droppedList, info),
    writeField: (d, value) => writeField(form, d, value),
    showProblems: (problems) => showProblems(elements, problems),
  };
}

/**
 * The composition on the studio's stage: the project's compositions for the switcher, the
 * composition read (again, after each edit) from the preview server, and its variables'
 * check with the CLI's own messages. Each function takes the {@linkcode PanelledStudio}:
 * the {@linkcode Studio} of `stage.ts` with its variables and Check panels; what the state
 * becomes is the pure functions' of `studio_state.ts`.
 *
 * @module
 */

import type { Info, Problem } from "./types.ts";
import type { VariablesPanel } from "./variables_form.ts";
import { go, layout, pump, saveUrl, showReadouts, type Studio } from "./stage.ts";
import {
  acceptComposition,
  type CompositionListing,
  compositionOptions,
  compositionTitle,
  entryQuery,
} from "./studio_state.ts";

/** The studio with the panels a composition fills. */
export interface PanelledStudio extends Studio {
  readonly panel: VariablesPanel;
  readonly checkPanel: { refresh(): Promise<void> };
}

/** What `POST /__preview/variables` answers. */
interface VariablesAnswer {
  ok: boolean;
  problems?: Problem[];
  variablesJson?: string;
  error?: { message: string };
}

/**
 * Checks the values on stage (`POST /__preview/variables`): each problem beside its field
 * and the `--variables` JSON of what differs from the defaults. An answer to an older check
 * is dropped.
 */
export async function checkValues(studio: PanelledStudio): Promise<void> {
  const { state, elements: { banner, variablesJson, form, copyStatus } } = studio;
  const seq = ++state.checkSeq;
  try {
    const response = await fetch("/__preview/variables", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ values: state.values, entry: state.entry }),
    });
    const body = await response.json() as VariablesAnswer;
    if (seq !== state.checkSeq) return;
    if (!body.ok) {
      banner.textContent = body.error?.message ?? "cannot check the variables";
      banner.hidden = false;
      return;
    }
    studio.panel.showProblems(body.problems ?? []);
    variablesJson.textContent = body.variablesJson ?? "{}";
    form.dataset.checked = String(seq);
  } catch (error) {
    if (seq === state.checkSeq) {
      copyStatus.textContent = `check failed: ${(error as Error).message}`;
    }
  }
}

/** A value changed. Debounced: a burst of typing checks once and reloads the stage once. */
export function valuesChanged(studio: PanelledStudio): void {
  const { state, elements: { form } } = studio;
  form.dataset.checked = "";
  if (state.changeTimer !== undefined) clearTimeout(state.changeTimer);
  state.changeTimer = setTimeout(() => {
    state.changeTimer = undefined;
    void checkValues(studio);
    void pump(studio);
    saveUrl(studio);
  }, 150);
}

/** Puts every variable back to its default. */
export function resetValues(studio: PanelledStudio): void {
  const { state } = studio;
  if (!state.info) return;
  state.values = structuredClone(state.info.defaults);
  for (const d of state.info.declarations) studio.panel.writeField(d, state.values[d.id]);
  valuesChanged(studio);
}

/** Fills the switcher with the project's compositions (hidden when there is one). */
export async function listCompositions(studio: Studio): Promise<void> {
  const { state, elements: { compositionSelect } } = studio;
  try {
    const body = await (await fetch("/__preview/compositions")).json() as {
      ok: boolean;
      entry: string;
      compositions: CompositionListing[];
    };
    if (!body.ok) return;
    state.defaultEntry = body.entry;
    if (state.entry === "") state.entry = state.defaultEntry;
    compositionSelect.replaceChildren(
      ...compositionOptions(body.compositions).map((o) => {
        const option = document.createElement("option");
        option.value = o.value;
        option.textContent = o.text;
        if (o.title) option.title = o.title;
        return option;
      }),
    );
    compositionSelect.value = state.entry;
    compositionSelect.hidden = body.compositions.length < 2;
  } catch {
    // The switcher stays hidden; the stage still works.
  }
}

/**
 * Reads the composition on stage again (at start, after an edit, on another one picked):
 * mid-edit, the banner says what is wrong and the last good stage stays.
 */
export async function refresh(studio: PanelledStudio): Promise<void> {
  const { state, elements: { banner, title, scrubber, frameInput } } = studio;
  let body: { ok: boolean; composition?: Info; error?: { message: string } };
  try {
    body = await (await fetch(`/__preview/composition${entryQuery(state.entry)}`)).json();
  } catch (error) {
    banner.textContent = `cannot reach vid preview: ${(error as Error).message}`;
    banner.hidden = false;
    return;
  }
  if (!body.ok || !body.composition) {
    // Mid-edit: say what is wrong and keep showing the last good stage.
    banner.textContent = body.error?.message ?? "the composition cannot be read";
    banner.hidden = false;
    return;
  }
  banner.hidden = true;
  const next = body.composition;
  const sameDeclarations = acceptComposition(state, next);
  document.title = `${next.id} · vid preview`;
  title.textContent = compositionTitle(next);
  scrubber.max = String(next.frames - 1);
  frameInput.max = String(next.frames - 1);
  if (!sameDeclarations) studio.panel.build(next);
  layout(studio);
  showReadouts(studio);
  go(studio, state.wanted);
  void checkValues(studio);
  void studio.checkPanel.refresh();
}

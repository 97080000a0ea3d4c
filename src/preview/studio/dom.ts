/**
 * The studio page's elements the client drives, looked up once by id (the ids are
 * `studio_page.ts`'s markup).
 *
 * @module
 */

/**
 * The element of `id` on the studio page, as the type the page's markup gives it.
 *
 * @example
 * ```ts no_run
 * const stage = byId<HTMLDivElement>("stage");
 * ```
 */
export function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

/**
 * The studio page's elements.
 *
 * @example
 * ```ts no_run
 * const { stage, scrubber } = studioElements();
 * ```
 */
export function studioElements(): {
  stageArea: HTMLDivElement;
  stageBox: HTMLDivElement;
  stage: HTMLDivElement;
  stageMessage: HTMLDivElement;
  stageErrorText: HTMLDivElement;
  stageExcerpt: HTMLPreElement;
  playButton: HTMLButtonElement;
  muteButton: HTMLButtonElement;
  volumeInput: HTMLInputElement;
  scrubber: HTMLInputElement;
  frameInput: HTMLInputElement;
  timecodeInput: HTMLInputElement;
  frameReadout: HTMLSpanElement;
  timeReadout: HTMLSpanElement;
  zoomSelect: HTMLSelectElement;
  timeline: HTMLDivElement;
  compositionSelect: HTMLSelectElement;
  title: HTMLSpanElement;
  banner: HTMLDivElement;
  connection: HTMLSpanElement;
  form: HTMLFormElement;
  droppedList: HTMLUListElement;
  checkStatus: HTMLDivElement;
  checkList: HTMLUListElement;
  resetButton: HTMLButtonElement;
  copyButton: HTMLButtonElement;
  variablesJson: HTMLElement;
  copyStatus: HTMLSpanElement;
  renderButton: HTMLButtonElement;
  renderCancel: HTMLButtonElement;
  renderProgress: HTMLProgressElement;
  renderStatus: HTMLDivElement;
  renderMessage: HTMLDivElement;
  renderDialog: HTMLDialogElement;
  renderFormat: HTMLSelectElement;
  renderQuality: HTMLSelectElement;
  renderScale: HTMLSelectElement;
  renderFps: HTMLInputElement;
  renderFrom: HTMLInputElement;
  renderTo: HTMLInputElement;
  renderName: HTMLInputElement;
} {
  return {
    stageArea: byId<HTMLDivElement>("stage-area"),
    stageBox: byId<HTMLDivElement>("stage-box"),
    stage: byId<HTMLDivElement>("stage"),
    stageMessage: byId<HTMLDivElement>("stage-message"),
    stageErrorText: byId<HTMLDivElement>("stage-error-text"),
    stageExcerpt: byId<HTMLPreElement>("stage-excerpt"),
    playButton: byId<HTMLButtonElement>("play"),
    muteButton: byId<HTMLButtonElement>("mute"),
    volumeInput: byId<HTMLInputElement>("volume"),
    scrubber: byId<HTMLInputElement>("scrubber"),
    frameInput: byId<HTMLInputElement>("frame-input"),
    timecodeInput: byId<HTMLInputElement>("timecode-input"),
    frameReadout: byId<HTMLSpanElement>("frame-readout"),
    timeReadout: byId<HTMLSpanElement>("time-readout"),
    zoomSelect: byId<HTMLSelectElement>("zoom"),
    timeline: byId<HTMLDivElement>("timeline"),
    compositionSelect: byId<HTMLSelectElement>("composition-select"),
    title: byId<HTMLSpanElement>("title"),
    banner: byId<HTMLDivElement>("banner"),
    connection: byId<HTMLSpanElement>("connection"),
    form: byId<HTMLFormElement>("variables"),
    droppedList: byId<HTMLUListElement>("dropped"),
    checkStatus: byId<HTMLDivElement>("check-status"),
    checkList: byId<HTMLUListElement>("check-problems"),
    resetButton: byId<HTMLButtonElement>("reset"),
    copyButton: byId<HTMLButtonElement>("copy"),
    variablesJson: byId<HTMLElement>("variables-json"),
    copyStatus: byId<HTMLSpanElement>("copy-status"),
    renderButton: byId<HTMLButtonElement>("render"),
    renderCancel: byId<HTMLButtonElement>("render-cancel"),
    renderProgress: byId<HTMLProgressElement>("render-progress"),
    renderStatus: byId<HTMLDivElement>("render-status"),
    renderMessage: byId<HTMLDivElement>("render-message"),
    renderDialog: byId<HTMLDialogElement>("render-dialog"),
    renderFormat: byId<HTMLSelectElement>("render-format"),
    renderQuality: byId<HTMLSelectElement>("render-quality"),
    renderScale: byId<HTMLSelectElement>("render-scale"),
    renderFps: byId<HTMLInputElement>("render-fps"),
    renderFrom: byId<HTMLInputElement>("render-from"),
    renderTo: byId<HTMLInputElement>("render-to"),
    renderName: byId<HTMLInputElement>("render-name"),
  };
}

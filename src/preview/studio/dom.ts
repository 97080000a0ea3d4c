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

/** The studio page's elements the client drives, by the names the client gives them. */
export interface StudioElements {
  /** `#stage-area`. */
  stageArea: HTMLDivElement;
  /** `#stage-box`. */
  stageBox: HTMLDivElement;
  /** `#stage`. */
  stage: HTMLDivElement;
  /** `#stage-message`. */
  stageMessage: HTMLDivElement;
  /** `#stage-error-text`. */
  stageErrorText: HTMLDivElement;
  /** `#stage-excerpt`. */
  stageExcerpt: HTMLPreElement;
  /** `#play`. */
  playButton: HTMLButtonElement;
  /** `#mute`. */
  muteButton: HTMLButtonElement;
  /** `#volume`. */
  volumeInput: HTMLInputElement;
  /** `#scrubber`. */
  scrubber: HTMLInputElement;
  /** `#frame-input`. */
  frameInput: HTMLInputElement;
  /** `#timecode-input`. */
  timecodeInput: HTMLInputElement;
  /** `#frame-readout`. */
  frameReadout: HTMLSpanElement;
  /** `#time-readout`. */
  timeReadout: HTMLSpanElement;
  /** `#zoom`. */
  zoomSelect: HTMLSelectElement;
  /** `#timeline`. */
  timeline: HTMLDivElement;
  /** `#composition-select`. */
  compositionSelect: HTMLSelectElement;
  /** `#title`. */
  title: HTMLSpanElement;
  /** `#banner`. */
  banner: HTMLDivElement;
  /** `#connection`. */
  connection: HTMLSpanElement;
  /** `#variables`. */
  form: HTMLFormElement;
  /** `#dropped`. */
  droppedList: HTMLUListElement;
  /** `#check-status`. */
  checkStatus: HTMLDivElement;
  /** `#check-problems`. */
  checkList: HTMLUListElement;
  /** `#reset`. */
  resetButton: HTMLButtonElement;
  /** `#copy`. */
  copyButton: HTMLButtonElement;
  /** `#variables-json`. */
  variablesJson: HTMLElement;
  /** `#copy-status`. */
  copyStatus: HTMLSpanElement;
  /** `#render`. */
  renderButton: HTMLButtonElement;
  /** `#render-cancel`. */
  renderCancel: HTMLButtonElement;
  /** `#render-progress`. */
  renderProgress: HTMLProgressElement;
  /** `#render-status`. */
  renderStatus: HTMLDivElement;
  /** `#render-message`. */
  renderMessage: HTMLDivElement;
  /** `#render-dialog`. */
  renderDialog: HTMLDialogElement;
  /** `#render-format`. */
  renderFormat: HTMLSelectElement;
  /** `#render-quality`. */
  renderQuality: HTMLSelectElement;
  /** `#render-scale`. */
  renderScale: HTMLSelectElement;
  /** `#render-fps`. */
  renderFps: HTMLInputElement;
  /** `#render-from`. */
  renderFrom: HTMLInputElement;
  /** `#render-to`. */
  renderTo: HTMLInputElement;
  /** `#render-name`. */
  renderName: HTMLInputElement;
}

/**
 * The studio page's elements.
 *
 * @example
 * ```ts no_run
 * const { stage, scrubber } = studioElements();
 * ```
 */
export function studioElements(): StudioElements {
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

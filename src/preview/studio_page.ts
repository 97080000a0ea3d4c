/**
 * The studio page served at `/` by the preview server: the composition switcher, the
 * stage with its error overlay, the transport (play/pause, sound, scrubber, typed frame
 * and timecode, readouts, zoom), the timeline of media clips and animations, the
 * variables panel and the render dialog. One self-contained HTML document; its script is
 * the studio client (`src/preview/studio/`), bundled at build time into `studio_bundle.ts`.
 *
 * @module
 */

import { STUDIO_CLIENT_BUNDLE } from "./studio_bundle.ts";

const STYLE = `
:root {
  color-scheme: dark;
  --bg: #111318; --panel: #191c23; --line: #2a2f3a; --text: #e7e9ee; --muted: #9aa1ad;
  --accent: #6aa7ff; --bad: #ff6b6b; --good: #5ad28c;
  font: 14px/1.4 system-ui, "DejaVu Sans", "Liberation Sans", sans-serif;
}
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; background: var(--bg); color: var(--text); }
body { display: flex; flex-direction: column; }
header { display: flex; gap: 12px; align-items: baseline; padding: 8px 14px;
  border-bottom: 1px solid var(--line); }
header strong { font-weight: 600; }
#title { color: var(--muted); }
#connection { margin-left: auto; color: var(--muted); font-size: 12px; }
#connection[data-state="live"] { color: var(--good); }
#connection[data-state="down"] { color: var(--bad); }
#banner { padding: 8px 14px; background: #3a1d22; color: #ffd2d2; white-space: pre-wrap; }
main { flex: 1; display: grid; grid-template-columns: 1fr 340px; min-height: 0; }
#viewer { display: grid; grid-template-rows: 1fr auto auto; min-width: 0; min-height: 0; }
#stage-area { position: relative; overflow: auto; display: flex; min-height: 0; padding: 16px; }
#stage-box { position: relative; margin: auto; flex: none; overflow: hidden;
  background: repeating-conic-gradient(#2b2f38 0 25%, #23262e 0 50%) 0 0 / 16px 16px; }
#stage { position: absolute; left: 0; top: 0; transform-origin: 0 0; }
#stage iframe.composition { position: absolute; left: 0; top: 0; border: 0; display: block;
  background: transparent; }
#stage iframe.standby { visibility: hidden; z-index: -1; }
#stage-message { position: absolute; left: 16px; right: 16px; bottom: 16px; padding: 8px 12px;
  background: rgba(58, 29, 34, 0.95); color: #ffd2d2; border-radius: 6px; white-space: pre-wrap;
  z-index: 2; max-height: calc(100% - 32px); overflow: auto; }
#stage-excerpt { margin: 6px 0 0; padding: 6px; background: #1d0f12; border-radius: 4px;
  font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre; overflow: auto; }
#stage-excerpt:empty { display: none; }
#transport { display: flex; flex-wrap: wrap; gap: 8px 10px; align-items: center;
  padding: 8px 14px; border-top: 1px solid var(--line); }
#transport button { white-space: nowrap; }
#scrubber { flex: 1 1 240px; min-width: 160px; accent-color: var(--accent); }
#frame-readout, #time-readout { font-variant-numeric: tabular-nums; color: var(--muted);
  white-space: nowrap; }
#frame-input { width: 70px; }
#timecode-input { width: 104px; font-variant-numeric: tabular-nums; }
#frame-input, #timecode-input { background: #11141a; border: 1px solid var(--line);
  border-radius: 5px; padding: 3px 6px; }
#frame-input[aria-invalid="true"], #timecode-input[aria-invalid="true"] {
  border-color: var(--bad); }
#volume { width: 80px; accent-color: var(--accent); }
#composition-select { background: #11141a; border: 1px solid var(--line); border-radius: 5px;
  padding: 2px 6px; }
/* The timeline takes up to 40% of the window (at least 160px); its rows share that height,
   shrinking from 20px to a readable 14px, and only then does it scroll. */
#timeline { position: relative; border-top: 1px solid var(--line); padding: 4px 14px 8px;
  display: flex; flex-direction: column; max-height: max(160px, 40vh); overflow: auto;
  font-size: 12px; }
#timeline:empty { display: none; }
#ruler { position: relative; flex: none; height: 16px; margin: 0 0 2px 120px; cursor: pointer;
  border-bottom: 1px solid var(--line); }
#ruler .tick { position: absolute; bottom: 0; padding-left: 3px; border-left: 1px solid var(--line);
  color: var(--muted); font-size: 11px; line-height: 14px; white-space: nowrap; }
.track { position: relative; flex: 0 1 20px; min-height: 14px; margin: 2px 0 2px 120px;
  background: #15181e; border-radius: 3px; cursor: pointer; }
.track .name { position: absolute; right: calc(100% + 8px); width: 112px; top: 50%;
  transform: translateY(-50%); line-height: 14px;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; color: var(--muted);
  text-align: right; }
.clip { position: absolute; top: 2px; bottom: 2px; border-radius: 3px; min-width: 2px;
  background: #3b5b8f; }
.clip[data-kind="audio"] { background: #3c7d5a; }
.clip[data-kind="video"] { background: #6a4c93; }
.clip[data-kind="timeline"] { background: #8f6a3b; }
.clip[data-kind="composition"] { background: #2f6f8f; }
.clip[data-kind="clip"] { background: #5b5b8f; }
#playhead { position: absolute; top: 0; bottom: 0; width: 2px; background: var(--accent);
  pointer-events: none; margin-left: 120px; }
dialog { background: var(--panel); color: var(--text); border: 1px solid var(--line);
  border-radius: 8px; padding: 14px 16px; min-width: 340px; }
dialog::backdrop { background: rgba(0, 0, 0, 0.5); }
dialog .row { display: flex; gap: 8px; align-items: center; margin-bottom: 10px; }
dialog .row label { width: 90px; color: var(--muted); }
dialog .row input, dialog .row select { flex: 1; min-width: 0; background: #11141a;
  border: 1px solid var(--line); border-radius: 5px; padding: 4px 6px; }
dialog .row input.frame { width: 70px; flex: none; }
button, select, input { font: inherit; color: inherit; }
button { background: #262b35; border: 1px solid var(--line); border-radius: 6px;
  padding: 5px 12px; cursor: pointer; }
button:hover { border-color: var(--accent); }
#play { min-width: 72px; }
aside { border-left: 1px solid var(--line); background: var(--panel); overflow: auto;
  padding: 12px 14px; }
aside h2 { font-size: 13px; text-transform: uppercase; letter-spacing: 0.08em;
  color: var(--muted); margin: 8px 0 10px; }
.field { margin-bottom: 12px; }
.field label { display: block; margin-bottom: 4px; }
.field small { color: var(--muted); }
.field .inputs { display: flex; gap: 6px; align-items: center; }
.field input[type="text"], .field input[type="number"], .field select { flex: 1; min-width: 0;
  background: #11141a; border: 1px solid var(--line); border-radius: 5px; padding: 4px 6px; }
.field input[type="color"] { width: 36px; height: 28px; padding: 0; border: 1px solid var(--line);
  background: none; }
.field.invalid input, .field.invalid select { border-color: var(--bad); }
.field .problem { color: var(--bad); font-size: 12px; margin-top: 3px; }
.field .thumb { width: 28px; height: 28px; object-fit: contain; background: #11141a;
  border: 1px solid var(--line); border-radius: 4px; }
.image-grid { display: grid; margin-top: 6px;
  grid-template-columns: repeat(auto-fill, 56px); gap: 6px; padding: 8px; background: #1b1f27;
  border: 1px solid var(--line); border-radius: 6px; max-height: 260px; overflow: auto; }
.image-grid[hidden] { display: none; }
.image-option { width: 56px; height: 56px; padding: 2px; background: #11141a; }
.image-option img { width: 100%; height: 100%; object-fit: contain; }
.field .description { color: var(--muted); font-size: 12px; margin: 3px 0 0; }
fieldset.group { border: 1px solid var(--line); border-radius: 6px; margin: 0 0 12px; padding: 6px 10px 0; }
fieldset.group legend { color: var(--muted); font-size: 12px; padding: 0 4px; }
.field .problem:empty { display: none; }
#dropped { color: #ffcf70; font-size: 12px; padding-left: 18px; }
#dropped:empty { display: none; }
#check-problems { font-size: 12px; padding-left: 18px; margin: 4px 0; }
#check-problems li[data-severity="error"] { color: var(--bad); }
#check-problems li[data-severity="warning"] { color: #ffcf70; }
#check-status { color: var(--muted); font-size: 12px; }
.actions { display: flex; gap: 8px; flex-wrap: wrap; margin: 6px 0; }
#variables-json { display: block; background: #11141a; border: 1px solid var(--line);
  border-radius: 5px; padding: 6px; font: 12px/1.4 ui-monospace, "DejaVu Sans Mono", monospace;
  white-space: pre-wrap; word-break: break-all; user-select: all; }
#copy-status, .hint { color: var(--muted); font-size: 12px; }
#render-progress { width: 100%; margin: 8px 0 4px; }
#render-status a { color: var(--accent); }
#render-message { margin-top: 6px; font-size: 13px; }
#render-message[data-kind="busy"] { color: #ffcf70; }
#render-message[data-kind="error"] { color: var(--bad); }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; font-size: 11px; }
`;

const BODY = `
<header>
  <strong>vid preview</strong>
  <select id="composition-select" aria-label="Composition" hidden></select>
  <span id="title">loading…</span>
  <span id="connection">connecting…</span>
</header>
<div id="banner" role="alert" hidden></div>
<main>
  <section id="viewer">
    <div id="stage-area">
      <div id="stage-box">
        <div id="stage" data-state="loading" data-frame="-1" data-generation="0"></div>
        <div id="stage-message" role="alert" hidden><div id="stage-error-text"></div><pre
          id="stage-excerpt"></pre></div>
      </div>
    </div>
    <div id="transport">
      <button id="play" type="button" aria-pressed="false" title="Play / pause (space)">Play</button>
      <button id="mute" type="button" aria-pressed="false" title="Mute (m)">Sound on</button>
      <input id="volume" type="range" min="0" max="1" step="0.05" value="1" aria-label="Volume">
      <input id="scrubber" type="range" min="0" max="0" step="1" value="0" aria-label="Timeline">
      <input id="frame-input" type="number" min="0" step="1" value="0" aria-label="Go to frame"
        title="Go to frame (Enter)">
      <input id="timecode-input" type="text" value="00:00:00:00" spellcheck="false"
        aria-label="Go to time" title="Go to time: HH:MM:SS:FF timecode, or seconds like 1.5s">
      <span id="frame-readout">frame 0 / 0</span>
      <span id="time-readout">0.000 s</span>
      <select id="zoom" aria-label="Zoom">
        <option value="fit" selected>Fit</option>
        <option value="0.5">50%</option>
        <option value="1">100%</option>
        <option value="2">200%</option>
      </select>
    </div>
    <div id="timeline" aria-label="Timeline of media and animations"></div>
  </section>
  <aside>
    <h2>Render</h2>
    <button id="render" type="button">Render…</button>
    <button id="render-cancel" type="button" hidden>Cancel render</button>
    <progress id="render-progress" value="0" max="1" hidden></progress>
    <div id="render-status" data-state="idle" aria-live="polite"></div>
    <div id="render-message" aria-live="polite"></div>
    <p class="hint">Renders go to the project's <code>renders/</code> folder.
      Keys: <kbd>space</kbd> play/pause, <kbd>←</kbd> <kbd>→</kbd> one frame,
      <kbd>shift</kbd>+arrows ten, <kbd>Home</kbd> <kbd>End</kbd>, <kbd>m</kbd> mute.</p>
    <h2>Variables</h2>
    <form id="variables" autocomplete="off" onsubmit="return false"></form>
    <ul id="dropped"></ul>
    <div class="actions">
      <button id="reset" type="button">Reset to defaults</button>
      <button id="copy" type="button">Copy as --variables</button>
    </div>
    <code id="variables-json">{}</code>
    <span id="copy-status" aria-live="polite"></span>
    <h2>Check</h2>
    <div id="check-status" aria-live="polite">checking…</div>
    <ul id="check-problems"></ul>
  </aside>
</main>
<dialog id="render-dialog" aria-label="Render">
  <form method="dialog" id="render-form">
    <div class="row"><label for="render-format">Format</label>
      <select id="render-format"></select></div>
    <div class="row"><label for="render-quality">Quality</label>
      <select id="render-quality"></select></div>
    <div class="row"><label for="render-fps">Frame rate</label>
      <input id="render-fps" class="frame" type="number" min="1" max="240" step="any"> fps</div>
    <div class="row"><label for="render-scale">Scale</label>
      <select id="render-scale" title="device pixels per CSS pixel: 2 renders a 1920x1080 layout at 3840x2160"></select></div>
    <div class="row"><label for="render-from">Frames</label>
      <input id="render-from" class="frame" type="number" min="0" step="1" value="0"> to
      <input id="render-to" class="frame" type="number" min="0" step="1" value="0"></div>
    <div class="row"><label for="render-name">File name</label>
      <input id="render-name" type="text" spellcheck="false" placeholder="dated name"></div>
    <div class="actions">
      <button id="render-start" type="submit" value="start">Render</button>
      <button id="render-close" type="submit" value="close">Close</button>
    </div>
  </form>
</dialog>
<div id="sounds" hidden></div>
`;

/**
 * The studio's HTML document.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = studioPage();
 * assert.ok(html.includes('id="stage"'));
 * ```
 */
export function studioPage(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>vid preview</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${STUDIO_CLIENT_BUNDLE}</script>
</body>
</html>
`;
}

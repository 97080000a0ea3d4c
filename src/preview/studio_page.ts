/**
 * The studio page served at `/` by the preview server: the stage with its transport
 * (play/pause, timeline scrubber, frame and time readouts, zoom), the variables panel
 * and the Render button. One self-contained HTML document; its script is
 * {@linkcode studioClient}.
 *
 * @module
 */

import { studioClient } from "./studio_client.ts";

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
#viewer { display: grid; grid-template-rows: 1fr auto; min-width: 0; min-height: 0; }
#stage-area { position: relative; overflow: auto; display: flex; min-height: 0; padding: 16px; }
#stage-box { position: relative; margin: auto; flex: none; overflow: hidden;
  background: repeating-conic-gradient(#2b2f38 0 25%, #23262e 0 50%) 0 0 / 16px 16px; }
#stage { position: absolute; left: 0; top: 0; transform-origin: 0 0; }
#stage iframe.composition { position: absolute; left: 0; top: 0; border: 0; display: block;
  background: transparent; }
#stage-message { position: absolute; left: 16px; right: 16px; bottom: 16px; padding: 8px 12px;
  background: rgba(58, 29, 34, 0.95); color: #ffd2d2; border-radius: 6px; white-space: pre-wrap;
  z-index: 2; }
#transport { display: flex; gap: 10px; align-items: center; padding: 8px 14px;
  border-top: 1px solid var(--line); }
#scrubber { flex: 1; accent-color: var(--accent); }
#frame-readout, #time-readout { font-variant-numeric: tabular-nums; color: var(--muted);
  white-space: nowrap; }
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
.field .problem:empty { display: none; }
#dropped { color: #ffcf70; font-size: 12px; padding-left: 18px; }
#dropped:empty { display: none; }
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
  <strong>vid preview</strong><span id="title">loading…</span>
  <span id="connection">connecting…</span>
</header>
<div id="banner" role="alert" hidden></div>
<main>
  <section id="viewer">
    <div id="stage-area">
      <div id="stage-box">
        <div id="stage" data-state="loading" data-frame="-1" data-generation="0"></div>
        <div id="stage-message" role="alert" hidden></div>
      </div>
    </div>
    <div id="transport">
      <button id="play" type="button" aria-pressed="false" title="Play / pause (space)">Play</button>
      <input id="scrubber" type="range" min="0" max="0" step="1" value="0" aria-label="Timeline">
      <span id="frame-readout">frame 0 / 0</span>
      <span id="time-readout">0.000 s</span>
      <select id="zoom" aria-label="Zoom">
        <option value="fit" selected>Fit</option>
        <option value="0.5">50%</option>
        <option value="1">100%</option>
        <option value="2">200%</option>
      </select>
    </div>
  </section>
  <aside>
    <h2>Variables</h2>
    <form id="variables" autocomplete="off" onsubmit="return false"></form>
    <ul id="dropped"></ul>
    <div class="actions">
      <button id="reset" type="button">Reset to defaults</button>
      <button id="copy" type="button">Copy as --variables</button>
    </div>
    <code id="variables-json">{}</code>
    <span id="copy-status" aria-live="polite"></span>
    <h2>Render</h2>
    <button id="render" type="button">Render</button>
    <progress id="render-progress" value="0" max="1" hidden></progress>
    <div id="render-status" data-state="idle" aria-live="polite"></div>
    <div id="render-message" aria-live="polite"></div>
    <p class="hint">Renders are mp4 files in the project's <code>renders/</code> folder.
      Keys: <kbd>space</kbd> play/pause, <kbd>←</kbd> <kbd>→</kbd> one frame,
      <kbd>shift</kbd>+arrows ten, <kbd>Home</kbd> <kbd>End</kbd>.</p>
  </aside>
</main>
`;

/**
 * The studio's HTML document.
 *
 * @example
 * ```ts
 * const html = studioPage();
 * html.includes('id="stage"'); // true
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
<body>${BODY}<script>(${studioClient.toString()})();</script>
</body>
</html>
`;
}

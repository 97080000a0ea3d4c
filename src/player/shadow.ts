/**
 * The markup and style of `<vid-player>`'s shadow root: the stage (the composition's iframes,
 * scaled to the element's box keeping the aspect ratio), the poster shown until the first
 * frame, the message shown when the composition fails, and the controls (play, a labelled
 * seek slider, the time, mute). Kept apart from the element's behaviour, which names the
 * parts by their `part` attribute.
 *
 * @module
 */

/** The shadow root's content. */
export const PLAYER_SHADOW_HTML: string = `<style>
:host { display: inline-block; position: relative; width: 480px; height: 270px;
  background: #000; overflow: hidden; contain: content; }
:host([hidden]) { display: none; }
:host(:focus-visible) { outline: 2px solid #4af; outline-offset: 2px; }
[part=stage] { position: absolute; left: 0; top: 0; transform-origin: 0 0; }
[part=stage] iframe { position: absolute; left: 0; top: 0; border: 0; display: block; }
[part=poster] { position: absolute; inset: 0; width: 100%; height: 100%; object-fit: contain; }
[part=message] { position: absolute; inset: 0; margin: 0; padding: 12px; overflow: auto;
  background: rgba(40, 0, 0, 0.92); color: #fdd; font: 13px/1.4 ui-monospace, monospace;
  white-space: pre-wrap; }
[part=controls] { position: absolute; left: 0; right: 0; bottom: 0; display: flex; gap: 8px;
  align-items: center; padding: 6px 8px; background: linear-gradient(transparent, rgba(0,0,0,0.7));
  color: #fff; font: 12px system-ui, sans-serif; }
[part=controls] button { font: inherit; color: inherit; background: rgba(255,255,255,0.15);
  border: 0; border-radius: 4px; padding: 4px 8px; cursor: pointer; }
[part=seek] { flex: 1; }
[hidden] { display: none !important; }
</style>
<div part="stage"></div>
<div part="sounds" hidden></div>
<img part="poster" alt="" hidden>
<pre part="message" role="alert" hidden></pre>
<div part="controls" hidden>
  <button part="play" type="button" aria-label="Play">Play</button>
  <input part="seek" type="range" min="0" max="0" step="1" value="0" aria-label="Seek">
  <span part="time" aria-live="off">0.00 / 0.00</span>
  <button part="mute" type="button" aria-label="Mute" aria-pressed="false">Sound on</button>
</div>`;

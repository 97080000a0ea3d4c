/**
 * What the studio client knows of the preview server's answers (`/__preview/*`) and of the
 * stage pages (`window.__vid`), as its modules share them.
 *
 * @module
 */

/** One choice of an `enum` variable. */
export interface EnumOption {
  value: string;
  label: string;
}
/** A declared variable, as `/__preview/composition` lists it. */
export interface Declaration {
  id: string;
  type: "string" | "number" | "color" | "boolean" | "enum" | "image";
  label: string;
  default?: string | number | boolean;
  options?: EnumOption[];
  /** For editors: what the variable is for. */
  description?: string;
  /** For editors: the group it is shown in. */
  group?: string;
}
/** The composition on stage, as `/__preview/composition` describes it. */
export interface Info {
  id: string;
  entry: string;
  width: number;
  height: number;
  duration: number;
  aspectRatio: string | null;
  fps: number;
  frames: number;
  declarations: Declaration[];
  dropped: { index: number; id?: string; reason: string }[];
  defaults: Record<string, unknown>;
  render: { formats: string[]; qualities: string[]; scales: string[] };
}
/** A variable's problem, as `/__preview/variables` names it. */
export interface Problem {
  key: string;
  message: string;
}
/** The studio's render job, as `/__preview/render` and its events report it. */
export interface RenderStatus {
  state: "idle" | "rendering" | "done" | "failed" | "cancelled";
  id: number;
  progress?: {
    framesDone: number;
    framesTotal: number;
    stage: string;
    fps: number;
    etaSeconds?: number;
  };
  file?: string;
  folder?: string;
  bytes?: number;
  frames?: number;
  elapsedMs?: number;
  error?: { message: string };
}
/** A `<video>` or `<audio>` of the stage page (`__vid.media()`). */
export interface MediaClip {
  kind: "video" | "audio";
  src: string;
  start: number;
  mediaStart: number;
  duration: number | null;
  volume: number;
  muted: boolean;
  loop: boolean;
  playbackRate: number;
}
/** One of the page's own stack frames (`__vid.errors()`). */
export interface StackFrame {
  functionName: string;
  url: string;
  line: number;
  column: number;
}
/** An error the stage page threw (`__vid.errors()`). */
export interface ErrorRecord {
  message: string;
  phase: "load" | "frame";
  frame?: number;
  stack: StackFrame[];
  url?: string;
  line?: number;
  column?: number;
}
/** The part of the stage page's `window.__vid` the studio uses. */
export interface VidApi {
  seek(frame: number): Promise<void>;
  untilVideosPresented(maxMs?: number): Promise<number>;
  paintVideoFrames(): Promise<number>;
  clearVideoFrames(): number;
  media(): MediaClip[];
  errors(): ErrorRecord[];
  timedWindows(): {
    windows: { kind: "composition" | "clip"; label: string; start: number; end: number | null }[];
    timelineStarts: Record<string, number>;
  };
}
/** A stage page: its iframe, the values it was loaded with and the frame it is at. */
export interface Live {
  iframe: HTMLIFrameElement;
  key: string;
  frame: number;
  /** `__vid.media()` before the first seek (seeking mutes every element). */
  media: MediaClip[];
}
/** One row of the timeline: a clip, animation, timeline or tween with its window. */
export interface TimelineItem {
  kind: "audio" | "video" | "animation" | "timeline" | "composition" | "clip";
  label: string;
  /** The GSAP timeline a tween belongs to: its row follows that timeline's. */
  parent?: string;
  start: number;
  end: number;
}
/** A studio-side player of one of the stage page's sounding clips. */
export interface Sound {
  clip: MediaClip;
  el: HTMLAudioElement;
}

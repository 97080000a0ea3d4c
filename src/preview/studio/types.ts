/**
 * What the studio client knows of the preview server's answers (`/__preview/*`) and of the
 * stage pages (`window.__vid`), as its modules share them.
 *
 * @module
 */

import type { PreviewComposition } from "../compositions.ts";
import type { EnumOption, VariableDeclaration } from "../../composition/declarations.ts";
import type {
  MediaDescriptor,
  PageErrorRecord,
  PageStackFrame,
} from "../../runtime/page_runtime.ts";

/** One choice of an `enum` variable. */
export type { EnumOption };
/** A declared variable, as `/__preview/composition` lists it. */
export type Declaration = VariableDeclaration;
/** The composition on stage, as `/__preview/composition` describes it. */
export type Info = PreviewComposition;
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
export type MediaClip = MediaDescriptor;
/** One of the page's own stack frames (`__vid.errors()`). */
export type StackFrame = PageStackFrame;
/** An error the stage page threw (`__vid.errors()`). */
export type ErrorRecord = PageErrorRecord;
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

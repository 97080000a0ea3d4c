/**
 * The check an uploaded project passes before it becomes a ready asset: the static part
 * of `vid check` (`src/check/static.ts`: script syntax, missing files with letter case,
 * misspelt attributes, dropped declarations, unrendered elements). It reads the unpacked
 * files only, with no browser or ffmpeg in the request path, so a project that would
 * render wrong is refused with a 422 naming each problem instead of being paid for.
 *
 * @module
 */

import type { Composition } from "../../composition/composition.ts";
import type { CheckProblem } from "../../check/problems.ts";
import { staticCheck } from "../../check/static.ts";
import type { VariableDeclaration } from "../../composition/declarations.ts";
import type { FrameRate } from "../../composition/frame_rate.ts";
import { ApiError } from "./errors.ts";

/**
 * The project facts stored with a ready asset (its `project` column): what the upload
 * read from the checked composition, and what a render request is checked and priced by.
 */
export interface AssetProject {
  id: string;
  width: number;
  height: number;
  duration: number;
  /** The composition's `data-fps`, when it pins one. */
  fps?: FrameRate;
  declarations: VariableDeclaration[];
}

/** A problem as the API states it: where, what, never a path of the server's disk. */
export type ApiProblem = Pick<
  CheckProblem,
  "kind" | "message" | "file" | "line" | "column" | "field"
>;

/** 422 `vid_project_invalid` with every problem the check found (`error.problems`). */
export class ProjectCheckError extends ApiError {
  override name = "ProjectCheckError";
  /** The problems, in the order the check found them. */
  readonly problems: ApiProblem[];
  constructor(problems: ApiProblem[]) {
    super(
      422,
      "vid_project_invalid",
      `the project fails vid check (${problems.length} error${problems.length === 1 ? "" : "s"}): ${
        problems.map((p) =>
          (p.file ? `${p.file}${p.line ? `:${p.line}:${p.column}` : ""}: ` : "") + p.message
        ).join("; ")
      }`,
      problems[0]?.field ?? problems[0]?.file,
    );
    this.problems = problems;
  }

  /** The JSON body, with the problems. */
  override toJSON(): ReturnType<ApiError["toJSON"]> & { error: { problems: ApiProblem[] } } {
    const body = super.toJSON();
    return { error: { ...body.error, problems: this.problems } };
  }
}

/**
 * Throws {@linkcode ProjectCheckError} when the static check finds errors in an unpacked
 * project. Variable defaults are left to the render request, which checks its values.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../../composition/composition.ts";
 *
 * await checkUploadedProject(await readComposition("/tmp/upload/project"));
 * ```
 */
export async function checkUploadedProject(composition: Composition): Promise<void> {
  const { problems } = await staticCheck({ composition });
  const errors = problems.filter((p) => p.severity === "error" && p.kind !== "variable");
  if (errors.length === 0) return;
  throw new ProjectCheckError(errors.map((p) => ({
    kind: p.kind,
    message: p.message,
    ...(p.file !== undefined && { file: p.file }),
    ...(p.line !== undefined && { line: p.line, column: p.column }),
    ...(p.field !== undefined && { field: p.field }),
  })));
}

/**
 * Where `vid server` runs its render browsers: tenants' JavaScript runs in them, so they run
 * inside Chromium's sandbox, and, when the server runs as root (Chromium refuses its sandbox
 * to root), as an unprivileged account (`--render-user`, by default `vid-render`, which
 * `deno task setup` creates when run as root, else `nobody`). A host where the sandbox
 * cannot start (no user namespaces, a container's seccomp policy) is found at start-up by
 * launching one browser, and the server refuses to start there unless the operator accepts
 * the risk with `--allow-no-sandbox`.
 *
 * The CLI's other commands render the user's own project as the user, so they keep the
 * default of `browser.ts` (the sandbox when not root; as root, none, with a warning).
 *
 * @module
 */

import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";
import {
  launchBrowser,
  type RenderUser,
  type SandboxPolicy,
  SandboxUnavailableError,
  setSandboxPolicy,
} from "./browser.ts";
import { DEFAULT_RENDER_USERS, findHeadlessShell, lookupUser } from "./system.ts";
import { SERVER_PROCESS_LIMITS, setProcessPolicy } from "./process_runner.ts";

/** `--render-user` names no usable account, or the server cannot switch to it. */
export class RenderUserError extends VidError {
  override name = "RenderUserError";
  constructor(detail: string) {
    super(`--render-user: ${detail}`, { flag: "--render-user", field: "renderUser", detail });
  }
}

/** Chromium's sandbox cannot start on this host and `--allow-no-sandbox` was not given. */
export class SandboxRefusedError extends VidError {
  override name = "SandboxRefusedError";
  constructor(message: string, cause: unknown) {
    super(message, { flag: "--allow-no-sandbox", exitCode: EXIT_FAILED, cause });
  }
}

/** Options of {@linkcode configureServerSandbox}. */
export interface ServerSandboxOptions {
  /** `--render-user`: the account browsers run as when the server runs as root. */
  renderUser?: string;
  /** `--allow-no-sandbox`: run without the sandbox where it cannot start, warning once. */
  allowNoSandbox?: boolean;
  /** Launch one browser now to find out whether the sandbox starts (local renders). */
  probe?: boolean;
  /** Told when the sandbox cannot start and renders go on without it. */
  onWarning?: (message: string) => void;
}

/**
 * Sets the process's browser sandbox for `vid server` and returns it: `required`, as the
 * render user when this process is root; `preferred` with `allowNoSandbox`. Its ffmpeg and
 * ffprobe runs get the same user and `SERVER_PROCESS_LIMITS` (see `process_runner.ts`).
 *
 * @throws {RenderUserError} The render user is missing, is root, or is named while this
 * process is not root (only root can start a process as another account).
 * @throws {SandboxRefusedError} The probe's browser could not start its sandbox.
 *
 * @example
 * ```ts no_run
 * const policy = await configureServerSandbox({ probe: true });
 * console.log(policy.user?.name ?? "this user"); // "vid-render" when run as root
 * ```
 */
export async function configureServerSandbox(
  options: ServerSandboxOptions = {},
): Promise<SandboxPolicy> {
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  let user: RenderUser | undefined;
  if (options.renderUser !== undefined && !root) {
    const self = await lookupUser(options.renderUser);
    if (self?.uid !== process.getuid?.()) {
      throw new RenderUserError(
        `only a server run as root can start browsers as another account; this one runs ` +
          `as uid ${process.getuid?.()}, and its browsers run as that user (leave the flag out)`,
      );
    }
  }
  if (root) {
    const names = options.renderUser !== undefined ? [options.renderUser] : DEFAULT_RENDER_USERS;
    for (const name of names) {
      user = await lookupUser(name);
      if (user) break;
    }
    if (!user) {
      throw new RenderUserError(
        options.renderUser !== undefined
          ? `no account ${JSON.stringify(options.renderUser)} on this host; create it ` +
            `(useradd --system --no-create-home --shell /usr/sbin/nologin ` +
            `${options.renderUser}) or name another`
          : `none of ${DEFAULT_RENDER_USERS.join(", ")} exists to run render browsers as; ` +
            "run `deno task setup` as root (it creates vid-render) or name an unprivileged account",
      );
    }
    if (user.uid === 0) {
      throw new RenderUserError(
        `${user.name} is root; render browsers run tenants' code and need an unprivileged account`,
      );
    }
  }
  const warn = options.onWarning ?? ((message: string) => console.error(`warning: ${message}`));
  const policy: SandboxPolicy = {
    sandbox: options.allowNoSandbox ? "preferred" : "required",
    user,
    onUnavailable: (reason) =>
      warn(
        `Chromium's sandbox cannot start on this host (${reason}); render browsers run ` +
          `without it (--allow-no-sandbox)${user ? ` as ${user.name}` : ""}`,
      ),
  };
  setSandboxPolicy(policy);
  // ffmpeg and ffprobe read tenants' media: as the same account, under limits.
  setProcessPolicy({ user, limits: SERVER_PROCESS_LIMITS });
  if (options.probe && !options.allowNoSandbox) {
    try {
      const mode = await findHeadlessShell() ? "beginframe" : "screenshot";
      await (await launchBrowser({ mode })).close();
    } catch (error) {
      if (!(error instanceof SandboxUnavailableError)) {
        // A missing or broken Chromium is each render's error to report, as before.
        return policy;
      }
      setSandboxPolicy(undefined);
      throw new SandboxRefusedError(
        `Chromium's sandbox cannot start on this host (${error.reason}). Render pages run ` +
          `tenants' JavaScript: without the sandbox, one renderer exploit runs as ` +
          `${user?.name ?? "this server's user"} with everything it can reach. Allow ` +
          "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; in a " +
          "container, a seccomp profile that permits them), or start with " +
          "--allow-no-sandbox to accept the risk",
        error,
      );
    }
  }
  return policy;
}

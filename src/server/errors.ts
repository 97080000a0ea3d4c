/**
 * API errors: every failure of the hosted API answers `{"error": {"code", "message",
 * "field"?}}` with a stable code (see api/openapi.yaml).
 *
 * @module
 */

/** The stable error codes of the API. */
export type ErrorCode =
  | "vid_unauthorized"
  | "vid_forbidden"
  | "vid_not_found"
  | "vid_invalid_request"
  | "vid_project_invalid"
  | "vid_payload_too_large"
  | "vid_idempotency_conflict"
  | "vid_insufficient_credits"
  | "vid_asset_not_ready"
  | "vid_internal";

/** An error the API answers with its status and body. */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: ErrorCode;
  readonly field?: string;
  constructor(status: number, code: ErrorCode, message: string, field?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }

  /** The JSON body. */
  toJSON(): { error: { code: ErrorCode; message: string; field?: string } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.field !== undefined ? { field: this.field } : {}),
      },
    };
  }
}

/** 400 naming a request field. */
export function invalid(field: string, message: string): ApiError {
  return new ApiError(400, "vid_invalid_request", `${field}: ${message}`, field);
}

/** 404 for an object this account cannot see. */
export function notFound(what: string, id: string): ApiError {
  return new ApiError(404, "vid_not_found", `no ${what} ${id} in this account`);
}

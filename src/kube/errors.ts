// API errors: one typed error for every non-2xx answer (and for a watch's ERROR event, which
// carries the same Status object), plus the predicates the rest of the code branches on. Network
// failures stay Node's own errors (they carry a `code`); the predicates classify both.

/** ApiError is a non-2xx answer of the API server, or a Status received as a watch ERROR event. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** HTTP status (the Status object's `code`). */
  readonly status: number;
  /** The Status object's `reason` (NotFound, Conflict, Expired, ...), or "" when there was none. */
  readonly reason: string;
  /** Seconds the server asked us to wait (Retry-After header or Status details), or null. */
  readonly retryAfterSeconds: number | null;
  /**
   * namesObject: the request named the object it was about (its subject), and the Status's
   * details name exactly that object: `details.name` the name asked for, `details.kind` its
   * resource and `details.group` its group, as the API server's answer for a missing object
   * does. Anything else, a 404 naming no object ("the server could not find the requested
   * resource"), or one a gateway or proxy re-wrapped with other details, HTML or plain text, is
   * about the URL or the path to it, never proof that the object is absent.
   */
  readonly namesObject: boolean;
  /**
   * causes are the Status's `details.causes`: for a 422, each field that does not validate and
   * why (what `explain` names; nothing else branches on them).
   */
  readonly causes: readonly StatusCause[];

  constructor(status: number, reason: string, message: string, retryAfterSeconds: number | null = null, namesObject = false, causes: readonly StatusCause[] = []) {
    super(message);
    this.status = status;
    this.reason = reason;
    this.retryAfterSeconds = retryAfterSeconds;
    this.namesObject = namesObject;
    this.causes = causes;
  }

  /**
   * ApiError.fromStatus builds the error from a metav1.Status body (or anything else the server
   * sent). httpStatus wins over the body's `code`: a proxy in front of the API server may answer
   * with a body that is not a Status at all. subject is the object the request was about, if any.
   */
  static fromStatus(body: unknown, httpStatus?: number, retryAfterHeader?: string | null, subject?: Subject): ApiError {
    const s = isRecord(body) ? body : {};
    const code = httpStatus ?? (typeof s['code'] === 'number' ? s['code'] : 0);
    const reason = typeof s['reason'] === 'string' ? s['reason'] : '';
    const message = typeof s['message'] === 'string' && s['message'] !== '' ? s['message'] : `HTTP ${code}${reason ? ` ${reason}` : ''}`;
    const named = subject !== undefined && namesSubject(s['details'], subject);
    return new ApiError(code, reason, message, retryAfterSeconds(retryAfterHeader, s['details']), named, causesOf(s['details']));
  }
}

/** StatusCause is one entry of a Status's details.causes (metav1.StatusCause). */
export interface StatusCause {
  field: string;
  reason: string;
  message: string;
}

function causesOf(details: unknown): StatusCause[] {
  const causes = isRecord(details) ? details['causes'] : undefined;
  if (!Array.isArray(causes)) return [];
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  return causes.filter(isRecord).map((c) => ({ field: text(c['field']), reason: text(c['reason']), message: text(c['message']) }));
}

/** Subject is the one object a request is about: its API group ("" for core), plural resource and name. */
export interface Subject {
  group: string;
  resource: string;
  name: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** namesSubject: a Status's details name exactly the subject (the API server leaves group out for the core group). */
function namesSubject(details: unknown, subject: Subject): boolean {
  if (!isRecord(details)) return false;
  const group = details['group'] === undefined ? '' : details['group'];
  return details['name'] === subject.name && details['kind'] === subject.resource && group === subject.group;
}

function retryAfterSeconds(header: string | null | undefined, details: unknown): number | null {
  const fromHeader = retryAfterHeaderSeconds(header);
  if (fromHeader !== null) return fromHeader;
  if (isRecord(details) && typeof details['retryAfterSeconds'] === 'number') return details['retryAfterSeconds'];
  return null;
}

/** retryAfterHeaderSeconds reads a Retry-After header: seconds, or an HTTP date; null when absent or unreadable. */
export function retryAfterHeaderSeconds(header: string | null | undefined): number | null {
  if (header == null || header === '') return null;
  const n = Number(header);
  if (Number.isFinite(n) && n >= 0) return n;
  const at = Date.parse(header); // Retry-After may also be an HTTP date.
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function statusOf(err: unknown): number | null {
  return err instanceof ApiError ? err.status : null;
}

/** isNotFound: 404, for whatever reason; see isObjectNotFound and isResourceNotServed. */
export function isNotFound(err: unknown): boolean {
  return statusOf(err) === 404;
}

/**
 * isObjectNotFound: a 404 whose Status names the very object the request asked for (see
 * namesObject): the resource is served and this object does not exist. Only this answer may read
 * as "gone".
 */
export function isObjectNotFound(err: unknown): boolean {
  return isNotFound(err) && (err as ApiError).namesObject;
}

/**
 * isResourceNotServed: any other 404 ("the server could not find the requested resource", or a
 * gateway's page): a CRD version switched to `served: false`, a CRD not installed, an aggregated
 * API or a gateway in a bad state. It says nothing about any object, and is transient.
 */
export function isResourceNotServed(err: unknown): boolean {
  return isNotFound(err) && !(err as ApiError).namesObject;
}

/** isConflict: 409, e.g. a write carrying a stale resourceVersion. */
export function isConflict(err: unknown): boolean {
  return statusOf(err) === 409;
}

/**
 * isGone: 410, the resourceVersion (or continue token) is older than etcd's compaction. A watch
 * reports it as an ERROR event with code 410 and reason "Expired" (or "Gone"); a list or a watch
 * request may also answer 410 directly. The cure is a fresh list.
 */
export function isGone(err: unknown): boolean {
  return statusOf(err) === 410 || (err instanceof ApiError && (err.reason === 'Expired' || err.reason === 'Gone'));
}

/** isTooManyRequests: 429 (API priority and fairness, or max-in-flight); see retryAfterSeconds. */
export function isTooManyRequests(err: unknown): boolean {
  return statusOf(err) === 429;
}

/** isUnauthorized: 401, the credentials were refused. */
export function isUnauthorized(err: unknown): boolean {
  return statusOf(err) === 401;
}

/** isForbidden: 403, authenticated but not allowed (RBAC), or refused by an admission plugin. */
export function isForbidden(err: unknown): boolean {
  return statusOf(err) === 403;
}

/**
 * isNamespaceTerminating: a create refused because its namespace is being deleted, which no
 * permission changes. The NamespaceLifecycle admission plugin answers it as a 403 Forbidden
 * ("unable to create new content in namespace X because it is being terminated") with one cause
 * of type NamespaceTerminating (JSON key `reason`), field metadata.namespace
 * (k8s.io/apiserver, pkg/admission/plugin/namespace/lifecycle/admission.go, the same in 1.31, 1.33
 * and 1.37).
 */
export function isNamespaceTerminating(err: unknown): boolean {
  return isForbidden(err) && (err as ApiError).causes.some((c) => c.reason === NAMESPACE_TERMINATING_CAUSE);
}

/** NAMESPACE_TERMINATING_CAUSE is k8s.io/api/core/v1's NamespaceTerminatingCause. */
export const NAMESPACE_TERMINATING_CAUSE = 'NamespaceTerminating';

/** ForbiddenCause tells a 403 the install can fix (RBAC, an admission policy) from one of a namespace being deleted. */
export type ForbiddenCause = 'namespace-terminating' | 'denied';

/** forbiddenCause is the cause of a 403, or null for any other answer. */
export function forbiddenCause(err: unknown): ForbiddenCause | null {
  if (!isForbidden(err)) return null;
  return isNamespaceTerminating(err) ? 'namespace-terminating' : 'denied';
}

const RETRYABLE_NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** isNetworkError: the request never got a complete answer (refused, reset, timed out). */
export function isNetworkError(err: unknown): boolean {
  if (!(err instanceof Error) || err instanceof ApiError || isAbort(err)) return false;
  const code = (err as { code?: unknown }).code;
  return (typeof code === 'string' && RETRYABLE_NETWORK_CODES.has(code)) || err.message === 'socket hang up';
}

/** isAbort: the caller's AbortSignal fired; never retried. */
export function isAbort(err: unknown): boolean {
  return err instanceof Error && (err.name === 'AbortError' || (err as { code?: unknown }).code === 'ABORT_ERR');
}

/** isRetryable: worth trying again later: 5xx, 429, or a network failure. */
export function isRetryable(err: unknown): boolean {
  const status = statusOf(err);
  if (status !== null) return status >= 500 || status === 429;
  return isNetworkError(err);
}

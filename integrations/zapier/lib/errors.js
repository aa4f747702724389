'use strict';

// The service's answers as Zapier errors: the one mapping every request of the app goes
// through. Our errors are {error, error_description}. Core has already turned 429 into
// ThrottledError (using the integer Retry-After) and 401 into RefreshAuthError before the
// afterResponse hook runs.

// When the service answers 5xx without a Retry-After: wait this long before Zapier retries.
const DEFAULT_RETRY_SECONDS = 60;

const RECONNECT =
  'Reconnect your Review Requests account in Zapier (My Apps > Review Requests > Reconnect) ' +
  'and approve access again.';

const retryDelay = (response, fallback) => {
  const seconds = parseInt(response.getHeader('retry-after'), 10);
  return Number.isNaN(seconds) || seconds < 1 ? fallback : seconds;
};

// An answer's {error, error_description}; {} when its body is not JSON.
const errorBody = (response) => {
  try {
    return JSON.parse(response.content || '{}') || {};
  } catch (err) {
    return {};
  }
};

// Throws the Zapier error for an error answer (status >= 400); returns any other answer. A step
// that answers some statuses its own way requests with skipThrowForStatus, handles those, then
// passes the rest here.
const throwForError = (response, z) => {
  if (response.status < 400) {
    return response;
  }
  const body = errorBody(response);
  const code = body.error || (response.status >= 500 ? 'server_error' : 'invalid_request');
  const description = body.error_description || `The service answered HTTP ${response.status}.`;
  if (response.status === 429 || response.status >= 500) {
    // Transient: busy or briefly unavailable. Zapier retries the step after the delay; a create
    // is safe to retry (Idempotency-Key), a cancel of a cancelled request halts.
    throw new z.errors.ThrottledError(
      `Review Requests is temporarily unavailable (${description}); Zapier will retry.`,
      retryDelay(response, DEFAULT_RETRY_SECONDS),
    );
  }
  if (response.status === 409 && code === 'idempotency_in_progress') {
    // The same request is still being processed: retry shortly instead of failing the run.
    throw new z.errors.ThrottledError(description, retryDelay(response, 5));
  }
  // Authentication, in plain words.
  if (code === 'insufficient_scope') {
    throw new z.errors.ExpiredAuthError(
      `This Review Requests connection is not allowed to do this (it was approved without ` +
        `the permission this step needs). ${RECONNECT}`,
    );
  }
  if (code === 'invalid_grant') {
    throw new z.errors.ExpiredAuthError(
      `Your Review Requests connection has expired or was disconnected (or signing in took too long). ${RECONNECT}`,
    );
  }
  if (code === 'invalid_client') {
    throw new z.errors.Error(
      'Review Requests did not recognise this Zapier app (its client ID or secret is wrong). ' +
        'Ask the service administrator to check the app registration.',
      code,
      response.status,
    );
  }
  throw new z.errors.Error(description, code, response.status);
};

// The afterResponse hook: every answer, except those of requests made with skipThrowForStatus
// (their step calls throwForError itself).
const handleErrors = (response, z) =>
  response.skipThrowForStatus ? response : throwForError(response, z);

module.exports = { errorBody, handleErrors, throwForError };

'use strict';

// Bearer token on every request to our API (not on the token endpoint, which takes client
// credentials in the body).
const includeBearerToken = (request, z, bundle) => {
  if (bundle.authData && bundle.authData.access_token && !request.url.includes('/token')) {
    request.headers = request.headers || {};
    request.headers.Authorization = `Bearer ${bundle.authData.access_token}`;
  }
  return request;
};

// Our errors are {error, error_description}. Core already turned 429 into ThrottledError (using
// the integer Retry-After) and 401 into RefreshAuthError before this runs.
const handleErrors = (response, z) => {
  if (response.status < 400) {
    return response;
  }
  let body = {};
  try {
    body = JSON.parse(response.content || '{}');
  } catch (err) {
    body = {};
  }
  const description = body.error_description || `The service answered HTTP ${response.status}.`;
  if (response.status === 409 && body.error === 'idempotency_in_progress') {
    // The same request is still being processed: retry shortly instead of failing the run.
    const retryAfter = parseInt(response.getHeader('retry-after'), 10);
    throw new z.errors.ThrottledError(description, Number.isNaN(retryAfter) ? 5 : retryAfter);
  }
  if (response.status >= 500) {
    // Transient on our side: let Zapier's own retry policy handle it.
    throw new z.errors.Error(description, body.error || 'server_error', response.status);
  }
  throw new z.errors.Error(description, body.error || 'invalid_request', response.status);
};

module.exports = { handleErrors, includeBearerToken };

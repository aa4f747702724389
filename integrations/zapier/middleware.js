'use strict';

// The app's request hooks: the bearer token before, the error mapping (lib/errors.js) after.

const { handleErrors } = require('./lib/errors');

// Bearer token on every request to our API (not on the token endpoint, which takes client
// credentials in the body).
const includeBearerToken = (request, z, bundle) => {
  if (bundle.authData && bundle.authData.access_token && !request.url.includes('/token')) {
    request.headers = request.headers || {};
    request.headers.Authorization = `Bearer ${bundle.authData.access_token}`;
  }
  return request;
};

module.exports = { handleErrors, includeBearerToken };

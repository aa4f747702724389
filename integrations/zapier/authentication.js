'use strict';

const { apiUrl, oauthUrl } = require('./config');

// Both grants post form-encoded client credentials (client_secret_post), as our token endpoint
// and RFC 6749 expect. The service rotates refresh tokens, so the new one is always returned.
const tokenRequest = async (z, body) => {
  const response = await z.request({
    url: oauthUrl('token'),
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: {
      client_id: process.env.CLIENT_ID,
      client_secret: process.env.CLIENT_SECRET,
      ...body,
    },
  });
  return {
    access_token: response.data.access_token,
    refresh_token: response.data.refresh_token,
  };
};

const getAccessToken = (z, bundle) =>
  tokenRequest(z, {
    grant_type: 'authorization_code',
    code: bundle.inputData.code,
    redirect_uri: bundle.inputData.redirect_uri,
    // Zapier generates the PKCE pair (enablePkce); the verifier comes back here.
    code_verifier: bundle.inputData.code_verifier,
  });

const refreshAccessToken = (z, bundle) =>
  tokenRequest(z, { grant_type: 'refresh_token', refresh_token: bundle.authData.refresh_token });

// 2xx with the owner's profile when the token works, 401 when it does not (which makes Zapier
// refresh, then ask the user to reconnect if the refresh token is dead too).
const test = async (z) => {
  const response = await z.request({ url: apiUrl('me') });
  return response.data;
};

module.exports = {
  type: 'oauth2',
  oauth2Config: {
    authorizeUrl: {
      url: oauthUrl('authorize'),
      params: {
        client_id: '{{process.env.CLIENT_ID}}',
        state: '{{bundle.inputData.state}}',
        redirect_uri: '{{bundle.inputData.redirect_uri}}',
        response_type: 'code',
      },
    },
    getAccessToken,
    refreshAccessToken,
    autoRefresh: true,
    enablePkce: true,
    // Space-delimited (RFC 6749 §3.3); a comma would arrive as one unknown scope.
    scope: 'read write',
  },
  fields: [],
  test,
  // Built from the test's response (bundle.inputData): never a secret, Zapier shows it as is.
  connectionLabel: (z, bundle) => {
    const { business_name: name, email } = bundle.inputData;
    return name ? `${name} (${email})` : email;
  },
};

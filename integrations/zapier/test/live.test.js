/* Contract tests of the Zapier app against the live service, as Zapier's runtime runs it.
 *
 * Started by tests/zapier/test_zapier_app.py, which runs the real service on 127.0.0.1, registers
 * an OAuth client, obtains an authorization code through the login and consent pages, and passes
 * everything in the environment. Run alone only with those variables set.
 */
/* globals describe, it, expect */

const zapier = require('zapier-platform-core');
const PlainInputFieldSchema = require('zapier-platform-schema/lib/schemas/PlainInputFieldSchema');

const App = require('../index');

const appTester = zapier.createAppTester(App);
const env = process.env;
const required = ['BASE_URL', 'CLIENT_ID', 'CLIENT_SECRET', 'AUTH_CODE', 'CODE_VERIFIER',
  'REDIRECT_URI', 'OWNER_EMAIL', 'OWNER_BUSINESS_NAME', 'THROTTLED_ACCESS_TOKEN'];
const missing = required.filter((name) => !env[name]);
if (missing.length) {
  throw new Error(`missing environment: ${missing.join(', ')} (run through pytest)`);
}

const contact = {
  first_name: 'Jane',
  last_name: 'Smith',
  email: 'jane.zapier@example.com',
  mobile_phone_number: '(415) 555-2671',
  delay_hours: '2',
  metadata: { source: 'zapier-test' },
};

const state = {};

describe('authentication', () => {
  it('builds the authorize URL with client, state, redirect and both scopes', async () => {
    const url = await appTester(App.authentication.oauth2Config.authorizeUrl, {
      inputData: { state: 'st4te', redirect_uri: env.REDIRECT_URI },
    });
    const parsed = new URL(url);
    expect(`${parsed.origin}${parsed.pathname}`).toBe(`${env.BASE_URL}/api/oauth/zapier/authorize`);
    expect(parsed.searchParams.get('client_id')).toBe(env.CLIENT_ID);
    expect(parsed.searchParams.get('state')).toBe('st4te');
    expect(parsed.searchParams.get('redirect_uri')).toBe(env.REDIRECT_URI);
    expect(parsed.searchParams.get('response_type')).toBe('code');
    expect(App.authentication.oauth2Config.scope).toBe('read write');
    expect(App.authentication.oauth2Config.enablePkce).toBe(true);
  });

  it('exchanges the code and PKCE verifier for tokens', async () => {
    const tokens = await appTester(App.authentication.oauth2Config.getAccessToken, {
      inputData: {
        code: env.AUTH_CODE,
        redirect_uri: env.REDIRECT_URI,
        code_verifier: env.CODE_VERIFIER,
      },
    });
    expect(tokens.access_token).toEqual(expect.any(String));
    expect(tokens.refresh_token).toEqual(expect.any(String));
    state.authData = tokens;
  });

  it('tests the connection with /me and labels it with the business', async () => {
    const me = await appTester(App.authentication.test, { authData: state.authData });
    expect(me.email).toBe(env.OWNER_EMAIL);
    expect(me.business_name).toBe(env.OWNER_BUSINESS_NAME);
    const label = await appTester(App.authentication.connectionLabel, {
      authData: state.authData,
      inputData: me,
    });
    expect(label).toBe(`${env.OWNER_BUSINESS_NAME} (${env.OWNER_EMAIL})`);
  });

  it('turns a 401 into RefreshAuthError, then refreshes and works again', async () => {
    const stale = { ...state.authData, access_token: 'revoked-or-expired' };
    await expect(appTester(App.authentication.test, { authData: stale })).rejects.toMatchObject({
      name: 'RefreshAuthError',
    });
    const refreshed = await appTester(App.authentication.oauth2Config.refreshAccessToken, {
      authData: state.authData,
    });
    expect(refreshed.access_token).not.toBe(state.authData.access_token);
    expect(refreshed.refresh_token).not.toBe(state.authData.refresh_token);
    state.authData = refreshed;
    const me = await appTester(App.authentication.test, { authData: state.authData });
    expect(me.email).toBe(env.OWNER_EMAIL);
  });
});

describe('Send Review Request', () => {
  it('loads input fields from the service that pass Zapier schema checks', async () => {
    // Core resolves static and dynamic fields and, under test, runs its own checks (keys etc.).
    const fields = await appTester(App.creates.send_review_request.operation.inputFields, {
      authData: state.authData,
      inputData: {},
    });
    const keys = fields.map((field) => field.key);
    expect(keys).toEqual(expect.arrayContaining(['request_key', 'first_name', 'last_name',
      'email', 'mobile_phone_number', 'company_name', 'delay_hours', 'metadata']));
    // Each field the service sends must satisfy Zapier's own input-field schema.
    const errors = fields.flatMap((field) =>
      PlainInputFieldSchema.validate(field).errors.map((error) => `${field.key}: ${error.stack}`),
    );
    expect(errors).toEqual([]);
  });

  it('creates a review request and returns it', async () => {
    const request = await appTester(App.creates.send_review_request.operation.perform, {
      authData: state.authData,
      inputData: contact,
    });
    expect(request.status).toBe('scheduled');
    expect(request.contact_email).toBe(contact.email);
    expect(request.contact_phone).toBe('+14155552671');
    expect(request.contact_name).toBe('Jane Smith');
    state.request = request;
  });

  it('replays a retried create instead of creating again', async () => {
    const again = await appTester(App.creates.send_review_request.operation.perform, {
      authData: state.authData,
      inputData: { ...contact },
    });
    expect(again).toEqual(state.request);
  });

  it('halts (without failing the Zap) when the person already has a request', async () => {
    await expect(
      appTester(App.creates.send_review_request.operation.perform, {
        authData: state.authData,
        inputData: { ...contact, request_key: 'another-job-42' },
      }),
    ).rejects.toMatchObject({ name: 'HaltedError', message: expect.stringContaining('Jane Smith') });
  });

  it('maps a 400 to a Zapier error carrying the service description', async () => {
    const error = await appTester(App.creates.send_review_request.operation.perform, {
      authData: state.authData,
      inputData: { first_name: 'Nobody', delay_hours: 'soon' },
    }).catch((err) => err);
    expect(error.name).toBe('AppError');
    const { message, code, status } = JSON.parse(error.message);
    expect(status).toBe(400);
    expect(code).toBe('invalid_request');
    expect(message).toMatch(/delay_hours/);
  });
});

describe('rate limit', () => {
  it('turns a 429 into ThrottledError with the integer Retry-After as delay', async () => {
    // pytest already spent this connection's hourly allowance.
    const error = await appTester(App.authentication.test, {
      authData: { access_token: env.THROTTLED_ACCESS_TOKEN },
    }).catch((err) => err);
    expect(error.name).toBe('ThrottledError');
    const { delay } = JSON.parse(error.message);
    expect(Number.isInteger(delay)).toBe(true);
    expect(delay).toBeGreaterThan(0);
  });
});

/* Contract tests of the Zapier app against the live service, as Zapier's runtime runs it.
 *
 * Started by tests/e2e/processes/test_zapier_app.py, which runs the real service on 127.0.0.1,
 * registers an OAuth client, obtains an authorization code through the login and consent pages,
 * and passes everything in the environment. Run alone only with those variables set.
 */
/* globals describe, it, expect */

const crypto = require('node:crypto');
const http = require('node:http');

const zapier = require('zapier-platform-core');
const PlainInputFieldSchema = require('zapier-platform-schema/lib/schemas/PlainInputFieldSchema');

const App = require('../index');

const appTester = zapier.createAppTester(App);
const env = process.env;
const required = ['BASE_URL', 'CLIENT_ID', 'CLIENT_SECRET', 'AUTH_CODE', 'CODE_VERIFIER',
  'REDIRECT_URI', 'OWNER_EMAIL', 'OWNER_BUSINESS_NAME', 'THROTTLED_ACCESS_TOKEN',
  'CANCEL_REQUEST_ID', 'OTHER_OWNER_REQUEST_ID', 'CLICKED_REQUEST_ID', 'FAILED_REQUEST_ID',
  'COMPLETED_REQUEST_ID', 'FEEDBACK_TEXT', 'LIVE_CLICK_REQUEST_ID', 'LIVE_CLICK_PATH'];
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
  it('has static input fields for exactly the keys the service accepts', async () => {
    const fields = App.creates.send_review_request.operation.inputFields;
    const keys = fields.map((field) => field.key);
    const service = await fetch(`${env.BASE_URL}/api/zapier/send-review-request/fields`, {
      headers: { Authorization: `Bearer ${state.authData.access_token}` },
    }).then((response) => response.json());
    // location_id is always offered (a dropdown of the user's locations); the service lists it
    // only to a user with more than one location, then as the same dropdown.
    const serviceKeys = service.fields.map((field) => field.key);
    expect(keys).toEqual(['request_key', 'location_id', ...serviceKeys.filter((k) => k !== 'location_id')]);
    const offered = service.fields.find((field) => field.key === 'location_id');
    if (offered) {
      expect(offered.dynamic).toBe(fields[1].dynamic);
    }
    // Each field satisfies Zapier's own input-field schema, and explains more than its label.
    const errors = fields.flatMap((field) =>
      PlainInputFieldSchema.validate(field).errors.map((error) => `${field.key}: ${error.stack}`),
    );
    expect(errors).toEqual([]);
    for (const field of fields) {
      expect(field.helpText.length).toBeGreaterThan(field.label.length + 10);
    }
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

// --- Outcomes: triggers (performList), Find Contact, Cancel Review Request, REST hooks ---------

const OUTCOME_KEYS = ['id', 'event', 'occurred_at', 'review_request_id', 'contact_id',
  'contact_name', 'contact_email', 'contact_phone', 'status', 'scheduled_for', 'message',
  'channel', 'detail', 'details', 'location_id', 'location_name'];

const performList = (key) =>
  appTester(App.triggers[key].operation.performList, { authData: state.authData, inputData: {} });

describe('triggers (performList: the Zap editor sample from the list endpoint)', () => {
  it('New Review Click lists the clicked request, shaped like its sample', async () => {
    const items = await performList('new_review_click');
    expect(items.map((item) => item.review_request_id)).toEqual([env.CLICKED_REQUEST_ID]);
    expect(Object.keys(items[0]).sort()).toEqual([...OUTCOME_KEYS].sort());
    expect(Object.keys(App.triggers.new_review_click.operation.sample).sort())
      .toEqual([...OUTCOME_KEYS].sort());
    expect(items[0]).toMatchObject({ event: 'review_request.clicked', status: 'clicked' });
    expect(items[0].detail).toMatch(/Clicked through to/);
  });

  it('New Private Feedback carries the feedback text', async () => {
    const items = await performList('new_private_feedback');
    expect(items.map((item) => item.detail)).toEqual([env.FEEDBACK_TEXT]);
    expect(items[0].event).toBe('feedback.received');
  });

  it('Contact Opted Out, Review Request Failed and Completed list their requests', async () => {
    const optedOut = await performList('contact_opted_out');
    expect(optedOut.map((item) => item.status)).toEqual(['opted_out']);
    expect(optedOut[0].detail).toBeTruthy();
    const failed = await performList('review_request_failed');
    expect(failed.map((item) => item.review_request_id)).toEqual([env.FAILED_REQUEST_ID]);
    expect(failed[0].detail).toMatch(/Mailbox does not exist/);
    const completed = await performList('review_request_completed');
    expect(completed.map((item) => item.review_request_id)).toEqual([env.COMPLETED_REQUEST_ID]);
    expect(new Set(completed.map((item) => item.id)).size).toBe(completed.length);
  });

  it('turns a hook body (docs/events.md) into the same item (perform)', async () => {
    const request = { id: env.CLICKED_REQUEST_ID, contact_id: 'c1', contact_name: 'Jane Smith',
      contact_email: 'jane@example.com', contact_phone: null,
      scheduled_for: '2026-11-21T15:00:00Z', status: 'sent', message: 'Sent.', channel: 'email' };
    const cases = [
      ['new_private_feedback', 'feedback.received', { feedback: { id: '4', text: 'Great work' } }, 'Great work'],
      ['new_review_click', 'review_request.clicked', { click: { site: 'Google', url: 'https://g.page/r/x' } }, 'Google'],
      ['contact_opted_out', 'contact.opted_out', { how: 'sms_reply' }, 'sms_reply'],
      ['review_request_failed', 'review_request.failed', { reason: 'mailbox does not exist' }, 'mailbox does not exist'],
    ];
    for (const [key, type, extra, detail] of cases) {
      const [item] = await appTester(App.triggers[key].operation.perform, {
        authData: state.authData,
        cleanedRequest: { id: `evt-${key}`, type, occurred_at: '2026-11-21T18:40:00Z',
          data: { ...request, ...extra } },
      });
      expect(Object.keys(item).sort()).toEqual([...OUTCOME_KEYS].sort());
      expect(item).toMatchObject({ id: `evt-${key}`, event: type, review_request_id: request.id,
        contact_id: 'c1', contact_name: 'Jane Smith', channel: 'email', detail });
      expect(item.details).toMatchObject(extra);
    }
  });
});

describe('locations', () => {
  it('the hidden locations trigger lists the user\'s locations for every Location dropdown', async () => {
    const trigger = App.triggers.locations;
    expect(trigger.display.hidden).toBe(true);
    const locations = await appTester(trigger.operation.perform, { authData: state.authData, inputData: {} });
    expect(locations.length).toBeGreaterThanOrEqual(1);
    for (const location of locations) {
      expect(Object.keys(location).sort()).toEqual(['id', 'name', 'time_zone']);
    }
    const dropdowns = [
      App.creates.send_review_request,
      App.searches.find_contact,
      ...Object.values(App.triggers).filter((t) => t.operation.type === 'hook'),
    ].map((step) => step.operation.inputFields.find((field) => field.key === 'location_id'));
    for (const field of dropdowns) {
      expect(field).toMatchObject({ dynamic: 'locations.id.name', required: false });
    }
    // A request sent at the first location says where it is.
    const sent = await appTester(App.creates.send_review_request.operation.perform, {
      authData: state.authData,
      inputData: { email: 'located@example.com', location_id: locations[0].id },
    });
    expect([sent.location_id, sent.location_name]).toEqual([locations[0].id, locations[0].name]);
    const found = await appTester(App.searches.find_contact.operation.perform, {
      authData: state.authData,
      inputData: { email: 'located@example.com', location_id: locations[0].id },
    });
    expect(found.map((contact) => contact.latest_review_request.id)).toEqual([sent.id]);
  });
});

describe('Find Contact', () => {
  it('finds the contact the create added, by phone in another format, with its request', async () => {
    const found = await appTester(App.searches.find_contact.operation.perform, {
      authData: state.authData,
      inputData: { mobile_phone_number: '415.555.2671' },
    });
    expect(found).toHaveLength(1);
    expect(found[0].id).toBe(state.request.contact_id);
    expect(found[0].latest_review_request.id).toBe(state.request.id);
  });

  it('finds nobody as an empty list (so "or create" sends a review request)', async () => {
    const found = await appTester(App.searches.find_contact.operation.perform, {
      authData: state.authData,
      inputData: { email: 'Nobody@Example.com' },
    });
    expect(found).toEqual([]);
    const pairing = App.searchOrCreates.find_contact;
    expect([pairing.search, pairing.create]).toEqual(['find_contact', 'send_review_request']);
  });
});

describe('Cancel Review Request', () => {
  const cancel = (id) =>
    appTester(App.creates.cancel_review_request.operation.perform, {
      authData: state.authData,
      inputData: { review_request_id: id },
    });

  it('cancels an active request and returns it', async () => {
    const cancelled = await cancel(env.CANCEL_REQUEST_ID);
    expect(cancelled).toMatchObject({ id: env.CANCEL_REQUEST_ID, status: 'cancelled' });
  });

  it('halts, with why, when the request already ended', async () => {
    await expect(cancel(env.CANCEL_REQUEST_ID)).rejects.toMatchObject({
      name: 'HaltedError',
      message: expect.stringContaining('already ended (cancelled'),
    });
  });

  it("says in plain words that another owner's request is not found", async () => {
    const error = await cancel(env.OTHER_OWNER_REQUEST_ID).catch((err) => err);
    expect(error.name).toBe('AppError');
    const { message, status } = JSON.parse(error.message);
    expect(status).toBe(404);
    expect(message).toMatch(/No review request with the ID/);
  });
});

const hooks = () =>
  fetch(`${env.BASE_URL}/api/zapier/hooks`, {
    headers: { Authorization: `Bearer ${state.authData.access_token}` },
  }).then((response) => response.json());

describe('REST hooks', () => {

  it('subscribes each trigger to its event, then unsubscribes', async () => {
    for (const [key, event] of [
      ['new_review_click', 'review_request.clicked'],
      ['new_private_feedback', 'feedback.received'],
    ]) {
      const trigger = App.triggers[key].operation;
      const subscription = await appTester(trigger.performSubscribe, {
        authData: state.authData,
        targetUrl: `http://127.0.0.1:9/zapier-hook/${key}`,
      });
      expect(subscription).toMatchObject({ event, target_url: `http://127.0.0.1:9/zapier-hook/${key}` });
      expect(subscription.id).toBeTruthy();
      expect(subscription.secret).toBeTruthy();
      expect((await hooks()).results.map((hook) => hook.id)).toContain(subscription.id);

      await appTester(trigger.performUnsubscribe, {
        authData: state.authData,
        subscribeData: subscription,
      });
      expect((await hooks()).results.map((hook) => hook.id)).not.toContain(subscription.id);
      // Unsubscribing again (already gone) is not an error.
      await appTester(trigger.performUnsubscribe, {
        authData: state.authData,
        subscribeData: subscription,
      });
    }
  });
});

// What Zapier's hook endpoint is in production: a receiver of the service's signed POSTs.
const startReceiver = () =>
  new Promise((resolve) => {
    const calls = [];
    const server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => {
        calls.push({ path: req.url, headers: req.headers, rawBody: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"success"}');
      });
    });
    server.listen(0, '127.0.0.1', () => resolve({ server, calls, port: server.address().port }));
  });

const waitFor = async (predicate, timeoutMs, what) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const found = predicate();
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
};

// The JavaScript snippet of docs/events.md, as a receiver would use it.
const signatureValid = (secret, headers, rawBody, toleranceSeconds = 300) => {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  if (Math.abs(Date.now() / 1000 - Number(timestamp)) > toleranceSeconds) return false;
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const expected = crypto.createHmac('sha256', key).update(`${id}.${timestamp}.${rawBody}`).digest();
  return headers['webhook-signature'].split(' ').some((sig) => {
    const [version, value] = sig.split(',');
    const given = Buffer.from(value || '', 'base64');
    return version === 'v1' && given.length === expected.length && crypto.timingSafeEqual(given, expected);
  });
};

describe('a real hook from a click', () => {
  it('subscribes New Review Click, receives the signed event of a click, performs it, unsubscribes', async () => {
    const receiver = await startReceiver();
    try {
      const trigger = App.triggers.new_review_click.operation;
      const targetUrl = `http://127.0.0.1:${receiver.port}/zapier-hook/new_review_click`;
      const subscription = await appTester(trigger.performSubscribe, {
        authData: state.authData,
        targetUrl,
      });
      expect(subscription).toMatchObject({ event: 'review_request.clicked', target_url: targetUrl });

      // The contact opens the review link of the e-mail in a browser.
      const clicked = await fetch(`${env.BASE_URL}${env.LIVE_CLICK_PATH}`, {
        redirect: 'manual',
        headers: { 'User-Agent': 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) Mobile/15E148 Safari/604.1' },
      });
      expect(clicked.status).toBe(302);
      expect(clicked.headers.get('location')).toBe('https://g.page/r/acme/review');

      // The worker delivers it within seconds (kicked when the click committed).
      const [call] = await waitFor(() => (receiver.calls.length ? receiver.calls : null), 20000,
        "the click's webhook");
      expect(receiver.calls).toHaveLength(1);
      expect(call.path).toBe('/zapier-hook/new_review_click');
      expect(call.headers['content-type']).toBe('application/json');
      expect(signatureValid(subscription.secret, call.headers, call.rawBody)).toBe(true);
      const tampered = call.rawBody.replace('"clicked"', '"sent"');
      expect(signatureValid(subscription.secret, call.headers, tampered)).toBe(false);
      const body = JSON.parse(call.rawBody);
      expect(call.headers['webhook-id']).toBe(body.id);

      // What Zapier does with the POST: the trigger's perform, on the parsed body.
      const items = await appTester(trigger.perform, {
        authData: state.authData,
        cleanedRequest: body,
      });
      expect(items).toHaveLength(1);
      expect(Object.keys(items[0]).sort()).toEqual([...OUTCOME_KEYS].sort());
      expect(items[0]).toMatchObject({
        id: body.id,
        event: 'review_request.clicked',
        review_request_id: env.LIVE_CLICK_REQUEST_ID,
        status: 'clicked',
        contact_email: 'liveclick@x.example',
        channel: 'email',
        detail: 'Google',
      });
      expect(items[0].details.click).toMatchObject({ site: 'Google', url: 'https://g.page/r/acme/review' });

      await appTester(trigger.performUnsubscribe, { authData: state.authData, subscribeData: subscription });
      expect((await hooks()).results.map((hook) => hook.id)).not.toContain(subscription.id);
    } finally {
      await new Promise((resolve) => receiver.server.close(resolve));
    }
  }, 45000);
});

describe('error mapping (a response as the network would give it)', () => {
  const { handleErrors } = require('../middleware');
  const z = { errors: zapier.errors };
  const response = (status, body, retryAfter) => ({
    status,
    content: JSON.stringify(body),
    getHeader: (name) => (name.toLowerCase() === 'retry-after' ? retryAfter : undefined),
  });

  it('turns 5xx into ThrottledError with the Retry-After delay, or a minute without one', () => {
    const busy = response(503, { error: 'temporarily_unavailable', error_description: 'DB busy' }, '7');
    expect(() => handleErrors(busy, z)).toThrow(zapier.errors.ThrottledError);
    const thrown = (() => { try { handleErrors(busy, z); } catch (err) { return err; } })();
    expect(JSON.parse(thrown.message).delay).toBe(7);
    const bug = response(500, { error: 'server_error', error_description: 'Oops' });
    const again = (() => { try { handleErrors(bug, z); } catch (err) { return err; } })();
    expect(again.name).toBe('ThrottledError');
    expect(JSON.parse(again.message).delay).toBe(60);
  });

  it('says what to do, in plain words, when the connection lacks a scope or is dead', () => {
    const scope = response(403, { error: 'insufficient_scope', error_description: 'x' });
    expect(() => handleErrors(scope, z)).toThrow(/Reconnect your Review Requests account/);
    const dead = response(400, { error: 'invalid_grant', error_description: 'x' });
    expect(() => handleErrors(dead, z)).toThrow(zapier.errors.ExpiredAuthError);
  });
});

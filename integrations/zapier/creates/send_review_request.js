'use strict';

const { apiUrl } = require('../config');
const { idempotencyKey } = require('../lib/idempotency');
const { locationField } = require('../lib/location');

const REQUEST_KEY_FIELD = 'request_key';

// Static fields (Zap templates and the "find, or create" pairing with Find Contact prefill them
// by key): the keys the service accepts, the same as GET send-review-request/fields lists (a
// test compares the two).
const CONTACT_FIELDS = [
  {
    key: 'first_name',
    label: 'First Name',
    type: 'string',
    required: false,
    helpText: 'The customer\'s first name, used to greet them in the message.',
    placeholder: 'Jane',
  },
  {
    key: 'last_name',
    label: 'Last Name',
    type: 'string',
    required: false,
    helpText: 'The customer\'s last name.',
    placeholder: 'Smith',
  },
  {
    key: 'email',
    label: 'E-mail',
    type: 'string',
    required: false,
    helpText:
      'Where to send the review request by e-mail. Give this, a mobile phone number, or both ' +
      '(follow-ups then use the other channel). A customer with the same e-mail is updated, ' +
      'not added twice.',
    placeholder: 'jane@example.com',
  },
  {
    key: 'mobile_phone_number',
    label: 'Mobile Phone Number',
    type: 'string',
    required: false,
    helpText:
      'Where to send the review request by SMS. Any format: +14155552671 is best; numbers ' +
      'without a country code, like (415) 555-2671, are read in your business\'s country. A ' +
      'customer with the same number is updated, not added twice.',
    placeholder: '+14155552671',
  },
  {
    key: 'company_name',
    label: 'Company Name',
    type: 'string',
    required: false,
    helpText: 'The customer\'s company, if any.',
    placeholder: 'Acme Inc.',
  },
  {
    key: 'delay_hours',
    label: 'Delay (hours)',
    type: 'integer',
    required: false,
    helpText:
      'Whole hours to wait before the first message, from 0 to 8760 (one year), e.g. 24 to ' +
      'ask the day after the job. Leave blank for your business\'s default delay. An SMS that ' +
      'would arrive at night waits for the next morning in the customer\'s time zone.',
    placeholder: '24',
  },
  {
    key: 'metadata',
    label: 'Metadata',
    type: 'string',
    required: false,
    dict: true,
    helpText:
      'Your own key/value data about where the customer came from (e.g. order_id, ' +
      'technician). Kept with the customer and merged on later updates; at most 16 KB.',
  },
];

const perform = async (z, bundle) => {
  const payload = { ...bundle.inputData };
  const requestKey = payload[REQUEST_KEY_FIELD];
  delete payload[REQUEST_KEY_FIELD];

  const response = await z.request({
    url: apiUrl('send-review-request'),
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      'Idempotency-Key': idempotencyKey(payload, requestKey),
    },
    body: payload,
  });

  if (response.status === 200) {
    // Deduplicated: the person already has an active request, or had one within the cooldown.
    // Halt (a soft stop that never switches the Zap off) with the service's explanation.
    throw new z.errors.HaltedError(response.data.message);
  }
  return response.data;
};

module.exports = {
  key: 'send_review_request',
  noun: 'Review Request',
  display: {
    label: 'Send Review Request',
    description:
      'Adds a customer and sends them a review request by SMS or e-mail at the right time, ' +
      'with polite follow-ups. A customer who already has a request is not asked twice.',
  },
  operation: {
    inputFields: [
      {
        key: REQUEST_KEY_FIELD,
        label: 'Request Key',
        type: 'string',
        required: false,
        helpText:
          'Optional. An order, job or booking ID from your trigger. Retries of the same step ' +
          'never create a second request; a different key marks a different job.',
      },
      locationField(
        'Where the review request is sent from (its review sites, sender and time zone). ' +
          'Leave blank for your only location, or the account\'s default location; a team ' +
          'member who may not act there must choose one.',
      ),
      ...CONTACT_FIELDS,
    ],
    perform,
    sample: {
      id: '5f0c8a62-3b9e-4a51-9d1e-2f6c5b7a8d90',
      contact_id: '0b7e4c1a-9f2d-4e63-8a5b-6c1d2e3f4a5b',
      contact_name: 'Jane Smith',
      contact_email: 'jane@example.com',
      contact_phone: '+14155552671',
      scheduled_for: '2026-11-21T15:00:00Z',
      status: 'scheduled',
      message: 'Review request scheduled for Jane Smith by SMS at 2026-11-21 15:00 UTC.',
      location_id: '3f6c2b1e-9a4d-4c8e-b7f1-2d5e8a9c0b1d',
      location_name: 'Downtown',
    },
    outputFields: [
      { key: 'id', label: 'Review Request ID' },
      { key: 'contact_id', label: 'Contact ID' },
      { key: 'contact_name', label: 'Contact Name' },
      { key: 'contact_email', label: 'Contact E-mail' },
      { key: 'contact_phone', label: 'Contact Phone' },
      { key: 'scheduled_for', label: 'Scheduled For', type: 'datetime' },
      { key: 'status', label: 'Status' },
      { key: 'message', label: 'Message' },
      { key: 'location_id', label: 'Location ID' },
      { key: 'location_name', label: 'Location' },
    ],
  },
};

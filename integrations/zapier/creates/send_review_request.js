'use strict';

const { apiUrl } = require('../config');
const { idempotencyKey } = require('../lib/idempotency');

const REQUEST_KEY_FIELD = 'request_key';

// The service describes its own input fields (Zapier's field schema), including the business's
// default delay, so the form always matches what the endpoint accepts.
const serviceFields = async (z) => {
  const response = await z.request({ url: apiUrl('send-review-request/fields') });
  return response.data.fields;
};

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
      serviceFields,
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
      message: 'Review request scheduled for Jane Smith by SMS at 2026-11-21 15:00 UTC',
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
    ],
  },
};

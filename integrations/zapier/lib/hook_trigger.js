'use strict';

// A trigger fed by the service's REST hooks (POST /api/<platform>/hooks {target_url, event}),
// with performList reading the list endpoint for the Zap editor's sample and test step.

const { apiUrl } = require('../config');
const { throwForError } = require('./errors');
const { TRIGGER_LOCATION_HELP, locationField, withLocation } = require('./location');
const { OUTPUT_FIELDS, itemFromEvent, listOutcomes } = require('./outcomes');

const hookTrigger = ({ key, noun, label, description, eventType, status, kinds, detailLabel, sample }) => {
  const performSubscribe = async (z, bundle) => {
    const response = await z.request({
      url: apiUrl('hooks'),
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: withLocation({ target_url: bundle.targetUrl, event: eventType }, bundle),
    });
    // {id, event, target_url, secret, created_at, location_id}: kept by Zapier as bundle.subscribeData.
    return response.data;
  };

  const performUnsubscribe = async (z, bundle) => {
    const response = await z.request({
      url: apiUrl(`hooks/${encodeURIComponent(bundle.subscribeData.id)}`),
      method: 'DELETE',
      // Already gone (the service removes a subscription its target answered 410 to): the
      // goal of unsubscribing is reached.
      skipThrowForStatus: true,
    });
    if (response.status !== 404) {
      throwForError(response, z);
    }
    return {};
  };

  const perform = async (z, bundle) => [itemFromEvent(bundle.cleanedRequest)];

  const performList = async (z, bundle) =>
    listOutcomes(z, bundle, {
      eventType,
      status,
      kinds,
      scan: eventType === 'feedback.received' ? 10 : 3,
    });

  return {
    key,
    noun,
    display: { label, description },
    operation: {
      type: 'hook',
      inputFields: [locationField(TRIGGER_LOCATION_HELP)],
      performSubscribe,
      performUnsubscribe,
      perform,
      performList,
      sample,
      outputFields: [...OUTPUT_FIELDS, { key: 'detail', label: detailLabel }],
    },
  };
};

const sampleRequest = {
  review_request_id: '5f0c8a62-3b9e-4a51-9d1e-2f6c5b7a8d90',
  contact_id: '0b7e4c1a-9f2d-4e63-8a5b-6c1d2e3f4a5b',
  contact_name: 'Jane Smith',
  contact_email: 'jane@example.com',
  contact_phone: '+14155552671',
  scheduled_for: '2026-11-21T15:00:00Z',
  location_id: '3f6c2b1e-9a4d-4c8e-b7f1-2d5e8a9c0b1d',
  location_name: 'Downtown',
};

module.exports = { hookTrigger, sampleRequest };

'use strict';

const { apiUrl } = require('../config');
const { errorBody, throwForError } = require('../lib/errors');

const perform = async (z, bundle) => {
  const id = String(bundle.inputData.review_request_id || '').trim();
  const response = await z.request({
    url: apiUrl(`review-requests/${encodeURIComponent(id)}/cancel`),
    method: 'POST',
    headers: { accept: 'application/json' },
    skipThrowForStatus: true,
  });
  const body = errorBody(response);
  if (response.status === 409 && body.error === 'already_ended') {
    // Already ended (clicked, completed, failed, opted out or cancelled, perhaps by a retry of
    // this very step): nothing left to cancel. A soft stop with the service's explanation.
    throw new z.errors.HaltedError(body.error_description);
  }
  if (response.status === 404) {
    throw new z.errors.Error(
      `No review request with the ID "${id}" in this account. Map the Review Request ID from ` +
        'Send Review Request, Find Contact or a trigger of this app.',
      'not_found',
      404,
    );
  }
  return throwForError(response, z).data;
};

module.exports = {
  key: 'cancel_review_request',
  noun: 'Review Request',
  display: {
    label: 'Cancel Review Request',
    description:
      'Stops a review request: its first message (if not sent yet) and its follow-ups are ' +
      'never sent. Use it when a job is refunded or a customer complains.',
  },
  operation: {
    inputFields: [
      {
        key: 'review_request_id',
        label: 'Review Request ID',
        type: 'string',
        required: true,
        helpText:
          'The ID of the review request to stop: map "Review Request ID" from Send Review ' +
          'Request, from Find Contact (Latest Review Request ID) or from a trigger. A message ' +
          'already handed to the SMS or e-mail provider cannot be called back.',
      },
    ],
    perform,
    sample: {
      id: '5f0c8a62-3b9e-4a51-9d1e-2f6c5b7a8d90',
      contact_id: '0b7e4c1a-9f2d-4e63-8a5b-6c1d2e3f4a5b',
      contact_name: 'Jane Smith',
      contact_email: 'jane@example.com',
      contact_phone: '+14155552671',
      scheduled_for: '2026-11-21T15:00:00Z',
      status: 'cancelled',
      message:
        'Review request for Jane Smith ended 2026-11-21 14:10 UTC: cancelled. Cancelled by ' +
        'staff or the business (through the API).',
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

'use strict';

const { hookTrigger, sampleRequest } = require('../lib/hook_trigger');

module.exports = hookTrigger({
  key: 'review_request_failed',
  noun: 'Failed Review Request',
  label: 'Review Request Failed',
  description:
    "Triggers when a review request cannot be delivered (an invalid phone number, a bounced e-mail address): fix the contact's details and send again.",
  eventType: 'review_request.failed',
  status: 'failed',
  kinds: ['failed', 'ended'],
  detailLabel: 'Why It Failed',
  sample: {
    id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    event: 'review_request.failed',
    occurred_at: '2026-11-21T15:00:05Z',
    ...sampleRequest,
    status: 'failed',
    message:
      "Review request for Jane Smith ended 2026-11-21 15:00 UTC: failed. Delivery failed permanently (The 'To' number is not a valid phone number).",
    channel: 'sms',
    detail: "Delivery failed permanently",
    details: {},
  },
});

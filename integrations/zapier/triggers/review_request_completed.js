'use strict';

const { hookTrigger, sampleRequest } = require('../lib/hook_trigger');

module.exports = hookTrigger({
  key: 'review_request_completed',
  noun: 'Completed Review Request',
  label: 'Review Request Completed',
  description:
    "Triggers when a review request's sequence ends because every message (the first one and its follow-ups) was sent, without an opt-out.",
  eventType: 'review_request.completed',
  status: 'completed',
  kinds: ['ended'],
  detailLabel: 'How It Ended',
  sample: {
    id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    event: 'review_request.completed',
    occurred_at: '2026-11-28T15:00:00Z',
    ...sampleRequest,
    status: 'completed',
    message:
      "Review request for Jane Smith ended 2026-11-28 15:00 UTC: completed. Every message of the sequence was sent.",
    channel: 'email',
    detail: "Every message of the sequence was sent",
    details: {},
  },
});

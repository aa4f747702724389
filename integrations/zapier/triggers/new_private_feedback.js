'use strict';

const { hookTrigger, sampleRequest } = require('../lib/hook_trigger');

module.exports = hookTrigger({
  key: 'new_private_feedback',
  noun: 'Private Feedback',
  label: 'New Private Feedback',
  description:
    "Triggers when a customer leaves private feedback on their review page instead of (or before) a public review: reply to them before it becomes a bad review.",
  eventType: 'feedback.received',
  status: null,
  kinds: ['feedback'],
  detailLabel: 'Feedback Text',
  sample: {
    id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    event: 'feedback.received',
    occurred_at: '2026-11-21T18:40:00Z',
    ...sampleRequest,
    status: 'delivered',
    message:
      "Review request delivered to Jane Smith (first message sent 2026-11-21 15:00 UTC); follow-ups stop as soon as they click or opt out.",
    channel: 'email',
    detail: "The plumber arrived two hours late, but the work is good.",
    details: {},
  },
});

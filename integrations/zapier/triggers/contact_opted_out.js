'use strict';

const { hookTrigger, sampleRequest } = require('../lib/hook_trigger');

module.exports = hookTrigger({
  key: 'contact_opted_out',
  noun: 'Opt-out',
  label: 'Contact Opted Out',
  description:
    "Triggers when a customer opts out of your review requests (replied STOP to an SMS, or unsubscribed from an e-mail): update your CRM so nobody asks them again.",
  eventType: 'contact.opted_out',
  status: 'opted_out',
  kinds: ['opt-out'],
  detailLabel: 'How They Opted Out',
  sample: {
    id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    event: 'contact.opted_out',
    occurred_at: '2026-11-21T15:04:00Z',
    ...sampleRequest,
    status: 'opted_out',
    message:
      "Review request for Jane Smith ended 2026-11-21 15:04 UTC: opted out. The contact opted out.",
    channel: 'sms',
    detail: "Replied STOP (or similar) to an SMS",
    details: {},
  },
});

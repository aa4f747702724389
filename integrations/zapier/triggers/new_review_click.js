'use strict';

const { hookTrigger, sampleRequest } = require('../lib/hook_trigger');

module.exports = hookTrigger({
  key: 'new_review_click',
  noun: 'Review Click',
  label: 'New Review Click',
  description:
    "Triggers when a customer clicks through from a review request to one of your review sites (Google, Facebook, ...): a good moment to thank them or tell your team.",
  eventType: 'review_request.clicked',
  status: 'clicked',
  kinds: ['clicked'],
  detailLabel: 'Review Site Clicked',
  sample: {
    id: '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    event: 'review_request.clicked',
    occurred_at: '2026-11-21T18:02:11Z',
    ...sampleRequest,
    status: 'clicked',
    message:
      "Review request for Jane Smith ended 2026-11-21 18:02 UTC: clicked. The contact clicked through to a review site.",
    channel: 'sms',
    detail: "Google",
    details: {},
  },
});

'use strict';

// What happened to review requests, as one flat item per outcome, whether it arrived as a REST
// hook (the service's event: {id, type, occurred_at, data}) or was read from the list endpoint
// (performList: the Zap editor's sample and test step). Both give the same keys, so a Zap built
// on sample data maps the same fields at run time.

const { apiUrl } = require('../config');
const { withLocation } = require('./location');

const REQUEST_FIELDS = [
  'contact_id',
  'contact_name',
  'contact_email',
  'contact_phone',
  'status',
  'scheduled_for',
  'message',
  'location_id',
  'location_name',
];

const requestFields = (request) =>
  Object.fromEntries(REQUEST_FIELDS.map((key) => [key, request[key] === undefined ? null : request[key]]));

// The most telling words of an event's details: the feedback's text, the review site clicked,
// how the contact opted out (`how`), why delivery failed (`reason`).
const detailOf = (data) => {
  const nested = data.feedback || data.click || data.opt_out || data.failure || {};
  const candidates = [
    nested.text,
    data.feedback_text,
    nested.site_label,
    nested.site,
    nested.url,
    nested.how,
    data.how,
    data.reason,
    nested.error,
    data.error,
  ];
  const found = candidates.find((value) => typeof value === 'string' && value);
  return found || '';
};

// A REST hook's body -> the trigger's item. `data` holds the review request (its own `id`),
// either as `data.review_request` or at the top of `data`, plus `contact_id`, `channel` and the
// click or feedback details; anything else is kept under `details`.
const itemFromEvent = (event) => {
  const data = event.data || {};
  const request = data.review_request || data;
  const details = { ...data };
  delete details.review_request;
  return {
    id: event.id,
    event: event.type,
    occurred_at: event.occurred_at,
    review_request_id: request.id,
    ...requestFields(request),
    contact_id: data.contact_id || request.contact_id || null,
    channel: data.channel || null,
    detail: detailOf(data),
    details,
  };
};

// One request of the list, with the timeline event that is this trigger's outcome.
const itemFromTimeline = (request, timelineEvent, eventType) => ({
  id: `${request.id}:${eventType}:${timelineEvent.at}`,
  event: eventType,
  occurred_at: timelineEvent.at,
  review_request_id: request.id,
  ...requestFields(request),
  channel: null,
  detail: timelineEvent.detail || timelineEvent.title,
  details: { title: timelineEvent.title, kind: timelineEvent.kind },
});

// performList: the newest requests in the trigger's status (any status for feedback), each
// read with its timeline for the outcome's time and details. A few requests only: this is the
// editor's sample, the hooks carry every real event.
const listOutcomes = async (z, bundle, { eventType, status, kinds, scan }) => {
  const params = withLocation({ limit: scan }, bundle);
  if (status) {
    params.status = status;
  }
  const page = await z.request({ url: apiUrl('review-requests'), params });
  const items = [];
  for (const request of page.data.results) {
    const detail = await z.request({
      url: apiUrl(`review-requests/${encodeURIComponent(request.id)}`),
    });
    const matching = detail.data.timeline.filter((entry) => kinds.includes(entry.kind));
    // Feedback: every note is an outcome; the others: the request's one (latest) such event.
    const chosen = eventType === 'feedback.received' ? matching.reverse() : matching.slice(-1);
    items.push(...chosen.map((entry) => itemFromTimeline(request, entry, eventType)));
  }
  return items;
};

const OUTPUT_FIELDS = [
  { key: 'id', label: 'Event ID' },
  { key: 'event', label: 'Event Type' },
  { key: 'occurred_at', label: 'Occurred At', type: 'datetime' },
  { key: 'review_request_id', label: 'Review Request ID' },
  { key: 'contact_id', label: 'Contact ID' },
  { key: 'contact_name', label: 'Contact Name' },
  { key: 'contact_email', label: 'Contact E-mail' },
  { key: 'contact_phone', label: 'Contact Phone' },
  { key: 'status', label: 'Review Request Status' },
  { key: 'scheduled_for', label: 'Scheduled For', type: 'datetime' },
  { key: 'message', label: 'Review Request Summary' },
  { key: 'channel', label: 'Channel (sms or email)' },
  { key: 'location_id', label: 'Location ID' },
  { key: 'location_name', label: 'Location' },
];

module.exports = { OUTPUT_FIELDS, itemFromEvent, itemFromTimeline, listOutcomes };

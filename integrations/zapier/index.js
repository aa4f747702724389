'use strict';

const authentication = require('./authentication');
const cancelReviewRequest = require('./creates/cancel_review_request');
const sendReviewRequest = require('./creates/send_review_request');
const { handleErrors, includeBearerToken } = require('./middleware');
const findContact = require('./searches/find_contact');
const contactOptedOut = require('./triggers/contact_opted_out');
const locations = require('./triggers/locations');
const newPrivateFeedback = require('./triggers/new_private_feedback');
const newReviewClick = require('./triggers/new_review_click');
const reviewRequestCompleted = require('./triggers/review_request_completed');
const reviewRequestFailed = require('./triggers/review_request_failed');

const byKey = (...definitions) =>
  Object.fromEntries(definitions.map((definition) => [definition.key, definition]));

module.exports = {
  version: require('./package.json').version,
  platformVersion: require('zapier-platform-core').version,

  authentication,
  beforeRequest: [includeBearerToken],
  afterResponse: [handleErrors],

  // Mirrors the service's limit (RATE_LIMIT_PER_HOUR, 5000/h per connection) so Zapier queues
  // runs instead of sending requests the service would answer with 429.
  throttle: { window: 3600, limit: 5000, scope: ['auth'] },

  triggers: byKey(
    newReviewClick,
    newPrivateFeedback,
    contactOptedOut,
    reviewRequestFailed,
    reviewRequestCompleted,
    locations,
  ),
  searches: byKey(findContact),
  creates: byKey(sendReviewRequest, cancelReviewRequest),
  // "Find Contact, or send them a review request if not found": the search's e-mail and phone
  // keys are the create's, so Zapier passes them on.
  searchOrCreates: {
    [findContact.key]: {
      key: findContact.key,
      display: {
        label: 'Find or Send Review Request',
        description:
          'Finds the customer by e-mail or phone; when they are not found, adds them and ' +
          'sends them a review request.',
      },
      search: findContact.key,
      create: sendReviewRequest.key,
    },
  },
};

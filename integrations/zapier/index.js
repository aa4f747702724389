'use strict';

const authentication = require('./authentication');
const sendReviewRequest = require('./creates/send_review_request');
const { handleErrors, includeBearerToken } = require('./middleware');

module.exports = {
  version: require('./package.json').version,
  platformVersion: require('zapier-platform-core').version,

  authentication,
  beforeRequest: [includeBearerToken],
  afterResponse: [handleErrors],

  // Mirrors the service's limit (RATE_LIMIT_PER_HOUR, 5000/h per connection) so Zapier queues
  // runs instead of sending requests the service would answer with 429.
  throttle: { window: 3600, limit: 5000, scope: ['auth'] },

  triggers: {},
  searches: {},
  creates: {
    [sendReviewRequest.key]: sendReviewRequest,
  },
};

'use strict';

const crypto = require('crypto');

// Key order must not change the hash: serialise objects with sorted keys.
const canonical = (value) => {
  if (Array.isArray(value)) {
    return `[${value.map(canonical).join(',')}]`;
  }
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value === undefined ? null : value);
};

// Zapier re-runs creates (throttling retries, replay, Autoreplay) and gives no run id, so the key
// is derived from the inputs: the same inputs always give the same key, and the service replays
// its first answer instead of creating again. An optional "request key" input (an order or job
// id mapped from the trigger) keeps two genuinely different jobs for one person apart.
const idempotencyKey = (payload, requestKey) =>
  `zapier-${crypto
    .createHash('sha256')
    .update(canonical({ payload, requestKey: requestKey || null }))
    .digest('hex')}`;

module.exports = { canonical, idempotencyKey };

'use strict';

// The `location_id` input every step shares: a dropdown of the user's locations (the hidden
// `locations` trigger). Blank means the service's default (see each step's help text).

const LOCATION_FIELD = 'location_id';

const locationField = (helpText) => ({
  key: LOCATION_FIELD,
  label: 'Location',
  type: 'string',
  required: false,
  dynamic: 'locations.id.name',
  helpText,
});

// Only the location's events (a hook) or requests (a list): the filter a trigger sends.
const TRIGGER_LOCATION_HELP =
  'Optional. Only events of this location. Leave blank for every location you may act on.';

const withLocation = (params, bundle) => {
  const locationId = bundle.inputData && bundle.inputData[LOCATION_FIELD];
  return locationId ? { ...params, [LOCATION_FIELD]: locationId } : params;
};

module.exports = { LOCATION_FIELD, TRIGGER_LOCATION_HELP, locationField, withLocation };

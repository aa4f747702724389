'use strict';

// Hidden trigger behind every `location_id` dropdown (`dynamic: 'locations.id.name'`): the
// locations the connected user may act on (GET /api/<platform>/locations; all of them for the
// account's owner, their own for a member).

const { apiUrl } = require('../config');

const perform = async (z) => {
  const response = await z.request({ url: apiUrl('locations') });
  return response.data.results;
};

module.exports = {
  key: 'locations',
  noun: 'Location',
  display: {
    label: 'New Location',
    description: 'Lists your locations for the Location dropdowns.',
    hidden: true,
  },
  operation: {
    perform,
    sample: {
      id: '3f6c2b1e-9a4d-4c8e-b7f1-2d5e8a9c0b1d',
      name: 'Downtown',
      time_zone: 'America/New_York',
    },
    outputFields: [
      { key: 'id', label: 'Location ID' },
      { key: 'name', label: 'Name' },
      { key: 'time_zone', label: 'Time Zone' },
    ],
  },
};

'use strict';

const { apiUrl } = require('../config');
const { locationField, withLocation } = require('../lib/location');

// Keys shared with Send Review Request's fields, so Zapier's "find, or create if not found"
// passes the same e-mail and phone to the create.
const perform = async (z, bundle) => {
  const { email, mobile_phone_number: phone } = bundle.inputData;
  if (!email && !phone) {
    throw new z.errors.Error(
      'Give an e-mail address or a mobile phone number (or both) to look the contact up.',
      'invalid_request',
      400,
    );
  }
  const params = {};
  if (email) {
    params.email = email;
  }
  if (phone) {
    params.phone = phone;
  }
  const response = await z.request({ url: apiUrl('contacts'), params: withLocation(params, bundle) });
  return response.data.results;
};

const sampleRequest = {
  id: '5f0c8a62-3b9e-4a51-9d1e-2f6c5b7a8d90',
  contact_id: '0b7e4c1a-9f2d-4e63-8a5b-6c1d2e3f4a5b',
  contact_name: 'Jane Smith',
  contact_email: 'jane@example.com',
  contact_phone: '+14155552671',
  scheduled_for: '2026-11-21T15:00:00Z',
  status: 'clicked',
  message:
    'Review request for Jane Smith ended 2026-11-21 18:02 UTC: clicked. The contact clicked ' +
    'through to a review site.',
  location_id: '3f6c2b1e-9a4d-4c8e-b7f1-2d5e8a9c0b1d',
  location_name: 'Downtown',
};

module.exports = {
  key: 'find_contact',
  noun: 'Contact',
  display: {
    label: 'Find Contact',
    description:
      'Finds a customer by e-mail address or mobile phone number (any format), with their ' +
      'latest review request: check whether they were already asked before asking again.',
  },
  operation: {
    inputFields: [
      {
        key: 'email',
        label: 'E-mail',
        type: 'string',
        required: false,
        helpText: 'The customer\'s e-mail address; upper or lower case does not matter.',
      },
      {
        key: 'mobile_phone_number',
        label: 'Mobile Phone Number',
        type: 'string',
        required: false,
        helpText:
          'The customer\'s mobile number in any format, e.g. (415) 555-2671 or +44 7700 900123. ' +
          'Numbers without a country code are read in your business\'s country. Give this, the ' +
          'e-mail, or both (then either one matches).',
      },
      locationField(
        'Optional. Only a customer asked for a review at this location, with their latest ' +
          'request there. Leave blank for any of your locations.',
      ),
    ],
    perform,
    sample: {
      id: '0b7e4c1a-9f2d-4e63-8a5b-6c1d2e3f4a5b',
      name: 'Jane Smith',
      first_name: 'Jane',
      last_name: 'Smith',
      company_name: 'Acme',
      email: 'jane@example.com',
      phone: '+14155552671',
      sms_opted_out: false,
      email_opted_out: false,
      created_at: '2026-11-21T14:59:59Z',
      latest_review_request: sampleRequest,
    },
    outputFields: [
      { key: 'id', label: 'Contact ID' },
      { key: 'name', label: 'Name' },
      { key: 'first_name', label: 'First Name' },
      { key: 'last_name', label: 'Last Name' },
      { key: 'company_name', label: 'Company Name' },
      { key: 'email', label: 'E-mail' },
      { key: 'phone', label: 'Phone' },
      { key: 'sms_opted_out', label: 'Opted Out of SMS', type: 'boolean' },
      { key: 'email_opted_out', label: 'Opted Out of E-mail', type: 'boolean' },
      { key: 'created_at', label: 'Added At', type: 'datetime' },
      { key: 'latest_review_request__id', label: 'Latest Review Request ID' },
      { key: 'latest_review_request__status', label: 'Latest Review Request Status' },
      {
        key: 'latest_review_request__scheduled_for',
        label: 'Latest Review Request Scheduled For',
        type: 'datetime',
      },
      { key: 'latest_review_request__message', label: 'Latest Review Request Summary' },
      { key: 'latest_review_request__location_name', label: 'Latest Review Request Location' },
    ],
  },
};

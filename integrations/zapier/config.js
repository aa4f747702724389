'use strict';

// Where the service runs and which platform slug it serves us under. Set with
// `zapier-platform env:set <version> BASE_URL=https://reviews.example.com` when deploying;
// tests point BASE_URL at the service they start on 127.0.0.1.
const baseUrl = () => (process.env.BASE_URL || 'http://127.0.0.1:8000').replace(/\/+$/, '');
const platform = () => process.env.PLATFORM_SLUG || 'zapier';

const apiUrl = (path) => `${baseUrl()}/api/${platform()}/${path}`;
const oauthUrl = (path) => `${baseUrl()}/api/oauth/${platform()}/${path}`;

module.exports = { apiUrl, baseUrl, oauthUrl };

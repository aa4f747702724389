"""Views of the portal, one module per area: ``requests`` (dashboard, a request's page),
``feedback``, ``configure`` (settings, review sites, message wording), ``apps`` (connected apps),
``webhooks``, ``team`` (members and invitations) and ``locations``."""

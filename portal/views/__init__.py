"""Views of the owner portal, one module per area: ``requests`` (dashboard, a request's page),
``configure`` (settings, review sites, message wording), ``apps`` (connected apps)."""

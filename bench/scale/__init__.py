"""``make bench-scale``: do the pages stay fast as the data grows? Every page, two sizes, one run.

For each size (default 10,000 and 1,000,000 review requests of one business; ``--quick``:
2,000 and 50,000), in a fresh PostgreSQL database that is dropped afterwards:

1. ``migrate``; the business through ``create_business`` and an access token for the API
   (``bench/trees.py``, as ``make bench``); a staff user;
2. the data (``data.py``), loaded fast through the real schema with ``INSERT ... SELECT
   generate_series``: the business's 20 locations (each with its review site) and 50 members
   (three locations each; the measured manager two), its contacts, one request each spread over
   two years and over its locations (the default's with no location, as rows from before
   locations), ~3 messages per request (statuses, timestamps and errors as the service leaves
   them), clicks and opt-out events; 199 small businesses alongside (one location,
   ``--small-requests`` requests each); then ``VACUUM ANALYZE`` (what autovacuum does on a live
   database) and ``rebuild_activity_rollup`` (the dashboards' rollup, as after a restore);
3. each page (``pages.py``: every portal and admin page, and issue 38's data shapes, each a
   group of ``--shapes``: name fragments of known shares, phones typed three ways, an e-mail
   address and a domain, every status filter, the page reached through 50 ``?after=``
   cursors, the API's lists) with Django's test ``Client`` (logged in as the owner, the manager
   with two locations, or staff, or with the owner's OAuth token; in-process: the figures are
   the page's own work, not gunicorn's or the network's), ``--repeat`` times after one
   warm-up: median, p95 and max ms and the queries it ran. Then the write path (``POST
   /api/zapier/send-review-request`` with the token, a new contact each time, 40 runs) and one
   dispatcher run (``messages_dispatch_due`` claiming a batch of due messages).

Each size runs in its own process (``--one``), so each has its own Django on its own database
(``run.py``). Prints a table of pages by size (median / max ms, queries), the ratio big/small
of the medians (the write path's p50 and p95), and "met" or "MISSED" against the targets of
issues 26 and 38; writes ``bench/results/<date>-scale.json`` (or ``--out``). Targets are
reported, never asserted. How to read the figures: docs/benchmarks.md.
"""

"""Shared infrastructure that every app may use: rate limits, caches, request ids, logs,
security headers, health probes and the one JSON error shape.

``core`` sits at the bottom: it imports Django and libraries only, never a project app.
"""

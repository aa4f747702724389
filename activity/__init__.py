"""Reporting: the dashboards' rollup of review activity (its models, reads, refresh and
rebuild), the staff dashboard and its admin page, and the owner dashboard's funnel and chart.

``activity`` sits above ``reviews``, whose tables it reads; ``reviews`` imports nothing of it.
"""

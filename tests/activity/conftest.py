"""Fixtures of the reporting tests: the business of the delivery tests (tests/reviews), whose
requests the rollup and the dashboards count, as those tests were written with it."""

from tests.reviews.conftest import business  # noqa: F401  (a fixture: pytest finds it here)

"""Lift a login lock: ``manage.py login_unlock owner@example.com 203.0.113.7``.

The login throttle (``accounts/throttle.py``) locks one address on one network after too many
failed attempts, for the rest of its hourly window, and refuses addresses without standing on a
network whose budget for them is used up. This forgets the pair's window now and gives the pair
standing, as a successful login would. An IPv6 address stands for its /64, as the throttle
counts it.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts import throttle
from core.ratelimit import network_of
from core.ratelimit_store import StoreUnavailable


class Command(BaseCommand):
    help = "Lift the login lock of an address on a network (the IP the person logs in from)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("email", help="The address typed on the login page.")
        parser.add_argument("ip", help="The address logged in from (IPv6: any in its /64).")

    def handle(self, *args, email: str, ip: str, **options) -> None:
        network = network_of(ip)
        try:
            throttle.login_unlock(email=email, network=network)
        except StoreUnavailable as exc:
            raise CommandError(f"The rate-limit store is unreachable: {exc}") from exc
        self.stdout.write(f"Unlocked {email} on {network}.")

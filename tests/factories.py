"""factory-boy factories, one per model, shared by the suite.

Typed code calls ``create()`` (``UserFactory.create(...)``, the same as ``UserFactory(...)``):
factory-boy types what ``create`` returns, not what calling the class does.
"""

from __future__ import annotations

import factory
from django.utils import timezone

from accounts.models import Location, User
from contact_input.normalize import email_key
from reviews.models import Contact, ReviewRequest, ReviewSite

DEFAULT_PASSWORD = "correct horse battery staple"


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"owner{n}@example.com")
    business_name = factory.Sequence(lambda n: f"Business {n}")
    time_zone = "America/New_York"
    default_region = "US"
    password = factory.PostGenerationMethodCall("set_password", DEFAULT_PASSWORD)

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class LocationFactory(factory.django.DjangoModelFactory[Location]):
    """A location at the end of its account's list (the account's first is its default)."""

    class Meta:
        model = Location

    account = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Location {n}")
    time_zone = "America/New_York"
    position = factory.LazyAttribute(lambda o: Location.objects.filter(account=o.account).count())


def first_location(account: User, **fields) -> Location:
    """The location an owner gets with its creation (the account's default), with ``fields``
    changed."""
    location = Location.objects.get(account=account, position=0)
    for name, value in fields.items():
        setattr(location, name, value)
    location.save()
    return location


class ReviewSiteFactory(factory.django.DjangoModelFactory[ReviewSite]):
    class Meta:
        model = ReviewSite

    owner = factory.SubFactory(UserFactory)
    kind = ReviewSite.Kind.GOOGLE
    label = "Google"
    url = factory.Sequence(lambda n: f"https://g.page/r/business-{n}/review")


class ContactFactory(factory.django.DjangoModelFactory[Contact]):
    """A contact row as contact_add stores it (normalised e-mail key, E.164 phone)."""

    class Meta:
        model = Contact

    owner = factory.SubFactory(UserFactory)
    first_name = "Jane"
    last_name = factory.Sequence(lambda n: f"Smith{n}")
    email = factory.Sequence(lambda n: f"jane{n}@example.com")
    email_normalized = factory.LazyAttribute(lambda c: email_key(c.email))
    phone = ""


class ReviewRequestFactory(factory.django.DjangoModelFactory[ReviewRequest]):
    class Meta:
        model = ReviewRequest

    contact = factory.SubFactory(ContactFactory)
    owner = factory.SelfAttribute("contact.owner")
    scheduled_for = factory.LazyFunction(timezone.now)

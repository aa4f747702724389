"""Contact input: the contact fields the service accepts and how each raw value is read.

One set of rules for every entry point (the connector API, the admin, the CSV import):
``normalize`` holds the accepted fields (``CONTACT_FIELDS``) and parses each value (e-mail
addresses and their dedup keys, phone numbers to E.164, names, delays, metadata);
``region_names`` holds the phone regions' English names its messages use. Pure, with no
database: it imports no app, only Django's validation and phonenumbers and idna.
"""

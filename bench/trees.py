"""Getting the trees ready: the old tree's ``git worktree``, the harness's Django, the seed.

Seeding goes through each tree's public surface, so that the old tree is seeded by its own
code: ``manage.py create_business`` for the owner, django-oauth-toolkit's models for the
client and the access token (what the consent flow would leave behind), and the tree's own
``POST /api/zapier/send-review-request`` for the contacts that the duplicate runs hit again.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

from bench.common import OWNER_EMAIL, ROOT, Tree, run_manage

DUP_POOL = 200
SEND = "/api/zapier/send-review-request"


def git(*args: str, cwd: Path = ROOT) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed:\n{result.stderr.strip()}")
    return result.stdout.strip()


def describe(root: Path, ref: str) -> dict:
    """The ref, its commit, and whether the tree has changes that are not committed."""
    return {
        "ref": ref,
        "commit": git("rev-parse", "HEAD", cwd=root),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no", cwd=root)),
    }


@contextlib.contextmanager
def worktree(ref: str, path: Path):
    """A detached ``git worktree`` of ``ref`` at ``path`` (which must not exist yet), removed
    on exit."""
    commit = git("rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")
    git("worktree", "add", "--detach", str(path), commit)
    try:
        yield path
    finally:
        git("worktree", "remove", "--force", str(path))


def setup_harness(new: Tree, old: Tree | None) -> None:
    """Django in this process, on the new tree's settings: its database as ``default`` and,
    with an old tree, the old tree's database as the alias ``old`` (``bench/settings.py``)."""
    for key in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "VAR_DIR", "DEBUG"):
        os.environ[key] = new.env[key]
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    if old is not None:
        os.environ["BENCH_OLD_DATABASE_NAME"] = old.env["DATABASE_URL"].rsplit("/", 1)[1]
    import django

    django.setup()


def seed(tree: Tree) -> None:
    """The owner (by the tree's ``create_business``) and an access token of scope
    ``read write`` for a connected client; sets ``tree.owner_id`` and ``tree.token``."""
    out = run_manage(
        tree,
        "create_business",
        "--email",
        OWNER_EMAIL,
        # One argument: a generated password may start with "-".
        f"--password={secrets.token_urlsafe(20)}",
        "--business-name",
        "Bench Co",
        # A business that sends: without a review site its requests wait (no dispatch to time).
        "--review-url",
        "https://g.page/r/bench-co/review",
    )
    tree.owner_id = out.strip().splitlines()[-1]
    tree.token = issue_token(tree.owner_id, using=tree.alias)


def issue_token(owner_id: str, *, using: str = "default") -> str:
    """A connected client of ``owner_id`` (an application, its connection) and an access token
    of scope ``read write`` with its refresh token, as the consent flow leaves them: the raw
    access token."""
    from django.utils import timezone
    from oauth2_provider.models import (
        get_access_token_model,
        get_application_model,
        get_refresh_token_model,
        set_token_value,
    )

    from oauth_provider.models import Connection

    db = using
    Application = get_application_model()
    application = Application.objects.using(db).create(
        name="Bench",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://bench.example/callback",
        client_secret=secrets.token_urlsafe(32),
    )
    connection = Connection.objects.using(db).create(user_id=owner_id, application=application)
    raw = secrets.token_urlsafe(30)
    access = get_access_token_model()(
        user_id=owner_id,
        application=application,
        scope="read write",
        expires=timezone.now() + timedelta(hours=6),
    )
    set_token_value(access, raw)
    access.save(using=db)
    refresh = get_refresh_token_model()(
        user_id=owner_id,
        application=application,
        access_token=access,
        token_family=connection.pk,
    )
    set_token_value(refresh, secrets.token_urlsafe(30))
    refresh.save(using=db)
    return raw


def seed_duplicates(tree: Tree) -> None:
    """The contacts ``dup-0..DUP_POOL-1@bench.example``, each with its review request, sent
    through the tree's running API: the duplicate runs send them again."""
    for n in range(DUP_POOL):
        body = {"first_name": "Bench", "last_name": "Dup", "email": f"dup-{n}@bench.example"}
        request = urllib.request.Request(
            tree.base + SEND,
            data=json.dumps({**body, "delay_hours": 2}).encode(),
            headers={
                "Authorization": f"Bearer {tree.token}",
                "Content-Type": "application/json",
                "Idempotency-Key": f"bench-seed-{n}",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise SystemExit(
                f"{tree.name} tree: seeding {body['email']} answered {exc.code}: "
                f"{exc.read()[:500]!r}"
            ) from None

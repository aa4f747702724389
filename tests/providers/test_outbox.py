"""The outbox's files: written whole or not at all."""

from __future__ import annotations

import pytest

from providers.outbox import write_atomically


def test_an_outbox_file_is_complete_or_absent(tmp_path, monkeypatch):
    target = tmp_path / "x.eml"
    write_atomically(target, b"complete")
    assert target.read_bytes() == b"complete"

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", crash)
    with pytest.raises(OSError):
        write_atomically(tmp_path / "y.eml", b"half")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.eml"]

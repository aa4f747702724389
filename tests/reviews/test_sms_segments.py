"""SMS segment counts: GSM-7 vs UCS-2, extension characters, split limits (pure function)."""

from __future__ import annotations

import pytest

from reviews.sms_segments import count_segments


@pytest.mark.parametrize(
    ("text", "encoding", "segments", "units"),
    [
        ("", "GSM-7", 1, 0),
        ("a" * 160, "GSM-7", 1, 160),
        ("a" * 161, "GSM-7", 2, 161),
        ("a" * 306, "GSM-7", 2, 306),  # 2 x 153
        ("a" * 307, "GSM-7", 3, 307),
        ("€" * 80, "GSM-7", 1, 160),  # extension characters take two septets each
        ("€" * 81, "GSM-7", 2, 162),
        ("{}[]~|^\\" * 10, "GSM-7", 1, 160),
        ("é" * 160, "GSM-7", 1, 160),  # é is in the basic GSM-7 table
        ("a" * 69 + "\u2019", "UCS-2", 1, 70),  # a curly apostrophe forces UCS-2
        ("a" * 70 + "\u2019", "UCS-2", 2, 71),
    ],
)
def test_count_segments_follows_gsm7_and_ucs2_limits(text, encoding, segments, units):
    count = count_segments(text)
    assert (count.encoding, count.segments, count.units) == (encoding, segments, units)


def test_ucs2_splits_at_67_code_units_per_segment():
    assert count_segments("ç" * 134).segments == 2  # ç is not GSM-7: UCS-2, 2 x 67
    assert count_segments("ç" * 135).segments == 3


def test_an_extension_character_is_never_split_across_segments():
    # 152 plain septets leave one septet in the first segment: the € (two septets) moves on.
    count = count_segments("a" * 152 + "€" + "a" * 152)
    assert count.units == 306  # would fit 2 x 153 if the pair could be split
    assert count.segments == 3


def test_an_emoji_counts_as_two_code_units_and_is_never_split():
    assert count_segments("😀" * 35).units == 70
    assert count_segments("😀" * 35).segments == 1
    count = count_segments("a" * 66 + "😀" + "a" * 66)  # the pair cannot share segment 1's end
    assert (count.units, count.segments) == (134, 3)


def test_count_names_the_characters_that_forced_ucs2():
    count = count_segments("Thanks! It\u2019s great 😀")
    assert count.non_gsm == ("\u2019", "😀")
    assert "UCS-2 because of \u2019 😀" in str(count)
    assert str(count_segments("Hi")) == "1 segment (GSM-7, 2 characters)"

"""How many SMS segments a text costs: GSM-7 or UCS-2, as carriers and Twilio count them.

A text made only of GSM 03.38 characters is sent in the 7-bit alphabet: 160 septets in one
segment, 153 per segment once it is split (the user data header takes the rest). The extension
characters (``^ { } [ ] ~ | € \\`` and form feed) take two septets (an escape and the character),
and an escape pair is never split across two segments. Any other character (an emoji, a curly
quote, most accented letters) switches the whole text to UCS-2: 70 UTF-16 code units in one
segment, 67 per segment when split, and a surrogate pair (an emoji) is never split either.

Pure functions, no Django: used by the template validation, the admin and tests.
"""

from __future__ import annotations

from dataclasses import dataclass

GSM7_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
GSM7_EXTENSION = frozenset("\f^{}\\[~]|€")

GSM7_SINGLE, GSM7_MULTI = 160, 153
UCS2_SINGLE, UCS2_MULTI = 70, 67


@dataclass(frozen=True)
class SegmentCount:
    encoding: str  # "GSM-7" or "UCS-2"
    segments: int
    units: int  # septets (GSM-7) or UTF-16 code units (UCS-2)
    characters: int
    non_gsm: tuple[str, ...] = ()  # the characters that forced UCS-2, in order of appearance

    def __str__(self) -> str:
        plural = "s" if self.segments != 1 else ""
        text = f"{self.segments} segment{plural} ({self.encoding}, {self.characters} characters)"
        if self.non_gsm:
            text += f"; UCS-2 because of {' '.join(self.non_gsm)}"
        return text


def is_gsm7(text: str) -> bool:
    return all(c in GSM7_BASIC or c in GSM7_EXTENSION for c in text)


def count_segments(text: str) -> SegmentCount:
    """The segment count of ``text`` as sent (an empty text still costs one segment)."""
    if is_gsm7(text):
        sizes = [2 if c in GSM7_EXTENSION else 1 for c in text]
        return SegmentCount("GSM-7", _pack(sizes, GSM7_SINGLE, GSM7_MULTI), sum(sizes), len(text))
    sizes = [2 if ord(c) > 0xFFFF else 1 for c in text]  # astral characters: a surrogate pair
    seen: dict[str, None] = {}
    for c in text:
        if c not in GSM7_BASIC and c not in GSM7_EXTENSION:
            seen.setdefault(c)
    return SegmentCount(
        "UCS-2", _pack(sizes, UCS2_SINGLE, UCS2_MULTI), sum(sizes), len(text), tuple(seen)
    )


def _pack(sizes: list[int], single: int, multi: int) -> int:
    """Segments needed for units of ``sizes``; a unit never straddles two segments."""
    if sum(sizes) <= single:
        return 1
    segments, used = 1, 0
    for size in sizes:
        if used + size > multi:
            segments += 1
            used = 0
        used += size
    return segments

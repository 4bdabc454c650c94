"""ENTSO-E day-ahead price documents (``Publication_MarketDocument``, type A44) written as the
Transparency Platform's API answers them, for the price file tests: the same header elements,
one element a line, times in UTC to the minute."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

NAMESPACE_7_3 = "urn:iec62325.351:tc57wg16:451-3:publicationdocument:7:3"
NAMESPACE_7_0 = "urn:iec62325.351:tc57wg16:451-3:publicationdocument:7:0"
DE_LU = "10Y1001A1001A82H"

SAMPLE_DE_LU_2025_10_01 = Path(__file__).with_name("entsoe-DE-LU-2025-10-01.xml")
"""A hand-written answer for DE-LU's first day of quarter-hour prices, positions 6, 7 and 96
left out as curve type A03 does (their prices are those of 5 and 95)."""


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime
    resolution: str
    """As written: PT15M, PT60M..."""
    points: Sequence[tuple[int, str]]
    """(position, price.amount as written), in the document's order."""


@dataclass(frozen=True)
class Series:
    periods: Sequence[Period]
    curve: str = "A03"
    currency: str = "EUR"
    sequence: int | None = None
    """classificationSequence_AttributeInstanceComponent.position: DE-LU's SDAC prices are 1,
    EXAA's 2."""


def a03_points(prices: Sequence[float]) -> list[tuple[int, str]]:
    """The Points ENTSO-E writes under curve type A03: one whose price is the previous one's is
    left out."""
    return [
        (position, repr(price))
        for position, price in enumerate(prices, start=1)
        if position == 1 or price != prices[position - 2]
    ]


def every_point(prices: Sequence[float]) -> list[tuple[int, str]]:
    """The Points of curve type A01: every position."""
    return [(position, repr(price)) for position, price in enumerate(prices, start=1)]


def utc(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%MZ")


def document(*series: Series, namespace: str = NAMESPACE_7_3) -> str:
    """The document of ``series``, its header as the API writes it."""
    periods = [p for s in series for p in s.periods]
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<Publication_MarketDocument xmlns="{namespace}">',
        "  <mRID>c3f9a3c2d2e04d6c8f0e1b7a5d4c3b2a</mRID>",
        "  <revisionNumber>1</revisionNumber>",
        "  <type>A44</type>",
        '  <sender_MarketParticipant.mRID codingScheme="A01">10X1001A1001A450'
        "</sender_MarketParticipant.mRID>",
        "  <sender_MarketParticipant.marketRole.type>A32"
        "</sender_MarketParticipant.marketRole.type>",
        '  <receiver_MarketParticipant.mRID codingScheme="A01">10X1001A1001A450'
        "</receiver_MarketParticipant.mRID>",
        "  <receiver_MarketParticipant.marketRole.type>A33"
        "</receiver_MarketParticipant.marketRole.type>",
        "  <createdDateTime>2026-03-28T12:57:03Z</createdDateTime>",
    ]
    if periods:
        lines += [
            "  <period.timeInterval>",
            f"    <start>{utc(min(p.start for p in periods))}</start>",
            f"    <end>{utc(max(p.end for p in periods))}</end>",
            "  </period.timeInterval>",
        ]
    for number, s in enumerate(series, start=1):
        lines += [
            "  <TimeSeries>",
            f"    <mRID>{number}</mRID>",
            "    <auction.type>A01</auction.type>",
            "    <businessType>A62</businessType>",
            f'    <in_Domain.mRID codingScheme="A01">{DE_LU}</in_Domain.mRID>',
            f'    <out_Domain.mRID codingScheme="A01">{DE_LU}</out_Domain.mRID>',
            "    <contract_MarketAgreement.type>A01</contract_MarketAgreement.type>",
            f"    <currency_Unit.name>{s.currency}</currency_Unit.name>",
            "    <price_Measure_Unit.name>MWH</price_Measure_Unit.name>",
        ]
        if s.sequence is not None:
            lines.append(
                "    <classificationSequence_AttributeInstanceComponent.position>"
                f"{s.sequence}</classificationSequence_AttributeInstanceComponent.position>"
            )
        lines.append(f"    <curveType>{s.curve}</curveType>")
        for p in s.periods:
            lines += [
                "    <Period>",
                "      <timeInterval>",
                f"        <start>{utc(p.start)}</start>",
                f"        <end>{utc(p.end)}</end>",
                "      </timeInterval>",
                f"      <resolution>{p.resolution}</resolution>",
            ]
            for position, price in p.points:
                lines += [
                    "      <Point>",
                    f"        <position>{position}</position>",
                    f"        <price.amount>{price}</price.amount>",
                    "      </Point>",
                ]
            lines.append("    </Period>")
        lines.append("  </TimeSeries>")
    lines.append("</Publication_MarketDocument>")
    return "\n".join(lines) + "\n"

"""The miss-ratio curve of ``policyspec simulate`` as SVG, written here with
no plotting library (spec/traffic.md, "Simulate"): for each trace, each
policy's block miss ratio against the cache size. Colours, marker shapes
and a text description make it read in grey, with colour blindness and
with a screen reader.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

__all__ = ["Series", "miss_ratio_svg", "size_label", "stacked_svg"]

COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
WIDTH, HEIGHT = 720, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 60
"""Margins: the plot area is inside them; the legend is on the right."""


@dataclass(frozen=True)
class Series:
    """One policy's points: (cache size, miss ratio), sizes ascending."""

    label: str
    points: tuple[tuple[int, float], ...]


def size_label(size: int) -> str:
    """A cache size in few characters, exactly: 512, 4,096, 10k, 1.5M."""
    if size >= 1_000_000 and size % 100_000 == 0:
        return f"{size / 1_000_000:g}M"
    if size >= 1_000 and size % 100 == 0:
        return f"{size / 1_000:g}k"
    return f"{size:,}"


def _marker(
    shape: int, x: float, y: float, colour: str, tip: str, data: str, css: str = "point"
) -> str:
    common = f'fill="{colour}" stroke="{colour}" class="{css}" {data}'
    title = f"<title>{escape(tip)}</title>"
    if shape % 4 == 0:
        return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" {common}>{title}</circle>'
    if shape % 4 == 1:
        return (f'<rect x="{x - 4.5:.1f}" y="{y - 4.5:.1f}" width="9" height="9" {common}>'
                f"{title}</rect>")
    if shape % 4 == 2:
        points = f"{x:.1f},{y - 6:.1f} {x + 6:.1f},{y + 4.5:.1f} {x - 6:.1f},{y + 4.5:.1f}"
        return f'<polygon points="{points}" {common}>{title}</polygon>'
    points = f"{x:.1f},{y - 6:.1f} {x + 6:.1f},{y:.1f} {x:.1f},{y + 6:.1f} {x - 6:.1f},{y:.1f}"
    return f'<polygon points="{points}" {common}>{title}</polygon>'


def miss_ratio_svg(title: str, series: Sequence[Series], *, ident: str = "curve") -> str:
    """One chart (spec/traffic.md, "Simulate"); ``ident`` makes its element ids unique on a
    page that holds several."""
    sizes = sorted({size for s in series for size, _ in s.points})
    if not sizes:
        sizes = [1]
    top = max((ratio for s in series for _, ratio in s.points), default=0.0)
    y_max = max(0.1, math.ceil(top * 10 - 1e-9) / 10)
    logarithmic = sizes[-1] >= 10 * sizes[0]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_of(size: int) -> float:
        if len(sizes) == 1:
            return LEFT + plot_w / 2
        if logarithmic:
            span = math.log(sizes[-1]) - math.log(sizes[0])
            return LEFT + plot_w * (math.log(size) - math.log(sizes[0])) / span
        return LEFT + plot_w * (size - sizes[0]) / (sizes[-1] - sizes[0])

    def y_of(ratio: float) -> float:
        return TOP + plot_h * (1 - ratio / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" class="miss-ratio-curve" '
        f'aria-labelledby="{ident}-title {ident}-desc" font-family="sans-serif" '
        'font-size="12">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(_describe(series))}</desc>',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="{TOP - 16}" font-size="14" font-weight="bold" '
        f'fill="#1b1f24">{escape(title)}</text>',
    ]
    for step in range(round(y_max * 10) + 1):  # y grid, every tenth
        ratio = step / 10
        y = y_of(ratio)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
                     'stroke="#d0d7de" stroke-width="1"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" '
                     f'fill="#1b1f24">{ratio:.1f}</text>')
    for size in sizes:  # x ticks at the sizes measured
        x = x_of(size)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP + plot_h}" x2="{x:.1f}" '
                     f'y2="{TOP + plot_h + 5}" stroke="#1b1f24"/>')
        parts.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 19}" text-anchor="middle" '
                     f'fill="#1b1f24" class="x-tick">{size_label(size)}</text>')
    parts += [
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#1b1f24"/>',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" '
        'stroke="#1b1f24"/>',
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 14}" text-anchor="middle" '
        f'fill="#1b1f24">cache size, blocks{" (log scale)" if logarithmic else ""}</text>',
        f'<text transform="translate(18 {TOP + plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle" fill="#1b1f24">block miss ratio</text>',
    ]
    for number, s in enumerate(series):
        colour = COLOURS[number % len(COLOURS)]
        points = [(x_of(size), y_of(ratio), size, ratio) for size, ratio in s.points]
        parts.append(f'<g class="series" data-label="{escape(s.label)}">')
        if len(points) > 1:
            line = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" '
                         'stroke-width="2"/>')
        for x, y, size, ratio in points:
            tip = f"{s.label}: {ratio:.3f} at {size:,} blocks"
            data = f'data-size="{size}" data-miss-ratio="{ratio:.6f}"'
            parts.append(_marker(number, x, y, colour, tip, data))
        legend_y = TOP + 10 + number * 22
        legend_x = WIDTH - RIGHT + 20
        parts.append(_marker(number, legend_x, legend_y, colour, s.label, "", "legend-mark"))
        parts.append(f'<text x="{legend_x + 12}" y="{legend_y + 4}" fill="#1b1f24" '
                     f'class="legend">{escape(s.label)}</text>')
        parts.append("</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _describe(series: Sequence[Series]) -> str:
    return "; ".join(
        f"{s.label}: " + ", ".join(f"{ratio:.3f} at {size:,}" for size, ratio in s.points)
        for s in series)


def stacked_svg(charts: Sequence[str]) -> str:
    """Several charts of ``miss_ratio_svg`` one above the other, as one
    SVG document."""
    if len(charts) == 1:
        return charts[0] + "\n"
    body = "\n".join(f'<g transform="translate(0 {i * HEIGHT})">{chart}</g>'
                     for i, chart in enumerate(charts))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} '
            f'{HEIGHT * len(charts)}" width="{WIDTH}" height="{HEIGHT * len(charts)}">\n'
            f"{body}\n</svg>\n")

#!/usr/bin/env python3
"""draw_layers.py [--check] - draws docs/architecture/layers.txt as layers.svg.

Each row of the text source is a band, bottom (core) to top (front ends);
the boxes of a row share its width. --check writes nothing and exits 1 when
layers.svg is not what layers.txt draws (CI runs it)."""
import os
import sys
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
WIDTH, ROW_HEIGHT, GAP, MARGIN = 960, 54, 8, 12
FILLS = {"front": "#f3e5c8", "api": "#d9e8f5", "engine": "#d9e8f5", "comm": "#d9e8f5", "select": "#cfe3d4",
         "algo": "#cfe3d4", "trans": "#e6dcef", "topo": "#eeeeee", "core": "#eeeeee"}


def read_rows(path):
    rows = []  # [(name, [(title, folder, note)])], top first, as the file lists them
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            row, title, folder, note = [part.strip() for part in line.split("|")]
            if not rows or rows[-1][0] != row:
                rows.append((row, []))
            rows[-1][1].append((title, folder, note))
    return rows


def draw(rows):
    height = 2 * MARGIN + len(rows) * (ROW_HEIGHT + GAP) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>']
    y = MARGIN
    for row, boxes in rows:
        box_width = (WIDTH - 2 * MARGIN - GAP * (len(boxes) - 1)) / len(boxes)
        for i, (title, folder, note) in enumerate(boxes):
            x = MARGIN + i * (box_width + GAP)
            out.append(f'<rect x="{x:.0f}" y="{y}" width="{box_width:.0f}" height="{ROW_HEIGHT}" rx="6" '
                       f'fill="{FILLS.get(row, "#ffffff")}" stroke="#555"/>')
            middle = x + box_width / 2
            out.append(f'<text x="{middle:.0f}" y="{y + 17}" text-anchor="middle" font-weight="bold">'
                       f'{escape(title)} <tspan font-weight="normal" font-family="monospace">{escape(folder)}'
                       f'</tspan></text>')
            out.append(f'<text x="{middle:.0f}" y="{y + 38}" text-anchor="middle" fill="#333">{escape(note)}</text>')
        y += ROW_HEIGHT + GAP
    out.append(f'<text x="{MARGIN}" y="{y + 14}" fill="#333">Each layer includes only those below it '
               '(tests/scripts/check_layers.py); src/ is libmatexcomm/src; the front ends use the C API '
               'and its headers only.</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    svg = draw(read_rows(os.path.join(HERE, "layers.txt")))
    target = os.path.join(HERE, "layers.svg")
    if "--check" in sys.argv[1:]:
        current = open(target).read() if os.path.exists(target) else ""
        if current != svg:
            print(f"FAIL: {target} is not what layers.txt draws; run {__file__}")
            return 1
        print("layers.svg matches layers.txt")
        return 0
    with open(target, "w") as handle:
        handle.write(svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())

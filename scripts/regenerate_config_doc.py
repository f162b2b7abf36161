#!/usr/bin/env python3
"""Rewrites the table in docs/configuration.md from the code's MATEX_* table.

usage: scripts/regenerate_config_doc.py [build-dir]   (default: build)
The unit test Config.DocsTableMatchesCode fails until this has been run after
a row of libmatexcomm/src/core/config_table.cc changed.
"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "build"
table = subprocess.run([str(build / "bin" / "matex-topo"), "--print-config-markdown"],
                       check=True, capture_output=True, text=True).stdout
doc = root / "docs" / "configuration.md"
text = doc.read_text()
start = text.index("## Variables\n\n") + len("## Variables\n\n")
end = text.index("\n## Notes")
doc.write_text(text[:start] + table + text[end:])
print(f"updated {doc}")

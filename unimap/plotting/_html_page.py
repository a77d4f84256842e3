"""The page of the HTML map: markup, style, and the two inlined scripts
(``html_map_core.js``: decoding, the grid index, one view's drawing and gestures;
``html_map_ui.js``: legend, tooltip, search, selection and its export, linked views).

Nothing from the data reaches the page as markup: the data sit in a JSON block with ``<``,
``>`` and ``&`` escaped, the title is HTML-escaped, and the scripts write every name and value
with ``textContent``.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any

from unimap.plotting._html_data import json_for_script

_SCRIPTS = ("html_map_core.js", "html_map_ui.js")


def render_page(title: str, data: dict[str, Any]) -> str:
    """The whole HTML text: ``data`` (the JSON block) and the scripts put into the page."""
    files = resources.files(__package__)
    script = "\n".join(files.joinpath(name).read_text("utf-8") for name in _SCRIPTS)
    parts = {"TITLE": html.escape(str(title)), "DATA": json_for_script(data),
             "SCRIPT": '(function () {\n"use strict";\n' + script + "\n})();"}
    # one pass, so that nothing substituted (a title, say) is itself searched for slots
    return re.sub(r"\{\{(TITLE|SCRIPT|DATA)\}\}", lambda m: parts[m.group(1)], _PAGE)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{TITLE}}</title>
<style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #fff;
  font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; }
button { font: inherit; padding: 2px 8px; border: 1px solid #bbb; border-radius: 4px;
  background: #fff; cursor: pointer; }
button:hover { background: #f0f0f0; }
button[aria-pressed="true"] { background: #1e64c8; border-color: #1e64c8; color: #fff; }
#unimap-bar { position: absolute; top: 0; left: 0; right: 0; height: 40px; display: flex;
  align-items: center; gap: 12px; padding: 0 12px; border-bottom: 1px solid #ddd;
  background: #fafafa; box-sizing: border-box; white-space: nowrap; }
#unimap-title { font-weight: 600; overflow: hidden; text-overflow: ellipsis; min-width: 40px; }
#unimap-search { width: 170px; font: inherit; padding: 2px 6px; }
#unimap-matches { color: #555; min-width: 60px; }
#unimap-modes { display: inline-flex; gap: 0; }
#unimap-modes button { border-radius: 0; margin-left: -1px; }
#unimap-modes button:first-child { border-radius: 4px 0 0 4px; }
#unimap-modes button:last-child { border-radius: 0 4px 4px 0; }
#unimap-main { position: absolute; top: 40px; bottom: 26px; left: 0; right: 0; display: flex; }
#unimap-panels { flex: 1; display: flex; min-width: 0; }
.unimap-panel { flex: 1; position: relative; min-width: 0; border-right: 1px solid #eee; }
.unimap-panel-name { position: absolute; top: 6px; left: 10px; z-index: 1; font-weight: 600;
  pointer-events: none; background: rgba(255,255,255,0.85); padding: 0 4px; }
.unimap-canvas { position: absolute; top: 0; left: 0; width: 100%; height: 100%;
  cursor: grab; touch-action: none; display: block; }
.unimap-canvas[data-mode="box"], .unimap-canvas[data-mode="lasso"],
.unimap-canvas.selecting { cursor: crosshair; }
.unimap-canvas.dragging { cursor: grabbing; }
#unimap-side { width: 230px; flex: none; overflow-y: auto; border-left: 1px solid #ddd;
  padding: 8px 10px; box-sizing: border-box; background: #fcfcfc; }
#unimap-selection { padding-bottom: 8px; margin-bottom: 8px; border-bottom: 1px solid #ddd; }
#unimap-selection[hidden] { display: none; }
#unimap-selcount { display: block; font-weight: 600; margin-bottom: 4px; }
#unimap-legend { font-size: 12px; }
.unimap-legend-title { font-weight: 600; margin-bottom: 4px; word-break: break-word; }
.unimap-item { display: flex; align-items: center; gap: 6px; white-space: nowrap;
  cursor: pointer; border-radius: 3px; padding: 0 3px; user-select: none; }
.unimap-item:hover { background: #eef; }
.unimap-item.off { opacity: 0.4; text-decoration: line-through; }
.unimap-swatch { width: 10px; height: 10px; border-radius: 50%; flex: none; }
.unimap-link { margin-top: 6px; font-size: 12px; }
.unimap-note { color: #888; font-size: 11px; margin-top: 6px; white-space: normal; }
.unimap-gradient { width: 16px; height: 160px; border-radius: 2px; }
.unimap-scale { display: flex; gap: 6px; }
.unimap-ticks { display: flex; flex-direction: column; justify-content: space-between; }
#unimap-foot { position: absolute; bottom: 0; left: 0; right: 0; height: 26px; display: flex;
  align-items: center; gap: 16px; padding: 0 12px; border-top: 1px solid #ddd;
  background: #fafafa; color: #666; font-size: 12px; box-sizing: border-box;
  white-space: nowrap; overflow: hidden; }
#unimap-status { margin-left: auto; color: #999; }
#unimap-tooltip { position: fixed; pointer-events: none; background: rgba(255,255,255,0.96);
  border: 1px solid #999; border-radius: 4px; padding: 4px 7px; font-size: 12px;
  box-shadow: 0 1px 4px rgba(0,0,0,0.2); max-width: 360px; z-index: 10; }
#unimap-tooltip b { font-weight: 600; }
</style>
</head>
<body>
<div id="unimap-bar">
<span id="unimap-title">{{TITLE}}</span>
<label>colour by <select id="unimap-color"></select></label>
<label title="write the categories' names on the map"><input id="unimap-names"
  type="checkbox" checked> names</label>
<input id="unimap-search" type="search" placeholder="search id or label"
  aria-label="search by id or label">
<span id="unimap-matches" aria-live="polite"></span>
<span id="unimap-modes" role="group" aria-label="what dragging does">
<button type="button" data-mode="pan" title="drag to pan">pan</button><button type="button"
  data-mode="box" title="drag a box to select (or shift+drag)">box select</button><button
  type="button" data-mode="lasso" title="draw around points to select (or alt+drag)">lasso</button>
</span>
<button id="unimap-reset" type="button">reset view</button>
</div>
<div id="unimap-main">
<div id="unimap-panels"></div>
<div id="unimap-side">
<div id="unimap-selection" hidden>
<span id="unimap-selcount"></span>
<button id="unimap-csv" type="button" title="download the selected ids as CSV">CSV</button>
<button id="unimap-json" type="button" title="download the selected ids as JSON">JSON</button>
<button id="unimap-copy" type="button" title="copy the selected ids">copy</button>
<button id="unimap-clear" type="button" title="clear the selection (Esc)">clear</button>
</div>
<div id="unimap-legend"></div>
</div>
</div>
<div id="unimap-foot">
<span id="unimap-hint">drag to pan · scroll to zoom · double-click to zoom in ·
shift+drag to select a box, alt+drag a lasso · hover a point for its values</span>
<span id="unimap-status" hidden></span>
</div>
<div id="unimap-tooltip" role="tooltip" hidden></div>
<script type="application/json" id="unimap-data">{{DATA}}</script>
<script>
{{SCRIPT}}
</script>
</body>
</html>
"""

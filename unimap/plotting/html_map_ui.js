// unimap's HTML map, part 2 of 2: the page around the views (html_map_core.js): colour
// columns and their legend (a click hides or shows a category), the tooltip, search, the
// selection and its export, and the link between side-by-side views (one shared state).

function main() {
  var D = JSON.parse(document.getElementById("unimap-data").textContent);
  var n = D.n;
  var tooltip = document.getElementById("unimap-tooltip");
  var legend = document.getElementById("unimap-legend");
  var select = document.getElementById("unimap-color");
  var search = document.getElementById("unimap-search");
  var matches = document.getElementById("unimap-matches");
  var status = document.getElementById("unimap-status");
  var S = {n: n, views: D.views.map(function (w, v) {   // the first view's points: D.xy
             return {name: w.name, xy: typed(v ? w.xy : D.xy, Float32Array), bounds: v ? w.bounds : D.bounds}; }),
           visible: new Uint8Array(n).fill(1), emphasis: null, emphList: null,
           hovered: -1, hoverView: -1, mode: "pan"};
  S.colors = S.views.map(function () { return new Uint32Array(n); });
  var columns = D.columns.map(decodeColumn), byName = {};
  columns.forEach(function (c) { byName[c.name] = c; });
  var ids = decodeIds(D.ids);
  var viridis = gradientTable(D.viridis);
  var hidden = {};            // column name -> {category index: true}
  var current = null, selectionSource = null;
  var api = {ready: false, n: n, views: S.views.length, tooltipId: "unimap-tooltip",
             loadMs: null, renderMs: null};
  window.unimapMap = api;

  function decodeColumn(c) {
    if (c.kind === "num") {
      return {name: c.name, title: c.title, kind: "num", min: c.min, max: c.max, clipLo: c.clipLo,
              clipHi: c.clipHi, data: c.data.map(function (s) { return typed(s, Float32Array); })};
    }
    return {name: c.name, title: c.title, kind: "cat", codes: codesOf(c.codes, c.width),
            categories: c.categories, colors: c.colors.map(hexToInt), hex: c.colors, counts: c.counts};
  }
  function decodeIds(d) {   // i -> the id as text and as exported (a number for whole ids)
    if (!d) { return function (i, raw) { return raw ? i : String(i); }; }
    if (d.kind === "int") {
      var a = typed(d.data, Int32Array);
      return function (i, raw) { return raw ? a[i] : String(a[i]); };
    }
    var codes = codesOf(d.codes, d.width), names = d.names;
    return function (i) { return names[codes[i]]; };
  }
  function numData(col, v) { return col.data[Math.min(v, col.data.length - 1)]; }

  // ---- the views ----
  var panels = document.getElementById("unimap-panels");
  var views = S.views.map(function (w, v) {
    var panel = el("div", "unimap-panel"), canvas = el("canvas", "unimap-canvas");
    if (v === 0) { canvas.id = "unimap-canvas"; }
    if (S.views.length > 1) { panel.appendChild(el("div", "unimap-panel-name", w.name)); }
    panel.appendChild(canvas);
    panels.appendChild(panel);
    return canvas;
  }).map(function (canvas, v) {
    return createView(S, v, canvas, {hover: onHover, select: onSelect, rendered: onRendered});
  });
  function redraw(points) { views.forEach(function (w) { w.schedule(points); }); }
  function onRendered(ms, points) {
    if (points) { api.renderMs = ms; }
    if (!api.ready) { api.loadMs = performance.now(); api.ready = true; }
    if (D.debug) { status.hidden = false; status.textContent = n.toLocaleString() + " points · frame " + Math.round(ms) + " ms · loaded in " + Math.round(api.loadMs) + " ms"; }
  }

  // ---- colours and legend ----
  function setColor(name) {
    var col = name ? byName[name] : null, i;
    if (name && !col) { throw new Error("no column " + name); }
    current = col;
    S.colors.forEach(function (colors, v) {
      if (!col) { colors.fill(hexToInt(D.defaultColor)); return; }
      if (col.kind === "cat") { for (i = 0; i < n; i++) { colors[i] = col.colors[col.codes[i]]; } return; }
      var data = numData(col, v), lo = col.min, span = (col.max - col.min) || 1, missing = hexToInt(D.missingColor), x;
      for (i = 0; i < n; i++) {
        x = data[i];
        colors[i] = x === x ? viridis[Math.max(0, Math.min(255, Math.round((x - lo) / span * 255)))] : missing;
      }
    });
    S.labels = col && col.kind === "cat" ? labelsOf(col) : null;
    select.value = name || "";
    updateVisible();
  }
  var anchorCache = {};
  function labelsOf(col) {   // the names drawn on the map: categories with a colour of their own
    var other = hexToInt(D.otherColor), K = col.categories.length;
    var anchors = anchorCache[col.name] = anchorCache[col.name] || S.views.map(function (w) {
      return categoryAnchors(w.xy, col.codes, K, n); });
    var order = [];
    for (var k = 0; k < K; k++) { if (col.colors[k] !== other && col.counts[k] > 0) { order.push(k); } }
    order.sort(function (a, b) { return col.counts[b] - col.counts[a] || a - b; });
    return {text: col.categories.map(String), anchors: anchors, order: order, off: {}};
  }
  function hiddenSet() { return current && current.kind === "cat" ? (hidden[current.name] = hidden[current.name] || {}) : {}; }
  function updateVisible() {
    var off = hiddenSet(), any = Object.keys(off).length > 0;
    if (S.labels) { S.labels.off = off; }
    if (!any) { S.visible.fill(1); }
    else { for (var i = 0; i < n; i++) { S.visible[i] = off[current.codes[i]] ? 0 : 1; } }
    if (S.hovered >= 0 && !S.visible[S.hovered]) { onHover(-1, -1); }
    drawLegend();
    redraw(true);
  }
  function toggle(ks) {   // hide the categories ks, or show them if they are all hidden
    var off = hiddenSet(), all = ks.every(function (k) { return off[k]; });
    ks.forEach(function (k) { if (all) { delete off[k]; } else { off[k] = true; } });
    updateVisible();
  }
  function legendItem(color, label, ks, off) {
    var item = el("div", "unimap-item"), sw = el("span", "unimap-swatch");
    sw.style.background = color;
    item.appendChild(sw);
    item.appendChild(el("span", null, label));
    item.setAttribute("role", "button");
    item.tabIndex = 0;
    var isOff = ks.every(function (k) { return off[k]; });
    item.setAttribute("aria-pressed", String(!isOff));
    if (isOff) { item.classList.add("off"); }
    item.title = (isOff ? "show " : "hide ") + label;
    item.addEventListener("click", function () { toggle(ks); });
    item.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); toggle(ks); }
    });
    return item;
  }
  function drawLegend() {
    var col = current;
    legend.replaceChildren();
    if (!col) { return; }
    legend.appendChild(el("div", "unimap-legend-title", col.title));
    if (col.kind === "cat") {
      var off = hiddenSet(), other = [];
      col.categories.forEach(function (name, k) {
        if (col.hex[k] === D.otherColor) { other.push(k); return; }
        legend.appendChild(legendItem(col.hex[k], name + " (" + col.counts[k] + ")", [k], off));
      });
      if (other.length) { legend.appendChild(legendItem(D.otherColor, "other (" + other.length + " categories)", other, off)); }
      if (Object.keys(off).length) {
        var all = el("button", "unimap-link", "show all");
        all.type = "button";
        all.addEventListener("click", function () { hidden[col.name] = {}; updateVisible(); });
        legend.appendChild(all);
      }
      legend.appendChild(el("div", "unimap-note", "click a category to hide or show it"));
    } else {
      var scale = el("div", "unimap-scale"), bar = el("div", "unimap-gradient"), ticks = el("div", "unimap-ticks");
      bar.style.background = "linear-gradient(to top, " + D.viridis.join(", ") + ")";
      ticks.appendChild(el("span", null, (col.clipHi ? "≥ " : "") + fmt(col.max)));
      ticks.appendChild(el("span", null, fmt((col.min + col.max) / 2)));
      ticks.appendChild(el("span", null, (col.clipLo ? "≤ " : "") + fmt(col.min)));
      scale.appendChild(bar); scale.appendChild(ticks);
      legend.appendChild(scale);
    }
  }

  // ---- hover, linked across the views ----
  function onHover(i, v, clientX, clientY) {
    if (i !== S.hovered || v !== S.hoverView) { S.hovered = i; S.hoverView = i < 0 ? -1 : v; redraw(false); }
    if (i < 0) { tooltip.hidden = true; return; }
    tooltip.replaceChildren();
    var line = el("div");
    line.appendChild(el("b", null, D.idName + ": "));
    line.appendChild(document.createTextNode(ids(i)));
    tooltip.appendChild(line);
    D.hover.forEach(function (name) {
      var col = byName[name], row = el("div");
      row.appendChild(el("b", null, name + ": "));
      var value = col.kind === "cat" ? col.categories[col.codes[i]] : fmt(numData(col, v)[i]);
      row.appendChild(document.createTextNode(value));
      tooltip.appendChild(row);
    });
    tooltip.hidden = false;
    var tw = tooltip.offsetWidth, th = tooltip.offsetHeight;
    var x = clientX + 14, y = clientY + 14;
    if (x + tw > window.innerWidth) { x = clientX - tw - 14; }
    if (y + th > window.innerHeight) { y = clientY - th - 14; }
    tooltip.style.left = Math.max(0, x) + "px";
    tooltip.style.top = Math.max(0, y) + "px";
  }

  // ---- selection (box, lasso or search), shown in every view, exported as CSV or JSON ----
  function onSelect(indices, source) {
    selectionSource = indices && indices.length ? source || "drag" : null;
    if (!selectionSource) { S.emphasis = null; S.emphList = null; }
    else {
      S.emphasis = new Uint8Array(n);
      S.emphList = Int32Array.from(indices);
      for (var j = 0; j < indices.length; j++) { S.emphasis[indices[j]] = 1; }
    }
    if (source !== "search") { search.value = ""; matches.textContent = ""; }
    var box = document.getElementById("unimap-selection"), count = S.emphList ? S.emphList.length : 0;
    box.hidden = count === 0;
    document.getElementById("unimap-selcount").textContent = count.toLocaleString() + " selected";
    redraw(true);
  }
  function csvCell(text) {
    text = String(text);
    return /[",\n\r]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }
  function exportSelection(kind) {
    var list = Array.from(S.emphList || []);
    if (kind === "json") { return JSON.stringify(list.map(function (i) { return ids(i, true); })); }
    if (kind !== "csv") { throw new Error("export as csv or json, not " + kind); }
    return [D.idName].concat(list.map(function (i) { return ids(i); })).map(csvCell).join("\n") + "\n";
  }
  function download(kind) {
    var blob = new Blob([exportSelection(kind)], {type: kind === "json" ? "application/json" : "text/csv"});
    var a = el("a"), url = URL.createObjectURL(blob);
    a.href = url; a.download = "selection." + kind;
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function copySelection() {
    var text = exportSelection("csv"), button = document.getElementById("unimap-copy");
    function done(ok) { button.textContent = ok ? "copied" : "copy failed"; setTimeout(function () { button.textContent = "copy"; }, 1500); }
    function fallback() {   // pages opened from file:// may not be allowed the clipboard API
      var area = el("textarea");
      area.value = text; document.body.appendChild(area); area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (err) { ok = false; }
      area.remove(); done(ok);
    }
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, fallback);
    } else { fallback(); }
  }

  // ---- search: an id (exact) or a category name of any column (exact, else a part of it) ----
  function findMatches(query) {
    var q = query.trim().toLowerCase(), found = new Uint8Array(n), i, count = 0;
    if (!q) { return []; }
    for (i = 0; i < n; i++) { if (ids(i).toLowerCase() === q) { found[i] = 1; } }
    columns.forEach(function (col) {
      if (col.kind !== "cat") { return; }
      var names = col.categories.map(function (c) { return c.toLowerCase(); });
      var exact = names.map(function (c) { return c === q; });
      var wanted = exact.some(Boolean) ? exact : names.map(function (c) { return c.indexOf(q) >= 0; });
      if (!wanted.some(Boolean)) { return; }
      for (i = 0; i < n; i++) { if (wanted[col.codes[i]]) { found[i] = 1; } }
    });
    var out = [];
    for (i = 0; i < n; i++) { if (found[i] && S.visible[i]) { out.push(i); count++; } }
    return out;
  }
  function runSearch() {
    var q = search.value, found = findMatches(q);
    matches.textContent = q.trim() ? (found.length ? found.length.toLocaleString() + " found" : "not found") : "";
    if (found.length || selectionSource === "search") { onSelect(found, "search"); }
    if (found.length === 1) { views.forEach(function (w) { w.centerOn(found[0]); }); }
    return found.length;
  }
  var searchTimer = null;
  search.addEventListener("input", function () { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, 200); });
  search.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") { clearTimeout(searchTimer); runSearch(); }
  });

  // ---- controls ----
  function setMode(mode) {
    S.mode = mode;
    document.querySelectorAll("#unimap-modes button").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    });
    views.forEach(function (w) { w.canvas.dataset.mode = mode; });
  }
  document.querySelectorAll("#unimap-modes button").forEach(function (b) {
    b.addEventListener("click", function () { setMode(b.dataset.mode); });
  });
  document.getElementById("unimap-reset").addEventListener("click", function () { views.forEach(function (w) { w.resetView(); }); });
  document.getElementById("unimap-csv").addEventListener("click", function () { download("csv"); });
  document.getElementById("unimap-json").addEventListener("click", function () { download("json"); });
  document.getElementById("unimap-copy").addEventListener("click", copySelection);
  document.getElementById("unimap-clear").addEventListener("click", function () { onSelect(null); });
  document.addEventListener("keydown", function (ev) { if (ev.key === "Escape") { onSelect(null); } });
  window.addEventListener("resize", function () { views.forEach(function (w) { w.resize(); }); });
  select.addEventListener("change", function () { setColor(select.value || null); });
  var names = document.getElementById("unimap-names");
  S.showLabels = names.checked = D.namesOnMap !== false;
  names.addEventListener("change", function () { S.showLabels = names.checked; redraw(false); });
  var none = el("option", null, "(none)");
  none.value = "";
  select.appendChild(none);
  columns.forEach(function (c) {
    var opt = el("option", null, c.name);
    opt.value = c.name;
    select.appendChild(opt);
  });

  api.project = function (i, v) { return views[v || 0].project(i); };
  api.pick = function (clientX, clientY) {
    for (var v = 0; v < views.length; v++) { if (views[v].contains(clientX, clientY)) { return views[v].pick(clientX, clientY); } }
    return -1;
  };
  api.setColor = setColor;
  api.setMode = setMode;
  api.view = views[0].view;
  api.hidden = function () {
    var off = hiddenSet();
    return current && current.kind === "cat" ? current.categories.filter(function (c, k) { return off[k]; }) : [];
  };
  api.search = function (q) { search.value = q; return runSearch(); };
  api.selection = function () { return Array.from(S.emphList || []); };
  api.exportSelection = exportSelection;
  api.hovered = function () { return S.hovered; };
  api.colorOf = function (i, v) { return intToHex(S.colors[v || 0][i]); };
  api.labelsDrawn = function (v) { return views[v || 0].labelsDrawn(); };
  api.labelAnchor = function (name, v) {   // a category's anchor in CSS pixels of view v, or null
    var L = S.labels, k = L ? L.text.indexOf(String(name)) : -1;
    if (k < 0) { return null; }
    return views[v || 0].projectPoint(L.anchors[v || 0][2 * k], L.anchors[v || 0][2 * k + 1]);
  };
  api.setNamesOnMap = function (on) { names.checked = !!on; S.showLabels = !!on; redraw(false); };
  setMode("pan");
  views.forEach(function (w) { w.resize(); w.resetView(); });
  setColor(D.colorBy);
}

(function start() {
  try { main(); } catch (err) {
    var status = document.getElementById("unimap-status");
    status.hidden = false; status.textContent = "error: " + err.message;
    throw err;
  }
})();

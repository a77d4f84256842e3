// The script of unimap's interactive HTML map (inlined by unimap/html_map.py).
(function () {
"use strict";
var status = document.getElementById("unimap-status");
try { main(); } catch (err) { status.textContent = "error: " + err.message; throw err; }

function main() {
  var D = JSON.parse(document.getElementById("unimap-data").textContent);
  var n = D.n;
  var xy = typed(D.xy, Float32Array);
  var canvas = document.getElementById("unimap-canvas");
  var ctx = canvas.getContext("2d");
  var tooltip = document.getElementById("unimap-tooltip");
  var legend = document.getElementById("unimap-legend");
  var select = document.getElementById("unimap-color");
  var columns = D.columns.map(decodeColumn);
  var byName = {};
  columns.forEach(function (c) { byName[c.name] = c; });
  var ids = decodeIds(D.ids);
  var colors = new Uint32Array(n);           // 0xRRGGBB per point
  var viridis = gradientTable(D.viridis);     // 256 packed colours
  var grid = buildGrid();
  var view = {cx: 0, cy: 0, scale: 1};
  var frame = {w: 0, h: 0, dpr: 1, buf: null, img: null};
  var hovered = -1, pending = false, hoverEvent = null, drag = null;
  var api = {ready: false, n: n, tooltipId: "unimap-tooltip", loadMs: null, renderMs: null};
  window.unimapMap = api;

  function b64bytes(s) {
    if (typeof Uint8Array.fromBase64 === "function") { return Uint8Array.fromBase64(s); }
    var bin = atob(s), len = bin.length, out = new Uint8Array(len);
    for (var i = 0; i < len; i++) { out[i] = bin.charCodeAt(i); }
    return out;
  }
  function typed(s, Type) {
    var b = b64bytes(s);
    return new Type(b.buffer, b.byteOffset, b.byteLength / Type.BYTES_PER_ELEMENT);
  }
  function codesOf(s, width) {
    return typed(s, width === 1 ? Uint8Array : width === 2 ? Uint16Array : Uint32Array);
  }
  function hexToInt(h) { return parseInt(h.slice(1), 16); }
  function decodeColumn(c) {
    if (c.kind === "num") {
      return {name: c.name, kind: "num", data: typed(c.data, Float32Array), min: c.min,
              max: c.max};
    }
    return {name: c.name, kind: "cat", codes: codesOf(c.codes, c.width),
            categories: c.categories, colors: c.colors.map(hexToInt), hex: c.colors,
            counts: c.counts};
  }
  function decodeIds(d) {
    if (!d) { return function (i) { return String(i); }; }
    if (d.kind === "int") { var a = typed(d.data, Int32Array);
      return function (i) { return String(a[i]); }; }
    var codes = codesOf(d.codes, d.width), names = d.names;
    return function (i) { return names[codes[i]]; };
  }
  function gradientTable(stops) {
    var t = new Uint32Array(256), m = stops.length - 1;
    var rgb = stops.map(function (h) { var v = hexToInt(h); return [v >> 16, (v >> 8) & 255, v & 255]; });
    for (var k = 0; k < 256; k++) {
      var f = k / 255 * m, j = Math.min(Math.floor(f), m - 1), u = f - j, a = rgb[j], b = rgb[j + 1];
      t[k] = (Math.round(a[0] + (b[0] - a[0]) * u) << 16) | (Math.round(a[1] + (b[1] - a[1]) * u) << 8)
        | Math.round(a[2] + (b[2] - a[2]) * u);
    }
    return t;
  }

  // ---- uniform grid index over the data bounds, for hover look-ups ----
  function buildGrid() {
    var b = D.bounds, g = Math.max(1, Math.min(2048, Math.round(Math.sqrt(n / 2))));
    var w = (b[1] - b[0]) || 1, h = (b[3] - b[2]) || 1;
    var cell = new Uint32Array(n), start = new Uint32Array(g * g + 1), order = new Uint32Array(n);
    for (var i = 0; i < n; i++) {
      var cx = Math.min(g - 1, Math.floor((xy[2 * i] - b[0]) / w * g));
      var cy = Math.min(g - 1, Math.floor((xy[2 * i + 1] - b[2]) / h * g));
      cell[i] = cy * g + cx; start[cell[i] + 1]++;
    }
    for (var k = 0; k < g * g; k++) { start[k + 1] += start[k]; }
    var fill = start.slice(0, g * g);
    for (i = 0; i < n; i++) { order[fill[cell[i]]++] = i; }
    return {g: g, x0: b[0], y0: b[2], w: w, h: h, start: start, order: order};
  }
  function nearest(x, y, radius) {   // data coordinates; -1 if none within radius
    var G = grid, g = G.g, best = -1, bestD = radius * radius;
    var c0 = Math.max(0, Math.floor((x - radius - G.x0) / G.w * g));
    var c1 = Math.min(g - 1, Math.floor((x + radius - G.x0) / G.w * g));
    var r0 = Math.max(0, Math.floor((y - radius - G.y0) / G.h * g));
    var r1 = Math.min(g - 1, Math.floor((y + radius - G.y0) / G.h * g));
    for (var r = r0; r <= r1; r++) {
      for (var c = c0; c <= c1; c++) {
        var k = r * g + c;
        for (var p = G.start[k], e = G.start[k + 1]; p < e; p++) {
          var i = G.order[p], dx = xy[2 * i] - x, dy = xy[2 * i + 1] - y, d = dx * dx + dy * dy;
          if (d <= bestD) { bestD = d; best = i; }
        }
      }
    }
    return best;
  }

  // ---- colours and legend ----
  function setColor(name) {
    var col = name ? byName[name] : null, i;
    if (name && !col) { throw new Error("no column " + name); }
    var base = hexToInt(D.defaultColor), missing = hexToInt(D.missingColor);
    if (!col) { colors.fill(base); }
    else if (col.kind === "cat") {
      for (i = 0; i < n; i++) { colors[i] = col.colors[col.codes[i]]; }
    } else {
      var lo = col.min, span = (col.max - col.min) || 1, v;
      for (i = 0; i < n; i++) {
        v = col.data[i];
        colors[i] = v === v ? viridis[Math.max(0, Math.min(255, Math.round((v - lo) / span * 255)))] : missing;
      }
    }
    select.value = name || "";
    drawLegend(col);
    schedule();
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function drawLegend(col) {
    legend.replaceChildren();
    if (!col) { return; }
    legend.appendChild(el("div", null, col.name)).style.fontWeight = "600";
    if (col.kind === "cat") {
      var other = 0;
      col.categories.forEach(function (name, k) {
        if (col.hex[k] === D.otherColor) { other++; return; }
        var item = el("div", "unimap-item"), sw = el("span", "unimap-swatch");
        sw.style.background = col.hex[k];
        item.appendChild(sw);
        item.appendChild(el("span", null, name + " (" + col.counts[k] + ")"));
        legend.appendChild(item);
      });
      if (other) {
        var item = el("div", "unimap-item"), sw = el("span", "unimap-swatch");
        sw.style.background = D.otherColor;
        item.appendChild(sw);
        item.appendChild(el("span", null, "other (" + other + " categories)"));
        legend.appendChild(item);
      }
    } else {
      var scale = el("div", "unimap-scale"), bar = el("div", "unimap-gradient"), ticks = el("div", "unimap-ticks");
      bar.style.background = "linear-gradient(to top, " + D.viridis.join(", ") + ")";
      ticks.appendChild(el("span", null, fmt(col.max)));
      ticks.appendChild(el("span", null, fmt((col.min + col.max) / 2)));
      ticks.appendChild(el("span", null, fmt(col.min)));
      scale.appendChild(bar); scale.appendChild(ticks);
      legend.appendChild(scale);
    }
  }
  function fmt(v) {
    if (v !== v) { return "missing"; }
    if (Number.isInteger(v)) { return String(v); }
    return String(Number(v.toPrecision(5)));
  }

  // ---- view and rendering ----
  function resetView() {
    var b = D.bounds, r = canvas.getBoundingClientRect();
    var w = (b[1] - b[0]) || 1, h = (b[3] - b[2]) || 1;
    view.cx = (b[0] + b[1]) / 2; view.cy = (b[2] + b[3]) / 2;
    view.scale = 0.92 * Math.min(r.width / w, r.height / h);
    schedule();
  }
  function resize() {
    var r = canvas.getBoundingClientRect();
    var dpr = Math.min(window.devicePixelRatio || 1, 2);
    dpr = Math.min(dpr, Math.sqrt(4e6 / Math.max(1, r.width * r.height)));  // ≤ 4 Mpixel buffers
    var w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
    if (w !== frame.w || h !== frame.h) {
      canvas.width = w; canvas.height = h;
      frame = {w: w, h: h, dpr: w / Math.max(1, r.width), buf: {
        count: new Uint32Array(w * h), r: new Uint32Array(w * h), g: new Uint32Array(w * h),
        b: new Uint32Array(w * h)}, img: ctx.createImageData(w, h)};
    }
    schedule();
  }
  function schedule() {
    if (!pending) { pending = true; requestAnimationFrame(render); }
  }
  function render() {
    pending = false;
    var t0 = performance.now();
    var W = frame.w, H = frame.h, B = frame.buf, s = view.scale * frame.dpr;
    var ox = W / 2 - view.cx * s, oy = H / 2 + view.cy * s, i, k;
    var visible = 0;
    for (i = 0; i < n; i++) {
      var fx = xy[2 * i] * s + ox, fy = oy - xy[2 * i + 1] * s;
      if (fx >= 0 && fx < W && fy >= 0 && fy < H) { visible++; }
    }
    // point radius in device pixels: larger when few points are on screen
    var rad = Math.max(0, Math.min(Math.round(4 * frame.dpr),
      Math.floor(Math.sqrt(W * H / Math.max(visible, 1)) / 7)));
    var offs = [];
    for (var dy = -rad; dy <= rad; dy++) {
      for (var dx = -rad; dx <= rad; dx++) {
        if (dx * dx + dy * dy <= rad * rad + rad) { offs.push(dx, dy); }
      }
    }
    var cnt = B.count, rs = B.r, gs = B.g, bs = B.b;
    cnt.fill(0); rs.fill(0); gs.fill(0); bs.fill(0);
    for (i = 0; i < n; i++) {
      var px = Math.floor(xy[2 * i] * s + ox), py = Math.floor(oy - xy[2 * i + 1] * s);
      if (px < -rad || px >= W + rad || py < -rad || py >= H + rad) { continue; }
      var c = colors[i], cr = c >>> 16, cg = (c >>> 8) & 255, cb = c & 255;
      if (rad === 0) {
        k = py * W + px; cnt[k]++; rs[k] += cr; gs[k] += cg; bs[k] += cb;
        continue;
      }
      for (var o = 0; o < offs.length; o += 2) {
        var qx = px + offs[o], qy = py + offs[o + 1];
        if (qx < 0 || qx >= W || qy < 0 || qy >= H) { continue; }
        k = qy * W + qx; cnt[k]++; rs[k] += cr; gs[k] += cg; bs[k] += cb;
      }
    }
    // opacity: 0.35 for one point, log-rising to 1 at the 99th percentile of the counts
    var hist = new Uint32Array(4097), filled = 0, size = W * H;
    for (k = 0; k < size; k++) { if (cnt[k]) { hist[Math.min(cnt[k], 4096)]++; filled++; } }
    var top = 1, acc = 0;
    for (var v = 1; v <= 4096; v++) { acc += hist[v]; if (acc >= 0.99 * filled) { top = v; break; } }
    var lut = new Float32Array(4097), scale = Math.log1p(Math.max(top, 1));
    for (v = 1; v <= 4096; v++) { lut[v] = Math.min(1, 0.35 + 0.65 * Math.log1p(v) / scale); }
    var out = new Uint32Array(frame.img.data.buffer);  // little-endian: 0xAABBGGRR
    for (k = 0; k < size; k++) {
      var m = cnt[k];
      if (!m) { out[k] = 0xffffffff; continue; }
      var a = lut[Math.min(m, 4096)], f = a / m, bg = 255 * (1 - a);
      out[k] = 0xff000000 | ((bs[k] * f + bg) << 16) | ((gs[k] * f + bg) << 8) | (rs[k] * f + bg);
    }
    ctx.putImageData(frame.img, 0, 0);
    drawHover();
    api.renderMs = performance.now() - t0;
    if (!api.ready) {
      api.loadMs = performance.now();
      api.ready = true;
      status.textContent = n.toLocaleString() + " points · drawn in " + Math.round(api.loadMs) + " ms";
    }
  }
  function drawHover() {
    if (hovered < 0) { return; }
    var p = toCanvas(hovered), d = frame.dpr;
    ctx.beginPath();
    ctx.arc(p[0] * d, p[1] * d, 6 * d, 0, 2 * Math.PI);
    ctx.lineWidth = 2 * d; ctx.strokeStyle = "#000"; ctx.stroke();
  }
  function toCanvas(i) {   // CSS pixels relative to the canvas
    var r = canvas.getBoundingClientRect();
    return [r.width / 2 + (xy[2 * i] - view.cx) * view.scale,
            r.height / 2 - (xy[2 * i + 1] - view.cy) * view.scale];
  }
  function toData(clientX, clientY) {
    var r = canvas.getBoundingClientRect();
    return [view.cx + (clientX - r.left - r.width / 2) / view.scale,
            view.cy - (clientY - r.top - r.height / 2) / view.scale];
  }

  // ---- hover ----
  function pick(clientX, clientY) {
    var p = toData(clientX, clientY);
    return nearest(p[0], p[1], 8 / view.scale);
  }
  function showTooltip(i, clientX, clientY) {
    if (i !== hovered) { hovered = i; schedule(); }
    if (i < 0) { tooltip.hidden = true; return; }
    tooltip.replaceChildren();
    var line = el("div");
    line.appendChild(el("b", null, D.idName + ": "));
    line.appendChild(document.createTextNode(ids(i)));
    tooltip.appendChild(line);
    D.hover.forEach(function (name) {
      var col = byName[name], row = el("div");
      row.appendChild(el("b", null, name + ": "));
      var value = col.kind === "cat" ? col.categories[col.codes[i]] : fmt(col.data[i]);
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
  function hoverLater(ev) {
    if (!hoverEvent) {
      requestAnimationFrame(function () {
        var e = hoverEvent; hoverEvent = null;
        showTooltip(pick(e.clientX, e.clientY), e.clientX, e.clientY);
      });
    }
    hoverEvent = {clientX: ev.clientX, clientY: ev.clientY};
  }

  // ---- events ----
  canvas.addEventListener("pointerdown", function (ev) {
    drag = {x: ev.clientX, y: ev.clientY, cx: view.cx, cy: view.cy};
    canvas.setPointerCapture(ev.pointerId);
    canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointermove", function (ev) {
    if (drag) {
      view.cx = drag.cx - (ev.clientX - drag.x) / view.scale;
      view.cy = drag.cy + (ev.clientY - drag.y) / view.scale;
      tooltip.hidden = true; hovered = -1;
      schedule();
    } else { hoverLater(ev); }
  });
  function endDrag() { drag = null; canvas.classList.remove("dragging"); }
  canvas.addEventListener("pointerup", endDrag);
  canvas.addEventListener("pointercancel", endDrag);
  canvas.addEventListener("pointerleave", function () { if (!drag) { showTooltip(-1); } });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var before = toData(ev.clientX, ev.clientY);
    var delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
    view.scale *= Math.exp(-delta * 0.0015);
    var after = toData(ev.clientX, ev.clientY);
    view.cx += before[0] - after[0]; view.cy += before[1] - after[1];
    showTooltip(-1);
    schedule();
  }, {passive: false});
  canvas.addEventListener("dblclick", function (ev) {
    var before = toData(ev.clientX, ev.clientY);
    view.scale *= 2;
    var after = toData(ev.clientX, ev.clientY);
    view.cx += before[0] - after[0]; view.cy += before[1] - after[1];
    schedule();
  });
  document.getElementById("unimap-reset").addEventListener("click", resetView);
  window.addEventListener("resize", resize);
  select.addEventListener("change", function () { setColor(select.value || null); });

  var none = el("option", null, "(none)");
  none.value = "";
  select.appendChild(none);
  columns.forEach(function (c) {
    var opt = el("option", null, c.name);
    opt.value = c.name;
    select.appendChild(opt);
  });
  api.project = function (i) {
    var p = toCanvas(i), r = canvas.getBoundingClientRect();
    return {x: r.left + p[0], y: r.top + p[1]};
  };
  api.pick = pick;
  api.setColor = setColor;
  api.view = view;
  resize();
  resetView();
  setColor(D.colorBy);
}
})();

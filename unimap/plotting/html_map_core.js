// unimap's HTML map, part 1 of 2 (both parts are inlined into one script by
// unimap/plotting/_html_page.py): decoding the data block, a grid index over the points, and
// one map view: a canvas that draws round, anti-aliased points aggregated per pixel (mean
// colour, opacity rising with the count), pans, zooms, and selects with a box or a lasso.

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
function intToHex(c) { return "#" + (c | 0x1000000).toString(16).slice(1); }
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
function fmt(v) {
  if (v !== v) { return "missing"; }
  if (Number.isInteger(v)) { return String(v); }
  return String(Number(v.toPrecision(5)));
}
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) { e.className = cls; }
  if (text !== undefined) { e.textContent = text; }
  return e;
}

// ---- where each category's name goes: the member nearest the median of its points ----
function categoryAnchors(xy, codes, K, n) {
  var start = new Uint32Array(K + 1), i, k, q;
  for (i = 0; i < n; i++) { start[codes[i] + 1]++; }
  for (k = 0; k < K; k++) { start[k + 1] += start[k]; }
  var fill = start.slice(0, K), xs = new Float32Array(n), ys = new Float32Array(n);
  for (i = 0; i < n; i++) { q = fill[codes[i]]++; xs[q] = xy[2 * i]; ys[q] = xy[2 * i + 1]; }
  var out = new Float64Array(2 * K).fill(NaN);
  for (k = 0; k < K; k++) {
    var a = start[k], b = start[k + 1];
    if (a === b) { continue; }
    var mx = xs.slice(a, b).sort()[(b - a) >> 1], my = ys.slice(a, b).sort()[(b - a) >> 1];
    var best = a, bd = Infinity;   // on a member, so that a ring-shaped group keeps its name on it
    for (q = a; q < b; q++) {
      var dx = xs[q] - mx, dy = ys[q] - my, dd = dx * dx + dy * dy;
      if (dd < bd) { bd = dd; best = q; }
    }
    out[2 * k] = xs[best]; out[2 * k + 1] = ys[best];
  }
  return out;
}

// ---- a uniform grid over one view's points: hover look-ups and selections ----
function buildGrid(xy, n, b) {
  var g = Math.max(1, Math.min(2048, Math.round(Math.sqrt(n / 2))));
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
// calls visit(i) for every point in the grid cells that cover [x0, x1] × [y0, y1] (data units)
function gridVisit(G, x0, y0, x1, y1, visit) {
  var g = G.g;
  var c0 = Math.max(0, Math.floor((x0 - G.x0) / G.w * g)), c1 = Math.min(g - 1, Math.floor((x1 - G.x0) / G.w * g));
  var r0 = Math.max(0, Math.floor((y0 - G.y0) / G.h * g)), r1 = Math.min(g - 1, Math.floor((y1 - G.y0) / G.h * g));
  for (var r = r0; r <= r1; r++) {
    for (var c = c0; c <= c1; c++) {
      var k = r * g + c;
      for (var p = G.start[k], e = G.start[k + 1]; p < e; p++) { visit(G.order[p]); }
    }
  }
}
function insidePolygon(x, y, poly) {   // poly: flat [x0, y0, x1, y1, ...], closed implicitly
  var inside = false, m = poly.length;
  for (var a = 0, b = m - 2; a < m; b = a, a += 2) {
    var ya = poly[a + 1], yb = poly[b + 1];
    if ((ya > y) !== (yb > y) && x < (poly[b] - poly[a]) * (y - ya) / (yb - ya) + poly[a]) { inside = !inside; }
  }
  return inside;
}

// ---- one view of the shared state S on a canvas ----
// S: {n, views[v].xy/.bounds, colors[v], visible, emphasis (mask or null), emphList, hovered,
// mode}; hooks: hover(i, v, clientX, clientY), select(indices or null), rendered(ms, whether
// the points were drawn again or only the rings and outlines over them).
function createView(S, v, canvas, hooks) {
  var xy = S.views[v].xy, n = S.n, grid = buildGrid(xy, n, S.views[v].bounds);
  var ctx = canvas.getContext("2d");
  var view = {cx: 0, cy: 0, scale: 1};
  var frame = {w: 0, h: 0, dpr: 1, buf: null, img: null};
  var pending = false, pointsDirty = true, gesture = null, hoverEvent = null, labelsDrawn = 0;

  function resetView() {
    var b = S.views[v].bounds, r = canvas.getBoundingClientRect();
    var w = (b[1] - b[0]) || 1, h = (b[3] - b[2]) || 1;
    view.cx = (b[0] + b[1]) / 2; view.cy = (b[2] + b[3]) / 2;
    view.scale = 0.92 * Math.min(r.width / w, r.height / h);
    schedule(true);
  }
  function resize() {
    var r = canvas.getBoundingClientRect();
    var dpr = Math.min(window.devicePixelRatio || 1, 2);
    dpr = Math.min(dpr, Math.sqrt(4e6 / Math.max(1, r.width * r.height)));  // ≤ 4 Mpixel buffers
    var w = Math.max(1, Math.round(r.width * dpr)), h = Math.max(1, Math.round(r.height * dpr));
    if (w !== frame.w || h !== frame.h) {
      canvas.width = w; canvas.height = h;
      frame = {w: w, h: h, dpr: w / Math.max(1, r.width), buf: {
        count: new Float32Array(w * h), r: new Float32Array(w * h), g: new Float32Array(w * h),
        b: new Float32Array(w * h)}, img: ctx.createImageData(w, h)};
    }
    schedule(true);
  }
  function schedule(points) {
    if (points) { pointsDirty = true; }
    if (!pending) { pending = true; requestAnimationFrame(render); }
  }
  function render() {
    pending = false;
    var t0 = performance.now(), points = pointsDirty;
    if (points) { pointsDirty = false; drawPoints(); }
    ctx.putImageData(frame.img, 0, 0);
    drawOverlay();
    hooks.rendered(performance.now() - t0, points);
  }

  // A disc of radius r (device pixels): each pixel weighted by how much of it the disc covers
  // (1 inside, falling to 0 over the last pixel), so that points look round at any size.
  function stamp(r) {
    var e = Math.ceil(r + 0.5), offs = [], wts = [];
    for (var dy = -e; dy <= e; dy++) {
      for (var dx = -e; dx <= e; dx++) {
        var cover = Math.min(1, r + 0.5 - Math.sqrt(dx * dx + dy * dy));
        if (cover > 0.02) { offs.push(dx, dy); wts.push(cover); }
      }
    }
    return {offs: Int32Array.from(offs), w: Float32Array.from(wts), reach: e};
  }
  function drawPoints() {
    var W = frame.w, H = frame.h, B = frame.buf, s = view.scale * frame.dpr;
    var ox = W / 2 - view.cx * s, oy = H / 2 + view.cy * s, i, fx, fy;
    var vis = S.visible, emph = S.emphasis, colors = S.colors[v], onScreen = 0;
    for (i = 0; i < n; i++) {
      fx = xy[2 * i] * s + ox; fy = oy - xy[2 * i + 1] * s;
      if (vis[i] && fx >= 0 && fx < W && fy >= 0 && fy < H) { onScreen++; }
    }
    // point radius in device pixels: larger when few points are on screen; below one pixel a
    // point is one pixel's share of ink (a million points are a density, not discs)
    var rad = Math.min(4 * frame.dpr, Math.sqrt(W * H / Math.max(onScreen, 1)) / 7);
    var st = rad >= 1 ? stamp(rad) : null;
    var out = new Uint32Array(frame.img.data.buffer);  // little-endian: 0xAABBGGRR
    out.fill(0xffffffff);
    clearBuffers(B);
    accumulate(B, st, s, ox, oy, null, emph);
    composite(out, B, emph ? 0.5 : 1);
    if (emph) {   // the selected points on top, in their own colours
      clearBuffers(B);
      accumulate(B, st, s, ox, oy, S.emphList, null);
      composite(out, B, 1);
    }
  }
  // adds the shown points of `list` (default all) to the buffers; with a selection `skip`, the
  // points outside it, paler
  function accumulate(B, st, s, ox, oy, list, skip) {
    var W = frame.w, H = frame.h, cnt = B.count, rs = B.r, gs = B.g, bs = B.b;
    var vis = S.visible, colors = S.colors[v], m = list ? list.length : n;
    var offs = st ? st.offs : null, wts = st ? st.w : null, ns = st ? wts.length : 0, reach = st ? st.reach : 0;
    for (var j = 0; j < m; j++) {
      var i = list ? list[j] : j;
      if (!vis[i] || (skip && skip[i])) { continue; }
      var px = Math.round(xy[2 * i] * s + ox), py = Math.round(oy - xy[2 * i + 1] * s);
      if (px < -reach || px >= W + reach || py < -reach || py >= H + reach) { continue; }
      var c = skip ? fade(colors[i]) : colors[i], cr = c >>> 16, cg = (c >>> 8) & 255, cb = c & 255, k;
      if (!st) { k = py * W + px; cnt[k] += 1; rs[k] += cr; gs[k] += cg; bs[k] += cb; continue; }
      for (var o = 0; o < ns; o++) {
        var qx = px + offs[2 * o], qy = py + offs[2 * o + 1];
        if (qx < 0 || qx >= W || qy < 0 || qy >= H) { continue; }
        var f = wts[o];
        k = qy * W + qx; cnt[k] += f; rs[k] += cr * f; gs[k] += cg * f; bs[k] += cb * f;
      }
    }
  }
  function clearBuffers(B) { B.count.fill(0); B.r.fill(0); B.g.fill(0); B.b.fill(0); }
  function fade(c) {   // a selection's other points: paler
    var r = c >>> 16, g = (c >>> 8) & 255, b = c & 255;
    return (Math.round(r * 0.3 + 170) << 16) | (Math.round(g * 0.3 + 170) << 8) | Math.round(b * 0.3 + 170);
  }
  // Blend the accumulated points over `out`: opacity 0.35 for one point (less at the soft edge
  // of a disc), rising with the log of the count to 1 at the 99th percentile of the pixels.
  var STEPS = 8, LUT_SIZE = 4096 * STEPS + 1;   // opacity by count, in 1/8 steps
  function composite(out, B, opacity) {
    var cnt = B.count, size = cnt.length, hist = new Uint32Array(4097), filled = 0, k;
    for (k = 0; k < size; k++) { if (cnt[k] > 0.02) { hist[Math.min(4096, Math.floor(cnt[k]))]++; filled++; } }
    var top = 1, acc = 0;
    for (var c = 0; c <= 4096; c++) { acc += hist[c]; if (acc >= 0.99 * filled) { top = Math.max(1, c); break; } }
    var scale = Math.log1p(top), one = Math.min(1, 0.35 + 0.65 * Math.log1p(1) / scale);
    var lut = new Float32Array(LUT_SIZE);
    for (k = 1; k < LUT_SIZE; k++) {
      var w0 = k / STEPS;
      lut[k] = opacity * (w0 < 1 ? one * w0 : Math.min(1, 0.35 + 0.65 * Math.log1p(w0) / scale));
    }
    var rs = B.r, gs = B.g, bs = B.b;
    for (k = 0; k < size; k++) {
      var w = cnt[k];
      if (w <= 0.02) { continue; }
      var a = lut[Math.min(LUT_SIZE - 1, Math.round(w * STEPS))];
      var old = out[k], keep = 1 - a, f = a / w;
      out[k] = 0xff000000 | ((bs[k] * f + ((old >>> 16) & 255) * keep) << 16)
        | ((gs[k] * f + ((old >>> 8) & 255) * keep) << 8) | (rs[k] * f + (old & 255) * keep);
    }
  }
  function ring(i, radius, width) {
    var p = toCanvas(i), d = frame.dpr;
    ctx.beginPath();
    ctx.arc(p[0] * d, p[1] * d, radius * d, 0, 2 * Math.PI);
    ctx.lineWidth = (width + 2) * d; ctx.strokeStyle = "#fff"; ctx.stroke();
    ctx.lineWidth = width * d; ctx.strokeStyle = "#111"; ctx.stroke();
  }
  // The categories' names at their anchors, largest category first; a name that would
  // overlap one already drawn is left out (zooming in spreads the anchors, so more fit), and
  // each is written dark on a white halo so that it reads over any colour.
  function drawLabels() {
    var L = S.labels;
    if (!L || !S.showLabels) { labelsDrawn = 0; return; }
    var d = frame.dpr, r = canvas.getBoundingClientRect(), at = L.anchors[v], placed = [];
    ctx.font = "600 " + (12 * d) + "px system-ui, -apple-system, 'Segoe UI', sans-serif";
    ctx.textAlign = "center"; ctx.textBaseline = "middle"; ctx.lineJoin = "round";
    for (var q = 0; q < L.order.length; q++) {
      var k = L.order[q];
      if (L.off[k] || at[2 * k] !== at[2 * k]) { continue; }
      var px = (r.width / 2 + (at[2 * k] - view.cx) * view.scale) * d;
      var py = (r.height / 2 - (at[2 * k + 1] - view.cy) * view.scale) * d;
      var half = ctx.measureText(L.text[k]).width / 2 + 3 * d, tall = 8 * d;
      if (px + half < 0 || px - half > frame.w || py + tall < 0 || py - tall > frame.h) { continue; }
      var box = [px - half, py - tall, px + half, py + tall], clear = true;
      for (var j = 0; j < placed.length && clear; j++) {
        var o = placed[j];
        clear = !(box[0] < o[2] && o[0] < box[2] && box[1] < o[3] && o[1] < box[3]);
      }
      if (!clear) { continue; }
      placed.push(box);
      ctx.lineWidth = 4 * d; ctx.strokeStyle = "rgba(255, 255, 255, 0.92)";
      ctx.strokeText(L.text[k], px, py);
      ctx.fillStyle = "#1a1a1a"; ctx.fillText(L.text[k], px, py);
    }
    labelsDrawn = placed.length;
  }
  function drawOverlay() {
    drawLabels();
    var list = S.emphList, d = frame.dpr;
    if (list && list.length <= 30) {   // a few matches (an id searched for) are ringed to be found
      for (var j = 0; j < list.length; j++) { if (S.visible[list[j]]) { ring(list[j], 5, 1.5); } }
    }
    if (S.hovered >= 0 && S.visible[S.hovered]) {
      // the same point in a linked view gets a larger ring, so that the eye finds it
      ring(S.hovered, S.hoverView === v ? 6 : 10, 2);
    }
    if (gesture && gesture.kind !== "pan") {
      ctx.beginPath();
      var r = canvas.getBoundingClientRect(), pts = gesture.path;
      for (var q = 0; q < pts.length; q += 2) { ctx.lineTo((pts[q] - r.left) * d, (pts[q + 1] - r.top) * d); }
      ctx.closePath();
      ctx.fillStyle = "rgba(30, 100, 200, 0.08)"; ctx.fill();
      ctx.setLineDash([5 * d, 4 * d]); ctx.lineWidth = 1.5 * d; ctx.strokeStyle = "#1e64c8"; ctx.stroke();
      ctx.setLineDash([]);
    }
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
  function pick(clientX, clientY) {   // the nearest shown point within 8 CSS pixels, or -1
    var p = toData(clientX, clientY), radius = 8 / view.scale, best = -1, bestD = radius * radius;
    gridVisit(grid, p[0] - radius, p[1] - radius, p[0] + radius, p[1] + radius, function (i) {
      var dx = xy[2 * i] - p[0], dy = xy[2 * i + 1] - p[1], dd = dx * dx + dy * dy;
      if (dd <= bestD && S.visible[i]) { bestD = dd; best = i; }
    });
    return best;
  }
  function selectPath(path) {   // shown points inside a client-coordinate box or lasso
    var poly = [], x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity, found = [];
    for (var q = 0; q < path.length; q += 2) {
      var p = toData(path[q], path[q + 1]);
      poly.push(p[0], p[1]);
      x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]); y0 = Math.min(y0, p[1]); y1 = Math.max(y1, p[1]);
    }
    var box = gesture.kind === "box";
    gridVisit(grid, x0, y0, x1, y1, function (i) {
      var x = xy[2 * i], y = xy[2 * i + 1];
      if (S.visible[i] && x >= x0 && x <= x1 && y >= y0 && y <= y1 && (box || insidePolygon(x, y, poly))) { found.push(i); }
    });
    return found.sort(function (a, b) { return a - b; });
  }
  function boxPath(g, x, y) { return [g.x, g.y, x, g.y, x, y, g.x, y]; }

  canvas.addEventListener("pointerdown", function (ev) {
    if (ev.button !== 0) { return; }
    var kind = ev.shiftKey || S.mode === "box" ? "box" : ev.altKey || S.mode === "lasso" ? "lasso" : "pan";
    gesture = {kind: kind, x: ev.clientX, y: ev.clientY, cx: view.cx, cy: view.cy, moved: 0,
               path: [ev.clientX, ev.clientY]};
    canvas.setPointerCapture(ev.pointerId);
    canvas.classList.add(kind === "pan" ? "dragging" : "selecting");
    hooks.hover(-1, v);
  });
  canvas.addEventListener("pointermove", function (ev) {
    var g = gesture;
    if (!g) { hoverLater(ev); return; }
    g.moved = Math.max(g.moved, Math.abs(ev.clientX - g.x) + Math.abs(ev.clientY - g.y));
    if (g.kind === "pan") {
      view.cx = g.cx - (ev.clientX - g.x) / view.scale;
      view.cy = g.cy + (ev.clientY - g.y) / view.scale;
      schedule(true);
      return;
    }
    if (g.kind === "box") { g.path = boxPath(g, ev.clientX, ev.clientY); }
    else {
      var last = g.path.length - 2;
      if (Math.abs(ev.clientX - g.path[last]) + Math.abs(ev.clientY - g.path[last + 1]) >= 3) { g.path.push(ev.clientX, ev.clientY); }
    }
    schedule(false);
  });
  function endGesture(ev, cancelled) {
    var g = gesture;
    if (!g) { return; }
    canvas.classList.remove("dragging", "selecting");
    if (g.kind !== "pan" && !cancelled) {
      if (g.kind === "box") { g.path = boxPath(g, ev.clientX, ev.clientY); }
      // a click without a drag clears the selection
      hooks.select(g.moved < 4 || g.path.length < 6 ? null : selectPath(g.path));
    }
    gesture = null;
    schedule(false);
  }
  canvas.addEventListener("pointerup", function (ev) { endGesture(ev, false); });
  canvas.addEventListener("pointercancel", function (ev) { endGesture(ev, true); });
  canvas.addEventListener("pointerleave", function () { if (!gesture) { hooks.hover(-1, v); } });
  function zoomAt(clientX, clientY, factor) {
    var before = toData(clientX, clientY);
    view.scale *= factor;
    var after = toData(clientX, clientY);
    view.cx += before[0] - after[0]; view.cy += before[1] - after[1];
    hooks.hover(-1, v);
    schedule(true);
  }
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var delta = ev.deltaMode === 1 ? ev.deltaY * 16 : ev.deltaY;
    zoomAt(ev.clientX, ev.clientY, Math.exp(-delta * 0.0015));
  }, {passive: false});
  canvas.addEventListener("dblclick", function (ev) { zoomAt(ev.clientX, ev.clientY, 2); });
  function hoverLater(ev) {
    if (!hoverEvent) {
      requestAnimationFrame(function () {
        var e = hoverEvent; hoverEvent = null;
        hooks.hover(pick(e.clientX, e.clientY), v, e.clientX, e.clientY);
      });
    }
    hoverEvent = {clientX: ev.clientX, clientY: ev.clientY};
  }
  function centerOn(i) {
    var p = toCanvas(i), r = canvas.getBoundingClientRect();
    if (p[0] < 0 || p[0] > r.width || p[1] < 0 || p[1] > r.height) {
      view.cx = xy[2 * i]; view.cy = xy[2 * i + 1]; schedule(true);
    }
  }

  return {
    canvas: canvas, view: view, resize: resize, resetView: resetView, schedule: schedule,
    pick: pick, centerOn: centerOn,
    labelsDrawn: function () { return labelsDrawn; },
    project: function (i) {
      var p = toCanvas(i), r = canvas.getBoundingClientRect();
      return {x: r.left + p[0], y: r.top + p[1]};
    },
    projectPoint: function (x, y) {   // data coordinates -> client pixels
      var r = canvas.getBoundingClientRect();
      return {x: r.left + r.width / 2 + (x - view.cx) * view.scale,
              y: r.top + r.height / 2 - (y - view.cy) * view.scale};
    },
    contains: function (clientX, clientY) {
      var r = canvas.getBoundingClientRect();
      return clientX >= r.left && clientX < r.right && clientY >= r.top && clientY < r.bottom;
    }
  };
}

/* attn view: the head, model, matrix and steps views of one view document (attn view -f json).
   Hand-written, no framework, no request: everything it draws comes from the JSON in #attn-data.
   An encoder–decoder's document has "parts" (cross, decoder, encoder), each with what a one-part document has
   at its top (tokens, context_tokens, masks, layers): choosing a part puts its fields where the views read. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("attn-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var Q, K, CROSS, ROWS, COLS;  // the rows' and columns' tokens, whether they differ, and what they are called
  function usePart(name) {
    var P = D.parts ? D.parts[name] : D;
    if (D.parts) { S.part = name; D.layers = P.layers; D.masks = P.masks; }
    Q = markGenerated(P.tokens); K = P.context_tokens || Q; CROSS = !!P.context_tokens;
    ROWS = D.parts ? P.queries + " (queries)" : CROSS ? "text (queries)" : "queries";
    COLS = D.parts ? P.keys + " (keys)" : CROSS ? "context (keys)" : "keys";
  }
  // --generate: the tokens the model wrote after the text (from D.generated.from on) are labelled with ›, as in the
  // terminal's tables (never by colour alone)
  function markGenerated(tokens) {
    var from = D.generated ? D.generated.from : tokens.length;
    return tokens.map(function (t, i) { return i >= from ? "\u203a" + t : t; });
  }
  // --generate, stepped (n / p): the text and the first tokens the model wrote, the newest one's row over
  // everything before it, as the model saw it when it wrote the next; Escape shows the whole sequence again
  function stepGenerated(by) {
    var total = D.tokens.length, from = D.generated.from;
    var upto = S.upto === null ? (by > 0 ? from : total) + by : S.upto + by;  // from the whole: the first or last
    S.upto = Math.max(from + 1, Math.min(total, upto));
    Q = markGenerated(D.tokens).slice(0, S.upto); K = Q;
    draw();
    say("written token " + (S.upto - from) + " of " + (total - from) + ": " + shown(Q[S.upto - 1]) +
      ", its row over everything before it; n / p step, Escape shows the whole sequence");
  }
  function showWholeSequence() { S.upto = null; usePart(D.part); }
  function alignment() { return !!D.parts && CROSS; }  // an encoder–decoder's cross-attention: target × source
  var HEAD_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#e08a0b", "#17becf",
    "#8c564b", "#e377c2", "#6b6b6b", "#a7a81c", "#393b9a", "#4f7a1f"];
  var DASHES = ["", "7 3", "2 3", "9 3 2 3"];  // colour is never the only sign of a head
  var VIEWS = [["head", "Head"], ["model", "Model"], ["matrix", "Matrix"]];
  if (D.steps) VIEWS.push(["steps", "Steps"]);
  var S = { view: "head", layer: 0, heads: [], mean: false, part: null, focus: null, pinned: false, cell: [0, 0], pin: null, upto: null };
  usePart(D.part);
  D.layers.forEach(function (l, i) { if (l.layer === D.layer) S.layer = i; });
  D.layers[S.layer].heads.forEach(function (h, i) { if (h.head === D.head) S.heads = [i]; });
  if (!S.heads.length) S.heads = [0];
  VIEWS.forEach(function (v) { if (location.hash === "#" + v[0]) S.view = v[0]; });  // view.html#matrix opens there
  var C = {};  // the theme's colours, read from the stylesheet at each drawing
  var stage, readout, layerSelect, headBox, meanBox, meanLabel, partSelect, tabs = {};

  // ---- small helpers ------------------------------------------------------------------------------
  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, attrs, parent, text) {
    var e = document.createElement(tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function rgb(hex) { var v = parseInt(hex.trim().slice(1), 16); return [v >> 16 & 255, v >> 8 & 255, v & 255]; }
  function readColors() {
    var cs = getComputedStyle(document.documentElement);
    ["bg", "fg", "muted", "line", "panel", "accent", "cell0", "cell1", "masked", "mark"].forEach(function (n) {
      C[n] = cs.getPropertyValue("--" + n).trim();
    });
    C.c0 = rgb(C.cell0); C.c1 = rgb(C.cell1);
  }
  function ramp(t) {  // weight 0..1 -> colour between --cell0 and --cell1
    var c = [0, 1, 2].map(function (i) { return Math.round(C.c0[i] + (C.c1[i] - C.c0[i]) * Math.sqrt(t)); });
    return c;
  }
  function css(c) { return "rgb(" + c.join(",") + ")"; }
  var measure = document.createElement("canvas").getContext("2d");
  function textWidth(s, px, weight) {
    measure.font = (weight || 400) + " " + (px || 12) + "px system-ui, sans-serif";
    return measure.measureText(s).width;
  }
  function shown(tok) {  // a token as drawn: controls and blanks visible, never acting
    return String(tok).replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, function (c) {
      var code = c.charCodeAt(0);
      return code < 256 ? "\\x" + ("0" + code.toString(16)).slice(-2) : "\\u" + ("000" + code.toString(16)).slice(-4);
    }).replace(/^ | $/g, "\u2423") || "\u2205";
  }
  function layerOf() { return D.layers[S.layer]; }
  function headOf(i) { return S.mean && i === undefined ? meanHead() : layerOf().heads[i === undefined ? S.heads[0] : i]; }
  function meanHead() {  // the mean over the layer's heads (of the drawn weights), as a head the views can draw
    var heads = layerOf().heads, weights = heads[0].weights.map(function (row, i) {
      return row.map(function (_, j) {
        return heads.reduce(function (t, h) { return t + h.weights[i][j]; }, 0) / heads.length;
      });
    });
    var mask = heads.every(function (h) { return h.mask === heads[0].mask; }) ? heads[0].mask : null;
    return { head: "mean", label: "", mask: mask, weights: weights };
  }
  function headName(head) { return head.head === "mean" ? "mean of the " + layerOf().heads.length + " heads" : "head " + head.head; }
  function shownHeads() { return S.mean ? [-1] : S.heads; }  // the heads drawn; -1 is their mean
  function headAt(hi) { return hi < 0 ? meanHead() : headOf(hi); }
  function masked(head, i, j) { return head.mask !== null && D.masks[head.mask][i].charAt(j) === "1"; }
  function weight(head, i, j) { return head.weights[i][j] / D.scale; }
  function round(x) { return (Math.round(x * D.scale) / D.scale).toFixed(3); }
  function newSvg(w, h, label) {
    var svg = el("svg", { xmlns: NS, width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img",
      "aria-label": label, "font-family": "system-ui, sans-serif", "font-size": 12 });
    el("style", {}, svg, "text{fill:" + C.fg + "} .mono{font-family:ui-monospace,monospace}" +
      " .focused .lines line:not(.on){visibility:hidden} .tok{cursor:pointer;outline:none}" +
      " .tok:focus rect,.tok.sel rect{stroke:" + C.accent + ";stroke-width:2} .thumb{cursor:pointer;outline:none}" +
      " .thumb:focus>rect{stroke:" + C.accent + ";stroke-width:3}");
    el("rect", { width: w, height: h, fill: C.bg }, svg);
    return svg;
  }
  function say(text) { readout.textContent = text; }
  function where() {
    var l = layerOf();
    return (D.parts ? S.part + " " : "") + (D.model ? "layer " + l.layer + ", " : "") + headName(headOf());
  }

  // ---- head view: queries left, keys right, a line per weight ---------------------------------------
  function drawHead(width) {
    var rowH = 22, top = 46, px = 13;
    var wq = Math.max.apply(null, Q.map(function (t) { return textWidth(shown(t), px); }).concat([40, textWidth(ROWS, 12, 600)])) + 16;
    var wk = Math.max.apply(null, K.map(function (t) { return textWidth(shown(t), px); }).concat([40, textWidth(COLS, 12, 600)])) + 16;
    var gap = Math.max(160, Math.min(360, width - wq - wk - 40));
    var xq = 10 + wq, xk = xq + gap, h = top + Math.max(Q.length, K.length) * rowH + 10;
    var svg = newSvg(xk + wk + 10, h, "head view: lines from each query to its keys, opacity = weight");
    el("text", { x: xq - 6, y: 18, "text-anchor": "end", "font-weight": 600 }, svg, ROWS);
    el("text", { x: xk + 6, y: 18, "font-weight": 600 }, svg, COLS);
    var names = S.mean ? headName(meanHead()) : (S.heads.length > 1 ? "heads " : "head ") +
      S.heads.map(function (hi) { return headOf(hi).head; }).join(", ");
    el("text", { x: (xq + xk) / 2, y: 34, "text-anchor": "middle", fill: C.muted }, svg,
      (D.parts ? S.part + " " : "") + (D.model ? "layer " + layerOf().layer + ", " : "") + names);
    if (CROSS) el("line", { x1: (xq + xk) / 2, x2: (xq + xk) / 2, y1: top - 6, y2: h - 4, stroke: C.muted,
      "stroke-dasharray": "4 4" }, svg).setAttribute("class", "boundary");
    var lines = el("g", { "class": "lines", "stroke-width": 2, "stroke-linecap": "round" }, svg);
    var y = function (i) { return top + i * rowH + rowH / 2; };
    shownHeads().forEach(function (hi) {
      var c = Math.max(0, hi), head = headAt(hi), color = HEAD_COLORS[c % HEAD_COLORS.length], dash = DASHES[c % DASHES.length];
      var g = el("g", { stroke: color, "stroke-dasharray": dash || null, "data-head": head.head }, lines);
      for (var i = 0; i < Q.length; i++) for (var j = 0; j < K.length; j++) {
        var w = head.weights[i][j];
        if (w <= 0 || masked(head, i, j)) continue;
        el("line", { x1: xq + 4, y1: y(i), x2: xk - 4, y2: y(j), "stroke-opacity": w / D.scale,
          "data-q": i, "data-k": j }, g);
      }
    });
    [[Q, "q", xq, "end", wq], [K, "k", xk, "start", wk]].forEach(function (side) {
      side[0].forEach(function (t, i) {
        var g = el("g", { "class": "tok", tabindex: 0, "data-side": side[1], "data-i": i, role: "button",
          "aria-label": (side[1] === "q" ? "query " : "key ") + i + " " + t }, svg);
        var x0 = side[3] === "end" ? side[2] - side[4] : side[2];
        el("rect", { x: x0, y: y(i) - rowH / 2 + 1, width: side[4], height: rowH - 2, rx: 3, fill: C.panel,
          stroke: "none" }, g);
        el("text", { x: side[3] === "end" ? side[2] - 6 : side[2] + 6, y: y(i) + 4, "text-anchor": side[3],
          "class": "mono", "font-size": px }, g, shown(t));
      });
    });
    svg.addEventListener("mouseover", function (e) { var t = e.target.closest(".tok"); if (t && !S.pinned) focusToken(t); });
    svg.addEventListener("focusin", function (e) { var t = e.target.closest(".tok"); if (t && !S.pinned) focusToken(t); });
    svg.addEventListener("mouseleave", function () { if (!S.pinned) focusToken(null); });
    svg.addEventListener("click", function (e) {
      var t = e.target.closest(".tok");
      if (!t) return;
      S.pinned = !(S.pinned && S.focus === t.dataset.side + t.dataset.i);
      focusToken(t);
    });
    svg.addEventListener("keydown", function (e) {
      var t = e.target.closest(".tok");
      if (!t) return;
      var i = +t.dataset.i, side = t.dataset.side, n = side === "q" ? Q.length : K.length, next = null;
      if (e.key === "ArrowDown") next = [side, Math.min(n - 1, i + 1)];
      if (e.key === "ArrowUp") next = [side, Math.max(0, i - 1)];
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        var other = e.key === "ArrowRight" ? "k" : "q";
        next = [other, Math.min(i, (other === "q" ? Q.length : K.length) - 1)];
      }
      if (e.key === "Enter" || e.key === " ") { S.pinned = !S.pinned; focusToken(t); e.preventDefault(); }
      if (next) {
        var target = svg.querySelector('.tok[data-side="' + next[0] + '"][data-i="' + next[1] + '"]');
        S.pinned = false; target.focus(); e.preventDefault();
      }
    });
    return svg;
  }
  function focusToken(t) {
    var svg = stage.querySelector("svg");
    svg.querySelectorAll(".tok.sel").forEach(function (x) { x.classList.remove("sel"); });
    svg.querySelectorAll("line.on").forEach(function (x) { x.classList.remove("on"); });
    if (!t) { svg.classList.remove("focused"); S.focus = null; say(hint()); return; }
    var side = t.dataset.side, i = +t.dataset.i;
    S.focus = side + i;
    t.classList.add("sel");
    svg.classList.add("focused");
    svg.querySelectorAll(".lines line[data-" + side + '="' + i + '"]').forEach(function (x) { x.classList.add("on"); });
    var parts = shownHeads().map(function (hi) {
      var head = headAt(hi), pairs = [];
      var n = side === "q" ? K.length : Q.length;
      for (var j = 0; j < n; j++) {
        var a = side === "q" ? i : j, b = side === "q" ? j : i;
        if (!masked(head, a, b)) pairs.push([head.weights[a][b], j]);
      }
      pairs.sort(function (x, y) { return y[0] - x[0]; });
      return headName(head) + ": " + pairs.slice(0, 4).map(function (p) {
        return shown((side === "q" ? K : Q)[p[1]]) + " " + (p[0] / D.scale).toFixed(3);
      }).join(", ");
    });
    say((side === "q" ? "query " : "key ") + i + " " + shown((side === "q" ? Q : K)[i]) +
      (side === "q" ? " attends to" : " is attended by") + (S.pinned ? " (pinned: click again or Esc)" : "") +
      "\n" + parts.join("\n"));
  }

  // ---- model view: every layer × head as a thumbnail, labelled with its pattern ----------------------
  function heatmapURL(head) {
    var cv = document.createElement("canvas"), m = Q.length, n = K.length;
    cv.width = n; cv.height = m;
    var ctx = cv.getContext("2d"), img = ctx.createImageData(n, m), hatch = rgb(C.masked);
    for (var i = 0; i < m; i++) for (var j = 0; j < n; j++) {
      var c = masked(head, i, j) ? ((i + j) % 2 ? hatch : rgb(C.bg)) : ramp(weight(head, i, j)), o = 4 * (i * n + j);
      img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return cv.toDataURL("image/png");
  }
  var SHORT = { "previous-token": "prev", "diagonal": "diag", "first-token/sink": "sink", "broad": "broad" };
  function drawModel(width) {
    var nh = D.layers[0].heads.length, nl = D.layers.length, left = 34, top = 22;
    var size = Math.max(44, Math.min(96, Math.floor((width - left - 10) / nh) - 6)), cellW = size + 6, cellH = size + 20;
    var svg = newSvg(left + nh * cellW + 10, top + nl * cellH + 8, "model view: every layer and head" + (D.parts ? " of the " + S.part : ""));
    for (var h = 0; h < nh; h++) el("text", { x: left + h * cellW + size / 2, y: 15, "text-anchor": "middle", fill: C.muted }, svg, "H" + D.layers[0].heads[h].head);
    D.layers.forEach(function (layer, li) {
      el("text", { x: 4, y: top + li * cellH + size / 2 + 4, fill: C.muted }, svg, "L" + layer.layer);
      layer.heads.forEach(function (head, hi) {
        var x = left + hi * cellW, y = top + li * cellH;
        var g = el("g", { "class": "thumb", tabindex: 0, role: "button", "data-l": li, "data-h": hi,
          "aria-label": "layer " + layer.layer + " head " + head.head + (head.label ? ", " + head.label : "") }, svg);
        el("title", {}, g, "layer " + layer.layer + ", head " + head.head + (head.label ? ": " + head.label : "") + " (open in the head view)");
        el("image", { x: x, y: y, width: size, height: size, href: heatmapURL(head), preserveAspectRatio: "none",
          style: "image-rendering:pixelated" }, g);
        el("rect", { x: x, y: y, width: size, height: size, fill: "none",
          stroke: li === S.layer && (S.mean || S.heads.indexOf(hi) >= 0) ? C.accent : C.line }, g);
        el("text", { x: x + size / 2, y: y + size + 13, "text-anchor": "middle", "font-size": 10.5,
          "font-weight": head.label ? 600 : 400, fill: head.label ? C.fg : C.muted }, g, SHORT[head.label] || head.label || "·");
      });
    });
    function open(t) { S.layer = +t.dataset.l; S.heads = [+t.dataset.h]; S.mean = false; setView("head"); }
    svg.addEventListener("click", function (e) { var t = e.target.closest(".thumb"); if (t) open(t); });
    svg.addEventListener("focusin", function (e) {
      var t = e.target.closest(".thumb");
      if (t) say(t.getAttribute("aria-label") + ": Enter opens it in the head view");
    });
    svg.addEventListener("keydown", function (e) {
      var t = e.target.closest(".thumb");
      if (!t) return;
      var l = +t.dataset.l, h = +t.dataset.h;
      if (e.key === "Enter" || e.key === " ") { open(t); e.preventDefault(); return; }
      var d = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[e.key];
      if (!d) return;
      var next = svg.querySelector('.thumb[data-l="' + Math.max(0, Math.min(nl - 1, l + d[0])) + '"][data-h="' +
        Math.max(0, Math.min(nh - 1, h + d[1])) + '"]');
      next.focus(); e.preventDefault();
    });
    return svg;
  }

  // ---- matrix view: one head's weights, row maxima marked, masked cells hatched, a legend --------------
  function hatch(svg) {
    var defs = el("defs", {}, svg);
    var p = el("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 6, height: 6, fill: C.bg }, p);
    el("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: C.masked, "stroke-width": 3 }, p);
  }
  function legend(svg, x, y) {
    var defs = svg.querySelector("defs"), grad = el("linearGradient", { id: "ramp" }, defs);
    for (var s = 0; s <= 10; s++) el("stop", { offset: s / 10, "stop-color": css(ramp(s / 10)) }, grad);
    el("text", { x: x, y: y, "font-weight": 600 }, svg, "weight");
    el("rect", { x: x, y: y + 6, width: 160, height: 12, fill: "url(#ramp)", stroke: C.line }, svg);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      el("text", { x: x + 160 * t, y: y + 31, "text-anchor": "middle", "font-size": 10.5 }, svg, String(t));
    });
    el("rect", { x: x + 190, y: y + 6, width: 12, height: 12, fill: "url(#hatch)", stroke: C.line }, svg);
    el("text", { x: x + 207, y: y + 16 }, svg, "masked (weight 0)");
    el("circle", { cx: x + 330, cy: y + 12, r: 4, fill: C.mark, stroke: C.bg }, svg);
    el("text", { x: x + 340, y: y + 16 }, svg, alignment() ? "each target token's strongest source token" : "row maximum");
  }
  function drawGrid(svg, x0, y0, c, m, n, fill, cls) {
    var g = el("g", { "class": cls, tabindex: 0, role: "grid", "aria-label": cls + ": arrow keys move, Enter shows the exact value" }, svg);
    for (var i = 0; i < m; i++) for (var j = 0; j < n; j++) {
      var f = fill(i, j);
      el("rect", { x: x0 + j * c, y: y0 + i * c, width: c, height: c, fill: f, stroke: C.bg, "stroke-width": c > 8 ? 1 : 0,
        "data-i": i, "data-j": j }, g);
    }
    return g;
  }
  function gridEvents(g, x0, y0, c, ch, m, n, describe) {  // c × ch cells, m rows, n columns
    var cursor = el("rect", { x: x0, y: y0, width: c, height: ch, fill: "none", stroke: C.accent, "stroke-width": 2.5,
      visibility: "hidden", "pointer-events": "none" }, g);
    function show(i, j, pin) {
      S.cell = [i, j];
      cursor.setAttribute("x", x0 + j * c); cursor.setAttribute("y", y0 + i * ch); cursor.setAttribute("visibility", "visible");
      say(describe(i, j, pin));
    }
    g.addEventListener("mousemove", function (e) { var d = e.target.dataset; if (d && d.i !== undefined && !S.pin) show(+d.i, +d.j, false); });
    g.addEventListener("click", function (e) {
      var d = e.target.dataset; if (!d || d.i === undefined) return;
      S.pin = S.pin ? null : [+d.i, +d.j]; show(+d.i, +d.j, !!S.pin);
    });
    g.addEventListener("focus", function () { show(Math.min(S.cell[0], m - 1), Math.min(S.cell[1], n - 1), false); });
    g.addEventListener("keydown", function (e) {
      var d = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[e.key];
      var i = S.cell[0], j = S.cell[1];
      if (e.key === "Enter" || e.key === " ") { show(i, j, true); e.preventDefault(); return; }
      if (!d) return;
      S.pin = null;
      show(Math.max(0, Math.min(m - 1, i + d[0])), Math.max(0, Math.min(n - 1, j + d[1])), false);
      e.preventDefault();
    });
  }
  function exactWeight(hi, i, j) {  // the exact float, or the command that prints it
    var w = stepArray("weights");
    if (w && S.mean) return "exact: the mean of the heads' exact weights = " +
      w.reduce(function (t, a) { return t + a[i][j]; }, 0) / w.length;
    if (w) return "exact: " + w[hi][i][j];
    if (!D.exact) return "";
    var head = headOf(hi), fill = function (s) {
      return s.replace("{part}", S.part).replace("{layer}", layerOf().layer).replace("{head}", head.head)
        .replace("{query}", i).replace("{key}", j);
    };
    if (S.mean) return "exact: " + fill(D.exact.mean_command) + " | jq '" + fill(D.exact.mean_path) + "'";
    return "exact: " + fill(D.exact.command) + " | jq '" + fill(D.exact.path) + "'";
  }
  function drawMatrix(width) {
    var head = headOf(), m = Q.length, n = K.length, px = 12;
    var wq = Math.max.apply(null, Q.map(function (t) { return textWidth(shown(t), px); })) + 12;
    var wk = Math.min(140, Math.max.apply(null, K.map(function (t) { return textWidth(shown(t), px); })) + 12);
    var c = Math.max(6, Math.min(40, Math.floor((width - wq - 30) / n)));
    var title = where() + (alignment() ? ", the alignment" : "") + ": rows " + ROWS + ", columns " + COLS + "; each row sums to 1";
    var x0 = wq + 8, y0 = wk * 0.75 + 40, svgH = y0 + m * c + 70;
    var svgW = Math.max(x0 + n * c + 20, 460, textWidth(title, 12, 600) + 16);
    var svg = newSvg(svgW, svgH, "matrix view: weights of " + where());
    hatch(svg);
    el("text", { x: 4, y: 16, "font-weight": 600 }, svg, title);
    var fontQ = c >= 12 ? px : Math.max(7, c - 1);
    Q.forEach(function (t, i) { el("text", { x: x0 - 6, y: y0 + i * c + c / 2 + 4, "text-anchor": "end", "class": "mono", "font-size": fontQ }, svg, shown(t)); });
    K.forEach(function (t, j) {
      var x = x0 + j * c + c / 2 + 3, y = y0 - 6;
      el("text", { x: x, y: y, transform: "rotate(-45 " + x + " " + y + ")", "class": "mono", "font-size": fontQ }, svg, shown(t));
    });
    var g = drawGrid(svg, x0, y0, c, m, n, function (i, j) {
      return masked(head, i, j) ? "url(#hatch)" : css(ramp(weight(head, i, j)));
    }, "matrix");
    for (var i = 0; i < m; i++) {  // the row maximum: a dot, not only a colour
      var best = -1, at = 0;
      for (var j = 0; j < n; j++) if (!masked(head, i, j) && head.weights[i][j] > best) { best = head.weights[i][j]; at = j; }
      el("circle", { cx: x0 + at * c + c / 2, cy: y0 + i * c + c / 2, r: Math.max(1.5, c * 0.16), fill: C.mark, stroke: C.bg,
        "stroke-width": 1, "pointer-events": "none", "class": "rowmax" }, g);
    }
    if (CROSS) {  // the boundary between the text's queries and the context's keys
      el("rect", { x: x0 - 1, y: y0 - 1, width: n * c + 2, height: m * c + 2, fill: "none", stroke: C.accent,
        "stroke-width": 2, "stroke-dasharray": "6 3", "class": "boundary" }, svg);
      el("text", { x: x0, y: y0 + m * c + 16, fill: C.accent }, svg, alignment() ?
        "cross-attention: target (decoder) queries × source (encoder) keys" : "cross-attention: text queries × context keys");
    }
    legend(svg, 8, y0 + m * c + (CROSS ? 26 : 14));
    gridEvents(g, x0, y0, c, c, m, n, function (i, j, pin) {
      var row = head.weights[i], max = Math.max.apply(null, row.filter(function (w, k) { return !masked(head, i, k); }));
      var text = "query " + i + " " + shown(Q[i]) + " → key " + j + " " + shown(K[j]) + " (" + where() + "): ";
      if (masked(head, i, j)) return text + "masked, weight 0";
      return text + "weight " + round(weight(head, i, j)) +
        (row[j] === max ? (alignment() ? "  ● its strongest source token" : "  ● row maximum") : "") +
        (pin ? "\n" + exactWeight(S.heads[0], i, j) : "\n(click or Enter: the exact value)");
    });
    return svg;
  }

  // ---- steps view: the stages of attn steps with their formulas; a weight shows its arithmetic ----------
  function stepArray(name) {
    if (!D.steps) return null;
    for (var i = 0; i < D.steps.length; i++) if (D.steps[i].name === name) return D.steps[i].array;
    return null;
  }
  function fmt(x) { return x === null ? "−∞" : (Math.abs(x) >= 1000 || (x !== 0 && Math.abs(x) < 0.001) ? x.toExponential(1) : x.toFixed(3)); }
  function axisLabels(axis, count) {
    if (axis === "query") return Q.map(shown);
    if (axis === "key") return K.map(shown);
    var out = [];
    for (var i = 0; i < count; i++) out.push(String(i));
    return out;
  }
  function drawSteps(width) {
    var hi = S.heads[0], cw = 54, rh = 17, px = 11, y = 10, blocks = [];
    D.steps.forEach(function (step) {
      var a = step.array, axes = step.axes;
      if (axes[0] === "head") { a = a[Math.min(hi, a.length - 1)]; axes = axes.slice(1); }
      if (axes.length === 1) { a = [a]; axes = ["", axes[0]]; }
      if (axes.length !== 2) return;  // a trace term with more axes: in the JSON, not drawn
      blocks.push({ step: step, a: a, rows: axisLabels(axes[0], a.length), cols: axisLabels(axes[1], a[0].length) });
    });
    var lw = Math.max.apply(null, Q.concat(K).map(function (t) { return textWidth(shown(t), px); })) + 10;
    var svgW = Math.max(width - 20, 400);
    blocks.forEach(function (b) { svgW = Math.max(svgW, lw + b.cols.length * cw + 20); b.h = 44 + b.rows.length * rh; });
    var total = blocks.reduce(function (s, b) { return s + b.h + 14; }, 20);
    var svg = newSvg(svgW, total, "steps view: every stage of the run");
    var scoreName = stepArray("masked_scores") ? "masked_scores" : "scores";
    blocks.forEach(function (b) {
      el("text", { x: 4, y: y + 14, "font-weight": 600 }, svg, b.step.name + "  [" + b.step.shape.join(" × ") + "]" +
        (b.step.axes[0] === "head" ? "  head " + headOf(hi).head : ""));
      el("text", { x: 4, y: y + 30, fill: C.muted, "class": "mono" }, svg, b.step.formula);
      var y0 = y + 44, x0 = lw;
      b.cols.forEach(function (c, j) { el("text", { x: x0 + j * cw + cw - 4, y: y0 - 3, "text-anchor": "end", "font-size": 10, fill: C.muted, "class": "mono" }, svg, c.slice(0, 7)); });
      var g = el("g", { "class": "step", "data-step": b.step.name, tabindex: b.step.name === "weights" ? 0 : null }, svg);
      b.rows.forEach(function (r, i) {
        el("text", { x: x0 - 6, y: y0 + i * rh + 12, "text-anchor": "end", "font-size": px, "class": "mono" }, svg, r);
        b.a[i].forEach(function (v, j) {
          var weightCell = b.step.name === "weights";
          if (weightCell) el("rect", { x: x0 + j * cw, y: y0 + i * rh, width: cw, height: rh, fill: css(ramp(v)), "data-i": i, "data-j": j }, g);
          el("text", { x: x0 + j * cw + cw - 4, y: y0 + i * rh + 12, "text-anchor": "end", "font-size": px, "class": "mono",
            "pointer-events": weightCell ? "none" : null, fill: weightCell && v > 0.55 ? C.bg : C.fg }, g, fmt(v));
        });
      });
      if (b.step.name === "weights") {
        gridEvents(g, x0, y0, cw, rh, b.rows.length, b.cols.length, function (i, j) {
          return arithmetic(hi, i, j, scoreName);
        });
      }
      y += b.h + 14;
    });
    return svg;
  }
  function arithmetic(hi, i, j, scoreName) {
    var s = stepArray(scoreName)[hi][i], a = stepArray("weights")[hi][i][j];
    var live = s.filter(function (x) { return x !== null; }), max = Math.max.apply(null, live);
    var sum = live.reduce(function (t, x) { return t + Math.exp(x - max); }, 0);
    var head = "A[" + i + "," + j + "] (query " + shown(Q[i]) + ", key " + shown(K[j]) + ", head " + headOf(hi).head + ")";
    if (s[j] === null) return head + " = 0: the key is masked (score −∞)";
    return head + " = e^(s − max) / Σ e^(s − max) = e^(" + s[j] + " − " + max + ") / " + sum + " = " +
      Math.exp(s[j] - max) / sum + "\nscore s = " + s[j] + " · row max = " + max + " · row sum Σ e^(s − max) = " + sum +
      "\nexact weight = " + a;
  }

  // ---- the page around the views --------------------------------------------------------------------
  function hint() {
    return { head: "Hover, focus or click a token to follow its lines; choose the layer and heads above.",
      model: "Each thumbnail is one head's weights, labelled with the pattern attn heads finds; click or Enter opens it.",
      matrix: "Hover a cell (or focus the matrix and use the arrow keys) for its weight; click or Enter for the exact value.",
      steps: "Hover a weight (or focus the weights and use the arrow keys) for the arithmetic that produced it." }[S.view];
  }
  function draw() {
    readColors();
    var width = Math.max(320, stage.clientWidth || document.documentElement.clientWidth - 32);
    var svg = { head: drawHead, model: drawModel, matrix: drawMatrix, steps: drawSteps }[S.view](width);
    stage.replaceChildren(svg);
    S.pinned = false; S.pin = null; S.focus = null;
    say(hint());
    layerSelect.value = S.layer;
    headBox.querySelectorAll("input[data-head]").forEach(function (box) { box.checked = !S.mean && S.heads.indexOf(+box.value) >= 0; });
    meanBox.checked = S.mean;
    if (partSelect) partSelect.value = S.part;
    document.body.dataset.part = S.part || "";
    VIEWS.forEach(function (v) { tabs[v[0]].setAttribute("aria-selected", String(v[0] === S.view)); tabs[v[0]].tabIndex = v[0] === S.view ? 0 : -1; });
    document.body.dataset.view = S.view;
  }
  function setView(v) { S.view = v; draw(); }
  function fillLayers() {
    layerSelect.replaceChildren();
    D.layers.forEach(function (l, i) { html("option", { value: i }, layerSelect, String(l.layer)); });
    layerSelect.disabled = D.layers.length < 2;
  }
  function setPart(name) {  // another attention of the encoder–decoder: the same layer (or its last) and heads
    usePart(name);
    S.layer = Math.min(S.layer, D.layers.length - 1);
    S.heads = S.heads.filter(function (h) { return h < layerOf().heads.length; });
    if (!S.heads.length) S.heads = [0];
    S.cell = [0, 0];
    fillLayers();
    fillHeads();
    draw();
  }
  function fillHeads() {  // a box per head of the part shown (BART's decoder may have fewer heads than its encoder)
    headBox.querySelectorAll("label.head").forEach(function (l) { l.remove(); });
    D.layers[0].heads.forEach(function (h, i) {
      var l = html("label", { "class": "head", title: "head " + h.head }, headBox);
      headBox.insertBefore(l, meanLabel || null);  // the boxes stay before "mean"
      var box = html("input", { type: "checkbox", value: i, "aria-label": "head " + h.head, "data-head": h.head }, l);
      var sw = html("span", { "class": "swatch" }, l);
      sw.style.borderTopColor = HEAD_COLORS[i % HEAD_COLORS.length];
      sw.style.borderTopStyle = ["solid", "dashed", "dotted", "double"][i % 4];
      l.appendChild(document.createTextNode(String(h.head)));
      box.addEventListener("change", function () {
        S.heads = box.checked && !S.mean ? S.heads.concat([i]) : S.heads.filter(function (x) { return x !== i; });
        if (!S.heads.length || S.mean) S.heads = [i];
        S.mean = false;
        S.heads.sort(function (a, b) { return a - b; });
        draw();
      });
    });
  }
  function step(list, value, by) { return Math.max(0, Math.min(list - 1, value + by)); }
  function build() {
    var header = html("header", {}, document.body);
    html("h1", {}, header, "attn view");
    html("p", { "class": "text" }, header, (D.parts && D.context !== null ? "target: " : "") + (D.text || ""));
    if (D.parts && D.context !== null) html("p", { "class": "text" }, header, "source: " + D.context);
    var details = html("details", {}, header);
    html("summary", {}, details, "about this run" + (D.model ? ": " + D.model.name : ""));
    var ul = html("ul", {}, details);
    D.caption.forEach(function (line) { html("li", {}, ul, line); });
    if (D.parts) Object.keys(D.parts).forEach(function (name) { html("li", {}, ul, "part " + name + ": " + D.parts[name].help); });
    html("li", {}, ul, "weights drawn to 0.001 (× " + D.scale + " in the JSON); " + (D.steps ?
      "the exact numbers are in the steps view and on a click in the matrix view" : "a click in the matrix view gives the command that prints the exact number"));
    html("li", {}, ul, "data: schema " + D.schema + ", the same document as " + D.command + " -f json");
    var nav = html("nav", { role: "tablist", "aria-label": "views" }, document.body);
    VIEWS.forEach(function (v, i) {
      var b = html("button", { role: "tab", id: "tab-" + v[0], title: "key " + (i + 1) }, nav, (i + 1) + " " + v[1]);
      b.addEventListener("click", function () { setView(v[0]); });
      tabs[v[0]] = b;
    });
    nav.addEventListener("keydown", function (e) {
      var i = VIEWS.findIndex(function (v) { return v[0] === S.view; }), d = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (d) { setView(VIEWS[(i + d + VIEWS.length) % VIEWS.length][0]); tabs[S.view].focus(); }
    });
    var controls = html("div", { "class": "controls" }, document.body);
    if (D.parts) {
      var plab = html("label", {}, controls, "Attention ");
      partSelect = html("select", { id: "part", title: "key c" }, plab);
      Object.keys(D.parts).forEach(function (name) {
        html("option", { value: name }, partSelect, name + (D.parts[name].context_tokens ? " (alignment)" : " self-attention"));
      });
      partSelect.addEventListener("change", function () { setPart(partSelect.value); });
    }
    var lab = html("label", {}, controls, "Layer ");
    layerSelect = html("select", { id: "layer" }, lab);
    fillLayers();
    layerSelect.addEventListener("change", function () { S.layer = +layerSelect.value; draw(); });
    headBox = html("fieldset", { "class": "heads", id: "heads" }, controls);
    html("legend", { style: "float:left;margin-right:6px" }, headBox, "Heads");
    fillHeads();
    meanLabel = html("label", { title: "key a" }, headBox);
    meanBox = html("input", { type: "checkbox", id: "mean", "aria-label": "mean of the heads" }, meanLabel);
    meanLabel.appendChild(document.createTextNode(" mean"));
    meanBox.addEventListener("change", function () { S.mean = meanBox.checked; draw(); });
    var save = html("button", { id: "save-svg", type: "button" }, controls, "Download SVG");
    save.addEventListener("click", downloadSvg);
    stage = html("main", { id: "stage" }, document.body);
    readout = html("p", { id: "readout", "aria-live": "polite" }, document.body);
    html("p", { "class": "help" }, document.body,
      "Keys: 1–" + VIEWS.length + " views · [ ] layer · , . head · a mean of the heads" + (D.parts ? " · c attention (part)" : "") +
      " · Tab to a token, thumbnail or matrix, then arrows · Enter pins · Esc clears");
    document.addEventListener("keydown", function (e) {
      if (e.target.tagName === "SELECT" || e.target.tagName === "INPUT" || e.ctrlKey || e.metaKey || e.altKey) return;
      var n = parseInt(e.key, 10);
      if (n >= 1 && n <= VIEWS.length) { setView(VIEWS[n - 1][0]); return; }
      if (e.key === "[" || e.key === "]") { S.layer = step(D.layers.length, S.layer, e.key === "]" ? 1 : -1); draw(); }
      if (e.key === "," || e.key === ".") { S.heads = [step(layerOf().heads.length, S.heads[0], e.key === "." ? 1 : -1)]; S.mean = false; draw(); }
      if (e.key === "a") { S.mean = !S.mean; draw(); }
      if (e.key === "c" && D.parts) { var names = Object.keys(D.parts); setPart(names[(names.indexOf(S.part) + 1) % names.length]); }
      if ((e.key === "n" || e.key === "p") && D.generated) stepGenerated(e.key === "n" ? 1 : -1);
      if (e.key === "Escape") { if (D.generated) showWholeSequence(); draw(); }
    });
    var resized = null;
    window.addEventListener("resize", function () { clearTimeout(resized); resized = setTimeout(draw, 150); });
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", draw);
    window.addEventListener("beforeprint", function () { document.documentElement.classList.add("print"); draw(); });
    window.addEventListener("afterprint", function () { document.documentElement.classList.remove("print"); draw(); });
  }
  function downloadSvg() {
    var svg = stage.querySelector("svg").cloneNode(true);
    svg.classList.remove("focused");
    var text = '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
    var url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
    var a = html("a", { href: url, download: "attn-" + S.view + ".svg" }, document.body);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  build();
  draw();
})();

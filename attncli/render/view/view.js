/* attn view: the head, model, matrix and steps views of one view document (attn view -f json).
   Hand-written, no framework, no request: everything it draws comes from the JSON in #attn-data, and the short
   labels of the heads' patterns from #attn-labels (attncli.core.statistics' hints, as the terminal's grid has them).
   An encoder–decoder's document has "parts" (cross, decoder, encoder), each with what a one-part document has
   at its top (tokens, context_tokens, masks, layers): choosing a part puts its fields where the views read. */
(function (script) {
  "use strict";
  // The page's root: the element around this script (the <body>; a notebook shows the page in an iframe).
  // Everything the script makes and finds is inside it.
  var root = script.parentNode;
  var D = JSON.parse(root.querySelector("#attn-data").textContent);
  var SHORT = JSON.parse(root.querySelector("#attn-labels").textContent);  // a pattern label -> its short label
  var QKV = null;  // a model page's (or part's) layers of q, k and v, as in the document (each decoded into .N)
  var NS = "http://www.w3.org/2000/svg";
  var Q, K, QL, KL, CROSS, ROWS, COLS;  // the rows' and columns' tokens (and labels), whether they differ, their names
  function usePart(name) {
    var P = D.parts ? D.parts[name] : D;
    if (D.parts) { S.part = name; D.layers = P.layers; D.masks = P.masks; }
    Q = P.tokens; K = P.context_tokens || P.tokens; CROSS = !!P.context_tokens;
    QL = P.labels || Q; KL = P.context_tokens ? K : QL; REP = {};
    QKV = P.neuron || null;
    ROWS = D.parts ? P.queries + " (queries)" : CROSS ? "text (queries)" : "queries";
    COLS = D.parts ? P.keys + " (keys)" : CROSS ? "context (keys)" : "keys";
    /*{colour*/
    if (D.parts) {  // an encoder–decoder: this part's weights as run and without its sink (its entry's "sinkless")
      WEIGHTS = { layers: P.layers, masks: P.masks }; D.sinkless = P.sinkless || null;
      if (S.sinkless) useSink(true);
    }
    /*colour}*/
    /*{contrib*/
    if (D.parts && D.contributions) { var CP = D.contributions.parts[name]; D.contributions.layers = CP.layers; D.contributions.note = CP.note; }
    /*contrib}*/
  }
  function alignment() { return !!D.parts && CROSS; }  // an encoder–decoder's cross-attention: target × source
  var HEAD_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#e08a0b", "#17becf",
    "#8c564b", "#e377c2", "#6b6b6b", "#a7a81c", "#393b9a", "#4f7a1f"];
  var DASHES = ["", "7 3", "2 3", "9 3 2 3"];  // colour is never the only sign of a head
  var VIEWS = [["head", "Head"], ["model", "Model"], ["matrix", "Matrix"]];
  var PARTS = D.parts ? Object.keys(D.parts).map(function (k) { return D.parts[k]; }) : [D];  // what has layers
  if (D.steps || PARTS.some(function (P) { return P.neuron; })) VIEWS.push(["steps", "Steps"]);
  if (D.generated && D.generated.from !== undefined && D.generated.from !== null) VIEWS.push(["written", "Written"]);
  if (D.lens) VIEWS.push(["lens", "Lens"]);
  if (D.ablation) VIEWS.push(["ablation", "Ablation"]);
  if (D.patch) VIEWS.push(["patch", "Patch"]);
  if (D.dla) VIEWS.push(["dla", "DLA"]);
  if (D.knockout) VIEWS.push(["knockout", "Knockout"]);
  /*{contrib*/
  if (D.contributions) VIEWS.push(["contrib", "Contributions"]);  // --contrib: a measure's maps of each layer
  /*contrib}*/
  VIEWS.push(["text", "Text"]);  // the keys' text coloured by one query's weights: readable at any length
  var S = { view: "head", layer: 0, heads: [], mean: false, part: null, focus: null, pinned: false, cell: [0, 0], pin: null,
    query: 0, key: 0, zoom: "auto", pair: "all", step: null,
    block: "all", rowFrom: 0, colFrom: 0 };  // the matrix's block: its size, first query and key
  usePart(D.part);
  /*{colour*/
  // --scale, --drop-sink, --contrib: the colour scale is the reader's to choose (each scale's position of a weight
  // comes from #attn-scales, attncli.render.style's SCALES), and with --drop-sink the weights without key 0 too
  var SCALES = JSON.parse(root.querySelector("#attn-scales").textContent), sinkBox = null, scaleSelect = null;
  var WEIGHTS = { layers: D.layers, masks: D.masks };  // the weights as run (D.sinkless: without key 0)
  S.scale = D.colour.scale;
  S.sinkless = false;
  function place(t) { return SCALES[S.scale].positions[Math.round(Math.min(1, Math.max(0, t)) * 255)]; }
  function useSink(on) {  // draw the weights without key 0, each row renormalized (D.sinkless), or as run
    S.sinkless = on && !!D.sinkless;
    var from = S.sinkless ? D.sinkless : WEIGHTS;
    D.layers = from.layers; D.masks = from.masks; means = {};
  }
  function tone(p) {  // a position 0..1 on the scale -> its colour between --cell0 and --cell1
    return [0, 1, 2].map(function (i) { return Math.round(C.c0[i] + (C.c1[i] - C.c0[i]) * p); });
  }
  function sinkNote() { return S.sinkless ? " (key 0 dropped, each row renormalized)" : ""; }
  /*colour}*/
  S.query = Q.length - 1;  // the steps view opens on the last query, the one that sees every token
  D.layers.forEach(function (l, i) { if (l.layer === D.layer) S.layer = i; });
  D.layers[S.layer].heads.forEach(function (h, i) { if (h.head === D.head) S.heads = [i]; });
  if (!S.heads.length) S.heads = [0];
  VIEWS.forEach(function (v) {  // view.html#matrix opens there; a notebook's lens or ablation page on its own view
    if (location.hash === "#" + v[0] || (!location.hash && D.opens === v[0])) S.view = v[0];
  });
  var C = {};  // the theme's colours, read from the stylesheet at each drawing
  var stepLabel = null, stage, readout, wide, layerSelect, headBox, meanBox, meanLabel, partSelect, querySelect, queryLabel, keySelect, keyLabel, layerLabel, writtenSet, zoomLabel, blockSet, tabs = {}, ready = false;

  // ---- the compact encoding: base64 of raw-deflated bytes (D.encoding), inflated by the browser ------------
  function bytesOf(b64) {
    var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  function inflate(b64) {  // -> Promise of the bytes
    var stream = new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).arrayBuffer();
  }
  function halfs(buf) {  // float16 (little-endian, as typed arrays read on every current machine) -> Float64Array
    var u = new Uint16Array(buf), out = new Float64Array(u.length);
    for (var i = 0; i < u.length; i++) {
      var h = u[i], e = (h >> 10) & 31, f = h & 1023, s = h >> 15 ? -1 : 1;
      out[i] = s * (e === 0 ? f * Math.pow(2, -24) : e === 31 ? (f ? NaN : Infinity) : (1 + f / 1024) * Math.pow(2, e - 15));
    }
    return out;
  }
  function nested(flat, shape) {  // row-major numbers -> nested arrays of `shape`, −∞ (a masked score) as null
    var at = 0;
    function part(d) {
      var out = new Array(shape[d]);
      for (var i = 0; i < shape[d]; i++) {
        if (d < shape.length - 1) out[i] = part(d + 1);
        else { out[i] = flat[at] === -Infinity ? null : flat[at]; at++; }
      }
      return out;
    }
    return part(0);
  }
  function decodeAll() {  // every head's weights (of every part) into head.w, and each one layer's q, k, v into .N
    var jobs = [];
    PARTS.forEach(function (P) {
      P.layers.forEach(function (l) { l.heads.forEach(function (h) {
        jobs.push(inflate(h.weights).then(function (b) { h.w = new Uint8Array(b); }));
      }); });
      (P === D && D.steps || []).forEach(function (st) {  // a text run's stages, exact (D.encoding.steps)
        jobs.push(inflate(st.packed).then(function (b) { st.array = nested(new Float64Array(b), st.shape); }));
      });
      (P.neuron || []).forEach(function (n) {
        jobs.push(Promise.all([inflate(n.q), inflate(n.k), inflate(n.v), n.bias ? inflate(n.bias) : null]).then(function (b) {
          n.N = { q: new Float32Array(b[0]), k: new Float32Array(b[1]), v: halfs(b[2]), bias: b[3] && new Float32Array(b[3]) };
        }));
      });
    });
    /*{colour*/
    (D.parts ? PARTS.map(function (P) { return P.sinkless; }) : [D.sinkless]).forEach(function (less) {
      (less ? less.layers : []).forEach(function (l) { l.heads.forEach(function (h) {
        jobs.push(inflate(h.weights).then(function (b) { h.w = new Uint8Array(b); }));
      }); });
    });
    /*colour}*/
    /*{contrib*/
    var carried = !D.contributions ? [] : !D.parts ? D.contributions.layers :  // an encoder–decoder's: every part's
      [].concat.apply([], Object.keys(D.contributions.parts).map(function (k) { return D.contributions.parts[k].layers; }));
    carried.forEach(function (l) {
      (l.heads || []).concat([l.map, l.rollout]).forEach(function (e) {
        if (e) jobs.push(inflate(e.values).then(function (b) { e.v = new Float64Array(b); }));
      });
      if (l.residual) jobs.push(inflate(l.residual).then(function (b) { l.r = new Float64Array(b); }));
    });
    /*contrib}*/
    return Promise.all(jobs);
  }

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
    var cs = getComputedStyle(root);
    ["bg", "fg", "muted", "line", "panel", "accent", "cell0", "cell1", "masked", "mark"].forEach(function (n) {
      C[n] = cs.getPropertyValue("--" + n).trim();
    });
    C.c0 = rgb(C.cell0); C.c1 = rgb(C.cell1);
  }
  function ramp(t) {  // weight 0..1 -> colour between --cell0 and --cell1
    /*{colour*/
    if (D.colour) return tone(place(t));  // placed by the scale chosen
    /*colour}*/
    var c = [0, 1, 2].map(function (i) { return Math.round(C.c0[i] + (C.c1[i] - C.c0[i]) * Math.sqrt(t)); });
    return c;
  }
  function css(c) { return "rgb(" + c.join(",") + ")"; }
  var MONO = "ui-monospace, \"DejaVu Sans Mono\", Menlo, Consolas, monospace";
  var ruler = null, widths = {};
  function textWidth(s, px, weight, mono) {  // as drawn: measured by an SVG text of the same font, out of sight
    var key = [px, weight, mono, s].join("\u0001");
    if (key in widths) return widths[key];
    if (!ruler) {  // (a canvas's measureText may resolve system-ui to another font than the SVG does)
      var box = el("svg", { width: 0, height: 0, "aria-hidden": "true", style: "position:absolute;visibility:hidden" }, root);
      ruler = el("text", {}, box);
    }
    ruler.setAttribute("font-size", px || 12);
    ruler.setAttribute("font-weight", weight || 400);
    ruler.setAttribute("font-family", mono ? MONO : "system-ui, sans-serif");
    ruler.textContent = s;
    return (widths[key] = ruler.getComputedTextLength());
  }
  function monoWidth(s, px) { return textWidth(s, px, 400, true); }
  var LABEL_MAX = 220;  // px: a longer label is drawn cut with an ellipsis, the whole token in its tooltip
  function labelText(parent, attrs, s, px) {  // an SVG text of a token label, never cut without saying so
    var t = el("text", attrs, parent), full = s;
    if (monoWidth(s, px) > LABEL_MAX) {
      while (s.length > 1 && monoWidth(s + "…", px) > LABEL_MAX) s = s.slice(0, -1);
      s += "…";
      el("title", {}, t, full);
    }
    t.appendChild(document.createTextNode(s));
    return t;
  }
  function labelWidth(labels, px) {
    return Math.min(LABEL_MAX, Math.max.apply(null, labels.map(function (t) { return monoWidth(t, px); }).concat([0])));
  }
  var MARKS = { " ": "\u2423", "\n": "\u21b5", "\t": "\u21e5", "\r": "\u240d" };  // attncli.pipeline.tokentext's
  function shownText(text) {  // a text as drawn: newlines, tabs (↵ ⇥ ␍) and other controls visible, never acting
    return String(text).replace(/[\n\t\r]/g, function (c) { return MARKS[c]; })
      .replace(/[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/g, function (c) {
        var code = c.charCodeAt(0);
        return code < 256 ? "\\x" + ("0" + code.toString(16)).slice(-2) : "\\u" + ("000" + code.toString(16)).slice(-4);
      });
  }
  function shown(tok) {  // a token's text as drawn: every space ␣ too (the labels come so from attncli already)
    return shownText(tok).replace(/ /g, MARKS[" "]) || "\u2205";
  }
  function layerOf() { return D.layers[S.layer]; }
  function headOf(i) { return S.mean && i === undefined ? meanHead() : layerOf().heads[i === undefined ? S.heads[0] : i]; }
  var means = {};
  function meanHead() {  // the mean over the layer's heads (of the drawn weights), as a head the views can draw
    var key = S.part + ":" + S.layer;
    if (means[key]) return means[key];
    var heads = layerOf().heads, w = new Float64Array(heads[0].w.length);
    heads.forEach(function (h) { for (var c = 0; c < w.length; c++) w[c] += h.w[c]; });
    for (var c = 0; c < w.length; c++) w[c] /= heads.length;
    var mask = heads.every(function (h) { return h.mask === heads[0].mask; }) ? heads[0].mask : null;
    return (means[key] = { head: "mean", label: "", mask: mask, w: w });
  }
  function drawn(head, i, j) { return head.w[i * K.length + j]; }  // the weight × D.scale
  function headName(head) { return head.head === "mean" ? "mean of the " + layerOf().heads.length + " heads" : "head " + head.head; }
  function shownHeads() { return S.mean ? [-1] : S.heads; }  // the heads drawn; -1 is their mean
  function headAt(hi) { return hi < 0 ? meanHead() : headOf(hi); }
  function masked(head, i, j) { return head.mask !== null && D.masks[head.mask][i].charAt(j) === "1"; }
  function weight(head, i, j) { return drawn(head, i, j) / D.scale; }
  function maxima(head, i) {  // the keys of row i with the row's largest drawn weight (all of them, when equal)
    var best = -1, at = [];
    for (var j = 0; j < K.length; j++) {
      if (masked(head, i, j)) continue;
      var w = drawn(head, i, j);
      if (w > best) { best = w; at = [j]; } else if (w === best) at.push(j);
    }
    return at;
  }
  function round(x) { return x.toFixed(3); }
  function repeats(list) {  // token -> how often it occurs in list
    var seen = {};
    list.forEach(function (t) { seen[t] = (seen[t] || 0) + 1; });
    return seen;
  }
  var REP = {};
  function tokName(side, i) {  // a token as the terminal names it: its label, and #i when the token repeats
    var list = side === "q" ? Q : K, labels = side === "q" ? QL : KL;
    if (!REP[side]) REP[side] = repeats(list);
    return shown(labels[i]) + (REP[side][list[i]] > 1 ? "#" + i : "");
  }
  var PAIRS = [["all", "both texts"], ["11", "text 1 → text 1"], ["12", "text 1 → text 2"], ["21", "text 2 → text 1"],
    ["22", "text 2 → text 2"]];  // as bertviz's sentence-pair filter: queries of one text, keys of one
  function shownPair(i, j) {  // whether the pair filter shows query i → key j (the others are drawn faint)
    if (S.pair === "all") return true;
    var b = D.second_segment;
    return (i < b ? "1" : "2") === S.pair.charAt(0) && (j < b ? "1" : "2") === S.pair.charAt(1);
  }
  function segment(i) {  // a sentence pair: which text token i comes from
    return D.second_segment === undefined || D.second_segment === null ? "" : i < D.second_segment ? " (text 1)" : " (text 2, --context)";
  }
  function newSvg(w, h, label) {
    var svg = el("svg", { xmlns: NS, "class": "attn-svg", width: w, height: h, viewBox: "0 0 " + w + " " + h, role: "img",
      "aria-label": label, "font-family": "system-ui, sans-serif", "font-size": 12 });
    var my = "svg.attn-svg";  // each rule scoped to the page's drawings (an inline SVG's style is the document's)
    el("style", {}, svg, my + " text{fill:" + C.fg + "} " + my + " .mono{font-family:" + MONO + "} " +
      my + ".focused .lines line:not(.on){visibility:hidden} " + my + " .tok{cursor:pointer;outline:none} " +
      my + " .tok:focus rect," + my + " .tok.sel rect{stroke:" + C.accent + ";stroke-width:2} " +
      my + " .thumb{cursor:pointer;outline:none} " + my + " .thumb:focus>rect{stroke:" + C.accent + ";stroke-width:3}");
    el("rect", { width: w, height: h, fill: C.bg }, svg);
    return svg;
  }
  function say(text) { readout.textContent = text; }
  function where() {
    var l = layerOf();
    return (D.parts ? S.part + " " : "") + (D.model ? "layer " + l.layer + ", " : "") + headName(headOf())/*{colour*/ + sinkNote()/*colour}*/;
  }

  // ---- head view: queries left, keys right, a line per weight ---------------------------------------
  function drawHead(width) {
    var rowH = 22, top = 46, px = 13;
    var qn = Q.map(function (_, i) { return tokName("q", i); }), kn = K.map(function (_, i) { return tokName("k", i); });
    var wq = Math.max(labelWidth(qn, px), 40, textWidth(ROWS, 12, 600)) + 16;
    var wk = Math.max(labelWidth(kn, px), 40, textWidth(COLS, 12, 600)) + 16;
    var gap = Math.max(160, Math.min(360, width - wq - wk - 40));
    var xq = 10 + wq, xk = xq + gap, h = top + Math.max(Q.length, K.length) * rowH + 10, pair = !!D.second_segment;
    var noteW = pair ? Math.max.apply(null, PAIR_NOTE.map(function (t) { return textWidth(t, 11); })) + 12 : 0;
    var svg = newSvg(Math.max(xk + wk + 10, noteW), h + (pair ? 16 * PAIR_NOTE.length + 4 : 0), "head view: lines from each query to its keys, opacity = weight");
    el("text", { x: xq - 6, y: 18, "text-anchor": "end", "font-weight": 600 }, svg, ROWS);
    el("text", { x: xk + 6, y: 18, "font-weight": 600 }, svg, COLS);
    var names = S.mean ? headName(meanHead()) : (S.heads.length > 1 ? "heads " : "head ") +
      S.heads.map(function (hi) { return headOf(hi).head; }).join(", ");
    el("text", { x: (xq + xk) / 2, y: 34, "text-anchor": "middle", fill: C.muted }, svg,
      (D.parts ? S.part + " " : "") + (D.model ? "layer " + layerOf().layer + ", " : "") + names/*{colour*/ + sinkNote()/*colour}*/);
    if (CROSS) el("line", { x1: (xq + xk) / 2, x2: (xq + xk) / 2, y1: top - 6, y2: h - 4, stroke: C.muted,
      "stroke-dasharray": "4 4" }, svg).setAttribute("class", "boundary");
    if (pair) pairBoundary(svg, 4, xk + wk + 6, top + D.second_segment * rowH, h + 10);
    var lines = el("g", { "class": "lines", "stroke-width": 2, "stroke-linecap": "round" }, svg);
    var y = function (i) { return top + i * rowH + rowH / 2; };
    shownHeads().forEach(function (hi) {
      var c = Math.max(0, hi), head = headAt(hi), color = HEAD_COLORS[c % HEAD_COLORS.length], dash = DASHES[c % DASHES.length];
      var g = el("g", { stroke: color, "stroke-dasharray": dash || null, "data-head": head.head }, lines);
      for (var i = 0; i < Q.length; i++) for (var j = 0; j < K.length; j++) {
        var w = drawn(head, i, j);
        if (w <= 0 || masked(head, i, j) || !shownPair(i, j)) continue;
        el("line", { x1: xq + 4, y1: y(i), x2: xk - 4, y2: y(j), "stroke-opacity": w / D.scale,
          "data-q": i, "data-k": j }, g);
      }
    });
    [[Q, "q", xq, "end", wq], [K, "k", xk, "start", wk]].forEach(function (side) {
      side[0].forEach(function (t, i) {
        var inside = side[1] === "q" ? shownPair(i, D.second_segment && S.pair.charAt(1) === "2" ? D.second_segment : 0)
          : shownPair(D.second_segment && S.pair.charAt(0) === "2" ? D.second_segment : 0, i);
        var g = el("g", { "class": "tok", tabindex: 0, "data-side": side[1], "data-i": i, role: "button", opacity: inside ? null : 0.35,
          "aria-label": (side[1] === "q" ? "query " : "key ") + i + " " + tokName(side[1], i) + segment(i) }, svg);
        var x0 = side[3] === "end" ? side[2] - side[4] : side[2];
        el("rect", { x: x0, y: y(i) - rowH / 2 + 1, width: side[4], height: rowH - 2, rx: 3, fill: C.panel,
          stroke: "none" }, g);
        labelText(g, { x: side[3] === "end" ? side[2] - 6 : side[2] + 6, y: y(i) + 4, "text-anchor": side[3],
          "class": "mono", "font-size": px }, tokName(side[1], i), px);
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
  var PAIR_NOTE = ["sentence pair: a dashed line divides the two texts;", "‖ marks the first token of text 2 (--context);",
    "◇ marks a token the tokenizer added"];
  function pairBoundary(svg, x1, x2, y, yNote) {  // a sentence pair: the line between its two texts, and what it is
    el("line", { x1: x1, x2: x2, y1: y, y2: y, stroke: C.accent, "stroke-width": 1.5, "stroke-dasharray": "6 3",
      "class": "pair-boundary" }, svg);
    PAIR_NOTE.forEach(function (line, k) { el("text", { x: x1, y: yNote + 16 * k, "font-size": 11, fill: C.accent }, svg, line); });
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
        if (!masked(head, a, b) && shownPair(a, b)) pairs.push([drawn(head, a, b), j]);
      }
      pairs.sort(function (x, y) { return y[0] - x[0]; });
      return headName(head) + ": " + pairs.slice(0, 4).map(function (p) {
        return tokName(side === "q" ? "k" : "q", p[1]) + " " + (p[0] / D.scale).toFixed(3);
      }).join(", ");
    });
    say((side === "q" ? "query " : "key ") + i + " " + tokName(side, i) + segment(i) +
      (side === "q" ? " attends to" : " is attended by") + (S.pinned ? " (pinned: click again or Esc)" : "") +
      "\n" + parts.join("\n"));
  }

  // ---- model view: every layer × head as a thumbnail, labelled with its pattern ----------------------
  function heatmapCanvas(head, limit) {  // one pixel a cell, or the mean of a block of cells past `limit` pixels
    var m = Q.length, n = K.length, by = Math.max(1, Math.ceil(Math.max(m, n) / limit));
    var cv = document.createElement("canvas"), pm = Math.ceil(m / by), pn = Math.ceil(n / by);
    cv.width = pn; cv.height = pm;
    var ctx = cv.getContext("2d"), img = ctx.createImageData(pn, pm), hatch = rgb(C.masked), bg = rgb(C.bg);
    for (var a = 0; a < pm; a++) for (var b = 0; b < pn; b++) {
      var sum = 0, cells = 0, shut = 0;
      for (var i = a * by; i < Math.min(m, (a + 1) * by); i++) for (var j = b * by; j < Math.min(n, (b + 1) * by); j++) {
        cells++;
        if (masked(head, i, j)) shut++; else sum += drawn(head, i, j);
      }
      var c = shut === cells ? ((a + b) % 2 ? hatch : bg) : ramp(sum / (cells - shut) / D.scale), o = 4 * (a * pn + b);
      img.data[o] = c[0]; img.data[o + 1] = c[1]; img.data[o + 2] = c[2]; img.data[o + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
    return cv;
  }
  function heatmapURL(head) { return heatmapCanvas(head, 128).toDataURL("image/png"); }
  function drawModel(width) {
    var nh = D.layers[0].heads.length, nl = D.layers.length, left = 34, top = 22;
    var size = Math.max(22, Math.min(96, Math.floor((width - left - 10) / nh) - 6)), cellW = size + 6, cellH = size + 20;
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
        el("text", { x: x + size / 2, y: y + size + 13, "text-anchor": "middle", "font-size": size < 40 ? 8.5 : 10.5,
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
  function HATCH() { return "url(#hatch)"; }
  function hatch(svg) {
    var defs = el("defs", {}, svg);
    var p = el("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
    el("rect", { width: 6, height: 6, fill: C.bg }, p);
    el("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: C.masked, "stroke-width": 3 }, p);
  }
  function legend(svg, x, y) {
    var defs = svg.querySelector("defs"), grad = el("linearGradient", { id: "ramp" }, defs);
    /*{colour*/
    if (D.colour) colourBar(svg, x, y, grad, "weight" + sinkNote() + ", " + SCALES[S.scale].words, null); else {
    /*colour}*/
    for (var s = 0; s <= 10; s++) el("stop", { offset: s / 10, "stop-color": css(ramp(s / 10)) }, grad);
    el("text", { x: x, y: y, "font-weight": 600 }, svg, "weight");
    el("rect", { x: x, y: y + 6, width: 160, height: 12, fill: "url(#ramp)", stroke: C.line }, svg);
    [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
      el("text", { x: x + 160 * t, y: y + 31, "text-anchor": "middle", "font-size": 10.5 }, svg, String(t));
    });
    /*{colour*/
    }
    /*colour}*/
    el("rect", { x: x + 190, y: y + 6, width: 12, height: 12, fill: HATCH(), stroke: C.line }, svg);
    el("text", { x: x + 207, y: y + 16 }, svg, "masked (weight 0)");
    el("circle", { cx: x + 330, cy: y + 12, r: 4, fill: C.mark, stroke: C.bg }, svg);
    el("text", { x: x + 340, y: y + 16 }, svg, legendMax());
  }
  /*{colour*/
  function colourBar(svg, x, y, grad, title, top) {  // the scale's bar: shades by position, ticks where values fall
    for (var s = 0; s <= 10; s++) el("stop", { offset: s / 10, "stop-color": css(tone(s / 10)) }, grad);
    el("text", { x: x, y: y, "font-weight": 600, "class": "legend-title" }, svg, title);
    el("rect", { x: x, y: y + 6, width: 160, height: 12, fill: "url(#" + grad.id + ")", stroke: C.line }, svg);
    var ticks = top === null ? SCALES[S.scale].ticks : [[0, "0"], [1, top.toPrecision(4)]];  // a length map: 0 and its largest
    ticks.forEach(function (t) {
      var anchor = t[0] <= 0 ? "start" : t[0] >= 1 ? "end" : "middle";  // the ends' words inside the bar's width
      el("text", { x: x + 160 * t[0], y: y + 31, "text-anchor": anchor, "font-size": 10.5, "class": "legend-tick" }, svg, t[1]);
    });
  }
  /*colour}*/
  function legendMax() { return alignment() ? "each target token's strongest source token (all, when equal)" : "row maximum (all, when equal)"; }
  var RECT_CELLS = 160 * 160;  // more cells than this: the matrix is one image (hover still finds each cell)
  function drawGrid(svg, x0, y0, c, m, n, fill, cls, head, at) {  // at: a block's first row and column
    var r0 = at ? at[0] : 0, c0 = at ? at[1] : 0;
    var g = el("g", { "class": cls, tabindex: 0, role: "grid", "aria-label": cls + ": arrow keys move, Enter shows the exact value" }, svg);
    if (head && m * n > RECT_CELLS) {
      el("image", { x: x0, y: y0, width: n * c, height: m * c, href: heatmapCanvas(head, Infinity).toDataURL("image/png"),
        preserveAspectRatio: "none", style: "image-rendering:pixelated", "class": "cells" }, g);
      return g;
    }
    for (var i = 0; i < m; i++) for (var j = 0; j < n; j++) {
      var f = fill(i, j);
      el("rect", { x: x0 + j * c, y: y0 + i * c, width: c, height: c, fill: f, stroke: C.bg, "stroke-width": c > 8 ? 1 : 0,
        "data-i": r0 + i, "data-j": c0 + j, opacity: shownPair(r0 + i, c0 + j) ? null : 0.2 }, g);
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
    function cellAt(e) {  // the cell under the pointer, from its position in the drawing's coordinates
      var svg = g.ownerSVGElement, pt = svg.createSVGPoint();
      pt.x = e.clientX; pt.y = e.clientY;
      var p = pt.matrixTransform(svg.getScreenCTM().inverse());
      var i = Math.floor((p.y - y0) / ch), j = Math.floor((p.x - x0) / c);
      return i >= 0 && i < m && j >= 0 && j < n ? [i, j] : null;
    }
    g.addEventListener("mousemove", function (e) { var at = cellAt(e); if (at && !S.pin) show(at[0], at[1], false); });
    g.addEventListener("click", function (e) {
      var at = cellAt(e); if (!at) return;
      S.pin = S.pin ? null : at; show(at[0], at[1], !!S.pin);
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
    /*{colour*/
    if (S.sinkless) return "exact: the renormalized weights are drawn to 1/" + D.scale + "; with \"drop the sink\" off, a click gives the weight as run";
    /*colour}*/
    var w = stepArray("weights");
    if (w && S.mean) return "exact: the mean of the heads' exact weights = " +
      w.reduce(function (t, a) { return t + a[i][j]; }, 0) / w.length;
    if (w) return "exact: " + w[hi][i][j];
    if (!D.exact) return "";
    var head = headOf(hi), values = { part: S.part, layer: layerOf().layer, head: head.head, query: i, key: j };
    var fill = function (s) {  // a format string, in one pass: {name} a value, {{ and }} a brace of the text
      return s.replace(/\{\{|\}\}|\{(\w+)\}/g, function (all, name) {
        return name === undefined ? all.charAt(0) : name in values ? String(values[name]) : all;
      });
    };
    if (S.mean) return "exact: " + fill(D.exact.mean_command) + " | jq '" + fill(D.exact.mean_path) + "'";
    return "exact: " + fill(D.exact.command) + " | jq '" + fill(D.exact.path) + "'";
  }
  function columnHeaders(svg, labels, x0, y, c, px) {  // rotated −60°: whole tokens, each above its column
    labels.forEach(function (t, j) {
      if (!t) return;  // a column without its label (the matrix's, where labels would overlap)
      var x = x0 + j * c + c / 2 + px / 3;
      labelText(svg, { x: x, y: y, transform: "rotate(-60 " + x + " " + y + ")", "class": "mono", "font-size": px }, t, px);
    });
  }
  var ZOOMS = [["auto", "auto"], ["fit", "the whole matrix in the window"], ["12", "12 px a cell"], ["24", "24 px a cell"]];
  function matrixCell(fits) {  // the matrix's cell size in pixels: what fits the window (within 6..40), or the zoom's
    if (S.zoom === "fit") return Math.max(1, Math.min(40, fits));
    return S.zoom === "auto" ? Math.max(6, Math.min(40, fits)) : +S.zoom;
  }
  var BLOCKS = [24, 48, 96];  // a long text's blocks: so many queries × keys, every one labelled
  function drawMatrix(width) {
    var head = headOf(), px = 12, size = S.block === "all" ? Infinity : +S.block;  // the block's rows and columns:
    var r0 = stepWindow("query", Q.length, S.rowFrom, size)[0], c0 = stepWindow("query", K.length, S.colFrom, size)[0];
    var m = Math.min(Q.length - r0, size), n = Math.min(K.length - c0, size), whole = m === Q.length && n === K.length;
    var qn = Q.slice(r0, r0 + m).map(function (_, i) { return tokName("q", r0 + i); });
    var kn = K.slice(c0, c0 + n).map(function (_, j) { return tokName("k", c0 + j); });
    var c = matrixCell(Math.floor((width - labelWidth(qn, px) - 30) / n));
    var fontQ = c >= 12 ? px : Math.max(7, c - 1), every = Math.ceil((fontQ + 1) / c);  // a label where it fits
    if (every > 1) {
      qn = qn.map(function (t, i) { return i % every ? "" : t; });
      kn = kn.map(function (t, j) { return j % every ? "" : t; });
    }
    var wq = labelWidth(qn, fontQ) + 12, wk = labelWidth(kn, fontQ) + 12;
    var title = where() + (alignment() ? ", the alignment" : "") + ": rows " + ROWS + ", columns " + COLS + "; each row sums to 1" +
      (every > 1 ? "; a label every " + every + " tokens (hover a cell for its two)" : "");
    var part = whole ? "" : "drawn: rows " + r0 + "–" + (r0 + m - 1) + " of " + Q.length + ", columns " + c0 + "–" + (c0 + n - 1) +
      " of " + K.length + "; no dot where a row's maximum is not drawn";
    var x0 = wq + 8, y0 = wk * 0.87 + 34 + (part ? 16 : 0), svgH = y0 + m * c + 70;
    var svgW = Math.max(x0 + n * c + 20 + wk / 2, 8 + 340 + textWidth(legendMax()) + 10, textWidth(title, 12, 600) + 16,
      textWidth(part, 12) + 16);
    var svg = newSvg(svgW, svgH, "matrix view: weights of " + where());
    hatch(svg);
    el("text", { x: 4, y: 16, "font-weight": 600 }, svg, title);
    if (part) el("text", { x: 4, y: 32, fill: C.muted, "class": "matrix-block" }, svg, part);
    qn.forEach(function (t, i) { if (t) labelText(svg, { x: x0 - 6, y: y0 + i * c + c / 2 + 4, "text-anchor": "end", "class": "mono", "font-size": fontQ }, t, fontQ); });
    columnHeaders(svg, kn, x0, y0 - 6, c, fontQ);
    var g = drawGrid(svg, x0, y0, c, m, n, function (i, j) {
      return masked(head, r0 + i, c0 + j) ? HATCH() : css(ramp(weight(head, r0 + i, c0 + j)));
    }, "matrix", whole ? head : null, [r0, c0]);
    for (var i = 0; i < m; i++) maxima(head, r0 + i).forEach(function (at) {  // each row maximum: a dot, not only a colour
      if (at < c0 || at >= c0 + n) return;  // outside the block drawn
      at -= c0;
      el("circle", { cx: x0 + at * c + c / 2, cy: y0 + i * c + c / 2, r: Math.max(1.5, c * 0.16), fill: C.mark, stroke: C.bg,
        "stroke-width": 1, "pointer-events": "none", "class": "rowmax" }, g);
    });
    if (CROSS) {  // the boundary between the text's queries and the context's keys
      el("rect", { x: x0 - 1, y: y0 - 1, width: n * c + 2, height: m * c + 2, fill: "none", stroke: C.accent,
        "stroke-width": 2, "stroke-dasharray": "6 3", "class": "boundary" }, svg);
      el("text", { x: x0, y: y0 + m * c + 16, fill: C.accent }, svg, alignment() ?
        "cross-attention: target (decoder) queries × source (encoder) keys" : "cross-attention: text queries × context keys");
    }
    if (D.second_segment) {  // a sentence pair: the lines between its two texts, across the rows and the columns
      var b = (D.second_segment - r0) * c, bc = (D.second_segment - c0) * c;
      [[b, m, [x0 - wq, x0 + n * c, y0 + b, y0 + b]], [bc, n, [x0 + bc, x0 + bc, y0 - 4, y0 + m * c]]].forEach(function (o) {
        if (o[0] > 0 && o[0] < o[1] * c) el("line", { x1: o[2][0], x2: o[2][1], y1: o[2][2], y2: o[2][3], stroke: C.accent,
          "stroke-width": 2, "stroke-dasharray": "6 3", "class": "pair-boundary" }, svg);  // where the block has them
      });
      el("text", { x: x0, y: y0 + m * c + 16, fill: C.accent }, svg, "sentence pair: text 2 (--context, ‖) starts at token " + D.second_segment + ", past the dashed lines");
    }
    legend(svg, 8, y0 + m * c + (CROSS || D.second_segment ? 26 : 14));
    gridEvents(g, x0, y0, c, c, m, n, function (i, j, pin) {
      i += r0; j += c0;
      var text = "query " + i + " " + tokName("q", i) + segment(i) + " → key " + j + " " + tokName("k", j) + (CROSS ? "" : segment(j)) + " (" + where() + "): ";
      /*{colour*/
      if (S.sinkless && j === 0) return text + "dropped: key 0, the sink";
      /*colour}*/
      if (masked(head, i, j)) return text + "masked, weight 0";
      var top = maxima(head, i);
      return text + "weight " + round(weight(head, i, j)) + " (drawn to 1/" + D.scale + ")" +
        (top.indexOf(j) >= 0 ? (alignment() ? "  ● its strongest source token" : "  ● row maximum") +
          (top.length > 1 ? " (equal with " + top.filter(function (x) { return x !== j; }).map(function (x) { return tokName("k", x); }).join(", ") + ")" : "") : "") +
        (pin ? "\n" + exactWeight(S.heads[0], i, j) : "\n(click or Enter: the exact value)");
    });
    return svg;
  }

  // ---- text view: the keys as running text, each coloured by the chosen query's weight and its number under
  // it (as CircuitsVis' colored_tokens, with the number: colour is never the only sign); wraps at any length --
  function drawText(width) {
    var head = headOf(), i = Math.min(S.query, Q.length - 1), px = 12, lh = 40, pad = 6, svgW = Math.max(width - 20, 320);
    var title = (D.parts ? S.part + " " : "") + "layer " + layerOf().layer + ", " + headName(head) + ", query " + i + " " + tokName("q", i)/*{colour*/ + sinkNote()/*colour}*/;
    var help = ["its weight on each " + (CROSS ? "context token" : "token") + " (darker: larger; they sum to 1)",
      CROSS ? "← → on the text choose the query" : "← → on the text, or a click, choose the query"];
    var boxes = [], x = 4, y = 72;
    K.forEach(function (_, j) {
      var name = tokName("k", j), w = Math.min(LABEL_MAX, Math.max(monoWidth(name, px), 30)) + pad;
      if (x + w > svgW - 4 && x > 4) { x = 4; y += lh; }
      boxes.push({ j: j, x: x, y: y, w: w, name: name });
      x += w + 2;
    });
    svgW = Math.max(svgW, textWidth(title, 12, 600) + 12, textWidth(help[0], 12) + 12);
    var svg = newSvg(svgW, y + lh + 10, "text view: the tokens coloured by the weights of query " + i);
    hatch(svg);
    el("text", { x: 4, y: 16, "font-weight": 600, "class": "stage-title" }, svg, title);
    help.forEach(function (t, k) { el("text", { x: 4, y: 34 + 16 * k, fill: C.muted }, svg, t); });
    var g = el("g", { "class": "colored", tabindex: 0, role: "group", "aria-label": "the text coloured by one query's weights: ← → choose the query" }, svg);
    boxes.forEach(function (b) {
      var shut = masked(head, i, b.j), v = shut ? 0 : weight(head, i, b.j);
      var t = el("g", { "class": "ctok", "data-j": b.j }, g);
      el("rect", { x: b.x, y: b.y, width: b.w, height: lh - 4, rx: 3, fill: shut ? HATCH() : css(ramp(v)),
        stroke: !CROSS && b.j === i ? C.accent : C.line, "stroke-width": !CROSS && b.j === i ? 2.5 : 1 }, t);
      labelText(t, { x: b.x + pad / 2, y: b.y + 15, "class": "mono", "font-size": px, fill: /*{colour*/(D.colour ? place(v) > 0.55 : /*colour}*/v > 0.55/*{colour*/)/*colour}*/ ? C.bg : C.fg }, b.name, px);
      el("text", { x: b.x + pad / 2, y: b.y + 30, "font-size": 10, "class": "mono", fill: /*{colour*/(D.colour ? place(v) > 0.55 : /*colour}*/v > 0.55/*{colour*/)/*colour}*/ ? C.bg : C.muted }, t,
        shut ? "masked" : round(v));
    });
    function describe(j) {
      return "query " + i + " " + tokName("q", i) + " → key " + j + " " + tokName("k", j) + ": " +
        (masked(head, i, j) ? "masked (weight 0)" : "weight " + round(weight(head, i, j)) + " (to 1/" + D.scale + ")");
    }
    g.addEventListener("mousemove", function (e) { var t = e.target.closest(".ctok"); if (t) say(describe(+t.dataset.j)); });
    g.addEventListener("click", function (e) {
      var t = e.target.closest(".ctok");
      if (t && !CROSS) { S.query = +t.dataset.j; draw(); }
    });
    g.addEventListener("keydown", function (e) {
      var by = { ArrowLeft: -1, ArrowRight: 1 }[e.key];
      if (!by) return;
      S.query = Math.max(0, Math.min(Q.length - 1, i + by)); e.preventDefault(); draw();
      stage.querySelector(".colored").focus();
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
    if (axis === "query") return Q.map(function (_, i) { return tokName("q", i); });
    if (axis === "key") return K.map(function (_, j) { return tokName("k", j); });
    var out = [];
    for (var i = 0; i < count; i++) out.push(String(i));
    return out;
  }
  function stageTitle(step, shape, hi) {  // `queries  Q = X W_Q  [4 × 8] · head 0`: words, formula, the drawn shape
    return (step.title || step.name) + "   " + step.formula + "  [" + shape.join(" × ") + "]" +
      (hi === undefined ? "" : " · head " + headOf(hi).head);
  }
  var STEP_ROWS = 24, STEP_COLS = 16;  // the steps view draws a window of its tables: every cell is a number in text
  function stepWindow(axis, count, from, most) {  // -> [first, end) of the indices drawn on this axis
    if (axis !== "query" && axis !== "key") return [0, count];
    var first = Math.max(0, Math.min(from, count - most));
    return [first, Math.min(count, first + most)];
  }
  function drawSteps(width) {
    var hi = S.heads[0], cw = 58, rh = 17, px = 11, y = 10, blocks = [];
    var wq = stepWindow("query", Q.length, S.query, STEP_ROWS), wk = stepWindow("key", K.length, S.query, STEP_ROWS);
    var lw = labelWidth(axisLabels("query").slice(wq[0], wq[1]).concat(axisLabels("key").slice(wk[0], wk[1])), px) + 10;
    var cols = Math.max(4, Math.min(STEP_COLS, Math.floor((width - lw - 60) / cw)));
    var cut = false;
    D.steps.forEach(function (step) {
      var a = step.array, axes = step.axes, perHead = axes[0] === "head";
      if (perHead) { a = a[Math.min(hi, a.length - 1)]; axes = axes.slice(1); }
      if (axes.length === 1) { a = [a]; axes = ["", axes[0]]; }
      if (axes.length !== 2) return;  // a trace term with more axes: in the JSON, not drawn
      var rw = stepWindow(axes[0], a.length, S.query, STEP_ROWS), cwin = stepWindow(axes[1], a[0].length, S.key, cols);
      cut = cut || rw[1] - rw[0] < a.length || cwin[1] - cwin[0] < a[0].length;
      blocks.push({ step: step, a: a, r: rw, c: cwin, rows: axisLabels(axes[0], a.length).slice(rw[0], rw[1]),
        cols: axisLabels(axes[1], a[0].length).slice(cwin[0], cwin[1]), m: a.length, n: a[0].length,
        title: stageTitle(step, perHead ? step.shape.slice(1) : step.shape, perHead ? hi : undefined) });
    });
    var svgW = Math.max(width - 20, 400);
    blocks.forEach(function (b) {
      b.sub = b.r[1] - b.r[0] < b.m || b.c[1] - b.c[0] < b.n ? "drawn: rows " + b.r[0] + "–" + (b.r[1] - 1) + " of " + b.m +
        ", columns " + b.c[0] + "–" + (b.c[1] - 1) + " of " + b.n : "";
      b.head = Math.max(16, labelWidth(b.cols, 10) * 0.87) + 8;  // the rotated column headers
      svgW = Math.max(svgW, lw + b.cols.length * cw + 30 + labelWidth(b.cols, 10) / 2, textWidth(b.title, 12, 600) + 12,
        textWidth(b.sub, 12) + 12);
      b.h = 20 + (b.sub ? 16 : 0) + b.head + b.rows.length * rh;
    });
    var note = cut ? ["Each table shows at most " + STEP_ROWS + " rows and " + cols + " keys at a time:",
      "choose them with “Queries from” and “Keys from” above (the JSON has every number)."] : [];
    note.forEach(function (t) { svgW = Math.max(svgW, textWidth(t, 12) + 12); });
    var total = blocks.reduce(function (s, b) { return s + b.h + 14; }, 20 + 16 * note.length);
    var svg = newSvg(svgW, total, "steps view: every stage of the run");
    note.forEach(function (t, k) { el("text", { x: 4, y: y + 12 + 16 * k, fill: C.accent, "class": "step-window" }, svg, t); });
    y += 16 * note.length;
    var scoreName = stepArray("masked_scores") ? "masked_scores" : "scores";
    blocks.forEach(function (b) {
      el("text", { x: 4, y: y + 14, "font-weight": 600, "class": "stage-title" }, svg, b.title);
      if (b.sub) el("text", { x: 4, y: y + 30, fill: C.muted, "class": "step-window" }, svg, b.sub);
      var y0 = y + 20 + (b.sub ? 16 : 0) + b.head, x0 = lw, weightCell = b.step.name === "weights";
      columnHeaders(svg, b.cols, x0 + cw / 2 - 10, y0 - 4, cw, 10);
      var g = el("g", { "class": "step", "data-step": b.step.name, tabindex: weightCell ? 0 : null }, svg);
      b.rows.forEach(function (r, i) {
        labelText(svg, { x: x0 - 6, y: y0 + i * rh + 12, "text-anchor": "end", "font-size": px, "class": "mono" }, r, px);
        for (var j = 0; j < b.cols.length; j++) {
          var v = b.a[b.r[0] + i][b.c[0] + j];
          if (weightCell) el("rect", { x: x0 + j * cw, y: y0 + i * rh, width: cw, height: rh, fill: css(ramp(v)), "data-i": b.r[0] + i, "data-j": b.c[0] + j }, g);
          el("text", { x: x0 + j * cw + cw - 4, y: y0 + i * rh + 12, "text-anchor": "end", "font-size": px, "class": "mono",
            "pointer-events": weightCell ? "none" : null, fill: weightCell && /*{colour*/(D.colour ? place(v) > 0.55 : /*colour}*/v > 0.55/*{colour*/)/*colour}*/ ? C.bg : C.fg }, g, fmt(v));
        }
      });
      if (weightCell) {
        gridEvents(g, x0, y0, cw, rh, b.rows.length, b.cols.length, function (i, j) {
          return arithmetic(hi, b.r[0] + i, b.c[0] + j, scoreName);
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
    var head = "A[" + i + "," + j + "] (query " + tokName("q", i) + ", key " + tokName("k", j) + ", head " + headOf(hi).head + ")";
    if (s[j] === null) return head + " = 0: the key is masked (score −∞)";
    return head + " = e^(s − max) / Σ e^(s − max) = e^(" + s[j] + " − " + max + ") / " + sum + " = " +
      Math.exp(s[j] - max) / sum + "\nscore s = " + s[j] + " · row max = " + max + " · row sum Σ e^(s − max) = " + sum +
      "\nexact weight = " + a;
  }

  // ---- steps view of a model page (q·k per dimension): for one head and query, q, k and q⊙k per dimension, the
  // score, the softmax and the mix, from the model's own q, k and v of one layer (QKV, decoded in N) -------------
  function carriedAt(layer) {  // the carried q, k and v of this layer, or null
    return (QKV || []).filter(function (n) { return n.layer === layer; })[0] || null;
  }
  function queryArithmetic(nr, hi, i) {  // the arithmetic of query i in head hi, in float64 from the carried q, k and v
    var N = nr.N, d = nr.shape.q[2], m = Q.length, n = K.length, kh = Math.floor(hi / nr.kv_group);
    var head = layerOf().heads[hi], q = N.q.subarray((hi * m + i) * d, (hi * m + i + 1) * d);
    var rows = [], best = -Infinity;
    for (var j = 0; j < n; j++) {
      var k = N.k.subarray((kh * n + j) * d, (kh * n + j + 1) * d), prod = new Float64Array(d), dot = 0;
      for (var e = 0; e < d; e++) { prod[e] = q[e] * k[e]; dot += prod[e]; }
      var s = dot * nr.scale + (N.bias ? N.bias[(hi * m + i) * n + j] : 0);
      if (nr.softcap !== null) s = nr.softcap * Math.tanh(s / nr.softcap);
      var shut = masked(head, i, j);
      rows.push({ k: k, prod: prod, dot: dot, score: s, masked: shut });
      if (!shut) best = Math.max(best, s);
    }
    var sum = 0;
    rows.forEach(function (r) { r.e = r.masked ? 0 : Math.exp(r.score - best); sum += r.e; });
    var mix = new Float64Array(d);
    rows.forEach(function (r, j) {
      r.weight = r.e / sum;
      for (var e = 0; e < d; e++) mix[e] += r.weight * N.v[(kh * n + j) * d + e];
    });
    return { q: q, rows: rows, max: best, sum: sum, mix: mix, d: d, kv: kh };
  }
  function diverging(x, scale) {  // blue for positive, orange-red for negative, stronger for larger |x|
    var t = Math.min(1, Math.abs(x) / (scale || 1)), to = rgb(x >= 0 ? C.accent : C.mark), bg = rgb(C.bg);
    return css([0, 1, 2].map(function (c) { return Math.round(bg[c] + (to[c] - bg[c]) * Math.sqrt(t)); }));
  }
  function num(x, digits) { return x === -Infinity ? "−∞" : Number(x.toPrecision(digits || 6)).toString(); }
  function stageWords(nr, name) { var st = nr.stages[name]; return st ? st.title + "   " + st.formula : ""; }
  function drawNeuron(width) {
    var nr = carriedAt(layerOf().layer), hi = S.heads[0], i = Math.min(S.query, Q.length - 1);
    if (!nr) {
      var note = newSvg(Math.max(width - 20, 400), 60, "steps view: not carried for this layer");
      el("text", { x: 4, y: 20, "font-weight": 600 }, note, "This page carries the steps of " + (D.parts ? S.part + " " : "") +
        "layer " + QKV.map(function (n) { return n.layer; }).join(", ") + " (the layer it was written for); press ] or [ to reach it,");
      el("text", { x: 4, y: 40 }, note, "or write the page of layer " + layerOf().layer + ": " + D.command + " ... --layer " + layerOf().layer);
      return note;
    }
    var r = queryArithmetic(nr, hi, i), d = r.d, n = K.length, px = 11, rh = 16;
    var kn = K.map(function (_, j) { return tokName("k", j); });
    var lw = labelWidth(kn.concat(["q of query " + i]), px) + 12;
    var cd = Math.max(4, Math.min(12, Math.floor((width - lw - 300) / (2 * d))));
    var heads = ["k (each dim)", "q ⊙ k (each dim)"].map(function (t) { return Math.max(d * cd, textWidth(t, 12, 600)) + 16; });
    var xk = lw, xp = xk + heads[0], xs = xp + heads[1], cols = [xs, xs + 84, xs + 168], x1 = xs + 252;
    var lines = [nr.precision].concat(["q", "k", "scores", "weights", "head_outputs"].map(function (name) {
      return stageWords(nr, name);
    })).filter(function (t) { return t; });
    var title = (D.parts ? S.part + " " : "") + "layer " + nr.layer + ", head " + headOf(hi).head + (S.mean ? " (the mean has no steps: head " + headOf(hi).head + ")" : "") +
      ", query " + i + " " + tokName("q", i) + segment(i) + (nr.kv_group > 1 ? " · key/value head " + r.kv : "");
    var top = 26 + lines.length * 16 + 34, svgW = Math.max(width - 20, x1 + 10, textWidth(title, 12, 600) + 12);
    lines.forEach(function (t) { svgW = Math.max(svgW, textWidth(t, 12) + 12); });
    var svg = newSvg(svgW, top + (n + 3) * rh + 60, "steps view: the arithmetic of one query in one head");
    hatch(svg);
    el("text", { x: 4, y: 16, "font-weight": 600, "class": "stage-title" }, svg, title);
    lines.forEach(function (t, li) { el("text", { x: 4, y: 34 + li * 16, fill: li ? C.fg : C.muted, "class": "stage-title" }, svg, t); });
    var hy = top - 6;
    [[xk, "k (each dim)"], [xp, "q ⊙ k (each dim)"], [cols[0], "Σ q⊙k"], [cols[1], "score s"], [cols[2], "weight A"]].forEach(function (h) {
      el("text", { x: h[0], y: hy, "font-weight": 600 }, svg, h[1]);
    });
    var g = el("g", { "class": "qk-steps", tabindex: 0, role: "grid", "aria-label": "the steps of one query: arrow keys choose the query" }, svg);
    var qmax = 0, pmax = 0, vmax = 0;
    for (var e = 0; e < d; e++) qmax = Math.max(qmax, Math.abs(r.q[e]));
    r.rows.forEach(function (row) { for (var e = 0; e < d; e++) { qmax = Math.max(qmax, Math.abs(row.k[e])); pmax = Math.max(pmax, Math.abs(row.prod[e])); } });
    for (e = 0; e < d; e++) vmax = Math.max(vmax, Math.abs(r.mix[e]));
    var y0 = top + rh;  // the query's row, then a row per key
    labelText(svg, { x: xk - 6, y: top + 12, "text-anchor": "end", "class": "mono", "font-size": px }, "q of query " + i, px);
    for (e = 0; e < d; e++) el("rect", { x: xk + e * cd, y: top, width: cd, height: rh - 2, fill: diverging(r.q[e], qmax),
      "data-kind": "q", "data-d": e, "class": "nq" }, g);
    r.rows.forEach(function (row, j) {
      var y = y0 + j * rh + 4;
      labelText(svg, { x: xk - 6, y: y + 12, "text-anchor": "end", "class": "mono", "font-size": px }, kn[j], px);
      for (var e = 0; e < d; e++) {
        el("rect", { x: xk + e * cd, y: y, width: cd, height: rh - 2, fill: diverging(row.k[e], qmax), "data-kind": "k", "data-j": j, "data-d": e }, g);
        el("rect", { x: xp + e * cd, y: y, width: cd, height: rh - 2, fill: row.masked ? HATCH() : diverging(row.prod[e], pmax), "data-kind": "p", "data-j": j, "data-d": e }, g);
      }
      el("text", { x: cols[0] + 76, y: y + 12, "text-anchor": "end", "class": "mono nsum", "font-size": px, "data-kind": "s", "data-j": j, "data-value": row.dot }, g, num(row.dot, 4));
      el("text", { x: cols[1] + 76, y: y + 12, "text-anchor": "end", "class": "mono nscore", "font-size": px, "data-kind": "s", "data-j": j, "data-value": row.masked ? "masked" : row.score }, g, row.masked ? "masked" : num(row.score, 4));
      el("rect", { x: cols[2], y: y + 1, width: 70 * row.weight, height: rh - 4, fill: css(ramp(row.weight)), stroke: C.line, "data-kind": "a", "data-j": j }, g);
      el("text", { x: cols[2] + 80, y: y + 12, "class": "mono nweight", "font-size": px, "data-kind": "a", "data-j": j, "data-value": row.weight }, g, row.weight.toFixed(3));
    });
    var ym = y0 + n * rh + 14;
    el("text", { x: 4, y: ym + 12, "font-weight": 600 }, svg, "mix O = Σ A v");
    for (e = 0; e < d; e++) el("rect", { x: xk + e * cd, y: ym, width: cd, height: rh - 2, fill: diverging(r.mix[e], vmax), "data-kind": "o", "data-d": e, "class": "nmix", "data-value": r.mix[e] }, g);
    el("text", { x: 4, y: ym + rh + 18, fill: C.muted }, svg, "blue: positive, orange: negative, stronger: larger |value|; hover any cell for its numbers");
    g.addEventListener("mousemove", function (ev) {
      var t = ev.target.dataset;
      if (t && t.kind) say(cellArithmetic(nr, hi, i, r, t.kind, t.j === undefined ? null : +t.j, t.d === undefined ? null : +t.d));
    });
    g.addEventListener("keydown", function (ev) {
      var step = { ArrowUp: -1, ArrowDown: 1 }[ev.key];
      if (!step) return;
      S.query = Math.max(0, Math.min(Q.length - 1, S.query + step)); ev.preventDefault(); draw();
      stage.querySelector(".qk-steps").focus();
    });
    return svg;
  }
  function cellArithmetic(nr, hi, i, r, kind, j, e) {  // the numbers of one cell of the steps view, and their arithmetic
    var N = nr.N, who = "query " + i + " " + tokName("q", i) + (j === null ? "" : ", key " + j + " " + tokName("k", j));
    var row = j === null ? null : r.rows[j];
    if (kind === "q") return who + ", dim " + e + ": q = " + num(r.q[e], 7);
    if (kind === "k" || kind === "p") return who + ", dim " + e + ": q = " + num(r.q[e], 7) + ", k = " + num(row.k[e], 7) +
      ", q·k = " + num(row.prod[e], 7) + (row.masked ? " (the key is masked)" : "");
    var bias = N.bias ? N.bias[(hi * Q.length + i) * K.length + j] : 0;
    if (kind === "s") return who + ": Σ_d q_d k_d = " + num(row.dot, 7) + "; × scale " + num(nr.scale, 7) + " = " +
      num(row.dot * nr.scale, 7) + (N.bias ? "; + position bias " + num(bias, 7) + " = " + num(row.dot * nr.scale + bias, 7) : "") +
      (nr.softcap === null ? "" : "; soft-cap " + nr.softcap + " · tanh(s / " + nr.softcap + ") = " + num(row.score, 7)) +
      (row.masked ? "; masked: −∞" : "") +
      "\n(float64 from the model's float32 q and k; the model sums in float32: attn steps --model -f json prints its own)";
    if (kind === "a") return who + ": A = e^(s − max) / Σ e^(s − max) = e^(" + num(row.score, 7) + " − " + num(r.max, 7) + ") / " +
      num(r.sum, 7) + " = " + (row.masked ? "0 (masked)" : num(row.weight, 7));
    var terms = r.rows.map(function (row, j) { return [row.weight * N.v[(r.kv * K.length + j) * r.d + e], j]; })
      .sort(function (a, b) { return Math.abs(b[0]) - Math.abs(a[0]); }).slice(0, 3);
    return "query " + i + " " + tokName("q", i) + ", dim " + e + ": O = Σ_j A_j v_j = " + num(r.mix[e], 4) +
      " (v to float16, about 3 digits); largest terms: " + terms.map(function (t) { return tokName("k", t[1]) + " " + num(t[0], 3); }).join(", ");
  }

  // ---- written view (--generate): the generation one step at a time -----------------------------------
  // Step s (1..N) writes the token at position from + s − 1; the row that chose it is the one before it (its output
  // predicted the token): step s shows that row over every token up to it, for the chosen layer and heads, and
  // says "the row of is wrote ␣Paris" with the probability the model gave it (D.generated.probs). Step 1's row is
  // the text's last token. The weights are those of the pass over the whole sequence, which are what each step
  // saw (causal).
  function written() { return D.generated && D.generated.from !== undefined && D.generated.from !== null ? D.generated : null; }
  function stepText() {
    var G = written();
    if (!G) return "";
    if (S.view !== "written" || S.step === null) return "whole sequence (" + G.ids.length + " written)";
    var t = G.from + S.step;
    return "step " + (S.step + 1) + " of " + G.ids.length + ": " + tokName("q", t - 1) + " wrote " + tokName("q", t) +
      (G.probs ? " (p " + prob(G.probs[S.step]) + ")" : "");
  }
  function topHere(position) {  // the lens' last layer (the model's own logits) at a position: "tok 0.771 · ..."
    if (!D.lens) return null;
    var r = D.lens.rows.filter(function (x) { return x.layer === D.lens.n_layer && x.position === position; })[0];
    return r ? r.top_labels.map(function (t, k) { return shown(t) + " " + r.top_probs[k].toFixed(3); }).join(" · ") : null;
  }
  function titleWidth(lines) {  // a view's lines of words above it: the first bold
    return Math.max.apply(null, lines.map(function (x, k) { return textWidth(x, 12, k ? 400 : 600) + 16; }));
  }
  function prob(p) { return p >= 0.001 ? p.toFixed(3) : p.toExponential(2); }  // a forced token's may be tiny
  function wroteLine(G, s) {  // step s's token: what was written, where, and its probability
    var t = G.from + s;
    return tokName("q", t) + " (position " + t + ")" + (G.probs ? ", probability " + prob(G.probs[s]) : "");
  }
  function drawWritten(width) {
    var G = written(), n = G.ids.length;
    if (D.parts && D.parts[S.part].queries !== "target") {  // the encoder's rows are the source's, not the target's
      var note = newSvg(Math.max(width - 20, 400), 40, "written view: not for the encoder");
      el("text", { x: 4, y: 20, "font-weight": 600 }, note, "The " + S.part + "'s rows are the source's tokens: press c " +
        "(or choose the attention above) for the cross-attention or the decoder's, whose rows are the target the model wrote.");
      return note;
    }
    S.step = Math.max(0, Math.min(n - 1, S.step === null ? 0 : S.step));
    var s = S.step, t = G.from + s - 1, px = 12, rowH = 20, barW = 150, colW = barW + 86;  // t: the row that chose step s's token
    var keys = CROSS ? K.length : t + 1, kn = [];  // a cross-attention's row: every source token; else those up to t
    for (var j = 0; j < keys; j++) kn.push(tokName("k", j) + (!CROSS && j === t ? " (itself)" : ""));
    var lw = labelWidth(kn, px) + 16, hs = shownHeads();
    var lines = ["step " + (s + 1) + " of " + n + ": the row of " + tokName("q", t) + " (position " + t + ") wrote " +
      wroteLine(G, s) + (s === 0 ? ", the first token after the text" : ""),
      "the row of " + tokName("q", t) + (CROSS ? " over the source (" + S.part + ")" : " over the tokens up to it" +
        (D.parts ? " (" + S.part + ")" : "")) + (D.model ? ", layer " + layerOf().layer : "") +
      ": a bar and its number per key, ● the largest"/*{colour*/ + sinkNote()/*colour}*/,
      "(the weights of the pass over the whole sequence: causal, so what this step saw)"];
    var top = topHere(t);
    if (top) lines.push("the model's " + D.lens.k + " most probable tokens there: " + top);
    if (G.probs) lines.push("probability: the model's softmax before any sampling (" + G.decoding + ")");
    var y0 = 24 + lines.length * 18 + 24, h = y0 + keys * rowH + 12;
    var w = Math.max(lw + hs.length * colW + 20, titleWidth(lines));
    var svg = newSvg(w, h, "written view: step " + (s + 1) + " of " + n);
    lines.forEach(function (x, k) { el("text", { x: 4, y: 18 + k * 18, "font-weight": k ? 400 : 600, "class": "written-title" }, svg, x); });
    hs.forEach(function (hi, c) {
      var head = headAt(hi), x = lw + c * colW, color = HEAD_COLORS[Math.max(0, hi) % HEAD_COLORS.length];
      el("text", { x: x, y: y0 - 8, "font-weight": 600 }, svg, headName(head));
      el("line", { x1: x, x2: x + barW, y1: y0 - 4, y2: y0 - 4, stroke: color, "stroke-width": 2,
        "stroke-dasharray": DASHES[Math.max(0, hi) % DASHES.length] || null }, svg);
      var best = maxima(head, t), g = el("g", { "class": "written-head", "data-head": head.head }, svg);
      for (var j = 0; j < keys; j++) {
        var y = y0 + j * rowH, row = el("g", { "class": "written-row", "data-j": j }, g);
        if (masked(head, t, j)) { el("text", { x: x, y: y + 14 }, row, "masked"); continue; }
        var wj = weight(head, t, j);
        el("rect", { x: x, y: y + 3, width: Math.max(0.5, barW * wj), height: rowH - 6, fill: color, "fill-opacity": 0.75 }, row);
        el("rect", { x: x, y: y + 3, width: barW, height: rowH - 6, fill: "none", stroke: C.line }, row);
        el("text", { x: x + barW + 6, y: y + 14, "class": "mono wweight", "data-value": wj }, row,
          wj.toFixed(3) + (best.indexOf(j) >= 0 ? " ●" : ""));
      }
    });
    kn.forEach(function (name, j) {
      labelText(svg, { x: lw - 8, y: y0 + j * rowH + 14, "text-anchor": "end", "class": "mono wkey", "font-size": px,
        "font-weight": !CROSS && j >= G.from ? 600 : 400 }, name, px);
    });
    svg.addEventListener("mousemove", function (e) {
      var r = e.target.closest(".written-row");
      if (!r) return;
      var j = +r.dataset.j;
      say(tokName("q", t) + " → key " + j + " " + tokName("k", j) + ": " + hs.map(function (hi) {
        var head = headAt(hi);
        return headName(head) + "\u00a0" + (masked(head, t, j) ? "masked" : weight(head, t, j).toFixed(3));
      }).join(", ") + " (drawn to 1/" + D.scale + ")");
    });
    return svg;
  }
  function stepWritten(by) {  // n / p: the next or previous step (from the whole sequence: the first or the last)
    var n = written().ids.length;
    if (D.parts && D.parts[S.part].queries !== "target") setPart("cross");  // the encoder's rows are the source's
    if (S.view !== "written" || S.step === null) S.step = by > 0 ? 0 : n - 1;
    else S.step = Math.max(0, Math.min(n - 1, S.step + by));
    setView("written");
  }
  function wholeSequence() { S.step = null; setView("head"); }

  // ---- lens view (--lens): layers × positions, each cell the top next token and its probability ---------------
  function drawLens(width) {
    var L = D.lens, nl = L.n_layer + 1, n = Q.length, px = 11, cells = {};
    L.rows.forEach(function (r) { cells[r.layer + ":" + r.position] = r; });
    var c = 48;
    L.rows.forEach(function (r) { c = Math.max(c, Math.min(LABEL_MAX, monoWidth(shown(r.top_labels[0]), px)) + 10); });
    var qn = Q.map(function (_, i) { return tokName("q", i); }), ch = 32;
    var lines = ["the logit lens: what the model would write next if it stopped after each layer (the final norm and the " +
      "unembedding on the residual stream)", L.layers + "; the last layer is the model's own output",
      "each cell: the most probable next token after that position, and its probability (shade = probability); hover, " +
      "focus or click a cell for its " + L.k + " most probable"];
    var y0 = 18 * lines.length + 10 + labelWidth(qn, px) * 0.87 + 14, x0 = 8 + textWidth("layer " + L.n_layer + " (output)", 11) + 8;
    var w = Math.max(x0 + n * c + 20 + labelWidth(qn, px) / 2, titleWidth(lines));
    var svg = newSvg(w, y0 + nl * ch + 16, "lens view: the top next token of every layer and position");
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600 }, svg, x); });
    columnHeaders(svg, qn, x0, y0 - 6, c, px);
    for (var l = 0; l < nl; l++) el("text", { x: 4, y: y0 + l * ch + ch / 2 + 4, "font-size": 11, fill: C.muted }, svg,
      "layer " + l + (l === nl - 1 ? " (output)" : ""));
    var g = el("g", { "class": "lens", tabindex: 0, role: "grid", "aria-label": "lens: arrow keys move, the readout lists a cell's top tokens" }, svg);
    for (l = 0; l < nl; l++) for (var i = 0; i < n; i++) {
      var r = cells[l + ":" + i], p = r.top_probs[0], x = x0 + i * c, y = y0 + l * ch, ink = /*{colour*/(D.colour ? place(p) > 0.55 : /*colour}*/p > 0.55/*{colour*/)/*colour}*/ ? C.bg : C.fg;
      var cell = el("g", { "class": "lens-cell", "data-l": l, "data-i": i }, g);
      el("rect", { x: x, y: y, width: c, height: ch, fill: css(ramp(p)), stroke: C.bg }, cell);
      labelText(cell, { x: x + c / 2, y: y + 13, "text-anchor": "middle", "class": "mono ltok", "font-size": px, fill: ink,
        "pointer-events": "none" }, shown(r.top_labels[0]), px).setAttribute("style", "fill:" + ink);
      el("text", { x: x + c / 2, y: y + 26, "text-anchor": "middle", "class": "mono lprob", "font-size": 10, "data-value": p,
        "pointer-events": "none", style: "fill:" + ink }, cell, p.toFixed(2));
    }
    gridEvents(g, x0, y0, c, ch, nl, n, function (l, i) {
      var r = cells[l + ":" + i];
      return "layer " + l + (l === nl - 1 ? " (the output)" : "") + ", position " + i + " " + tokName("q", i) + " → next: " +
        r.top_labels.map(function (t, k) {  // no break inside an entry: a token stays with its number
          return (k + 1) + ".\u00a0" + shown(t) + "\u00a0" + r.top_probs[k].toFixed(4) + "\u00a0(id\u00a0" + r.top_ids[k] + ")";
        }).join(" · ");
    });
    return svg;
  }

  // ---- ablation view (--ablate): every head switched off alone, ranked and as a layers × heads grid ----------
  function drawAblation(width) {
    var A = D.ablation, nl = A.n_layer, nh = A.n_head, rows = A.rows, px = 11, cells = {}, scale = 0;
    var R = A.ranked_by, key = R.column, label = R.label;  // what ranks the heads (the document says; default Δ log-prob)
    rows.forEach(function (r, k) { cells[r.layer + ":" + r.head] = [r, k]; scale = Math.max(scale, Math.abs(r[key])); });
    var target = shown(A.target.label), shownRanked = Math.min(10, rows.length);
    function numbers(r, digits) {  // every column of a row, each with its name
      return "Δ logit " + r.delta_logit.toFixed(digits) + " · Δ log-prob " + r.delta_logprob.toFixed(digits) +
        (A.contrast ? " · Δ logit diff " + r.delta_logit_diff.toFixed(digits) : "");
    }
    var lines = ["every head switched off alone (" + A.means + "):", "the change in " + target +
      (A.target.given === null ? " (the model's own next token)" : " (--target)") +
      (A.contrast ? " against " + shown(A.contrast.label) + " (--contrast)" : "") + " after position " + A.position + " " + tokName("q", A.position),
      "clean: logit " + A.clean_logit.toFixed(3) + ", log-probability " + A.clean_logprob.toFixed(3) +
      (A.contrast ? ", logit difference " + A.clean_logit_diff.toFixed(3) : "") + "; Δ = switched off − clean; " +
      "blue: up, red: down, stronger: larger |" + label + "|",
      "ranked by |" + label + "| (" + R.means + "): the " + shownRanked + " largest of " + rows.length + " heads" +
        (shownRanked < rows.length ? " (every head is in the grid below)" : "") + ":"];
    var y = 18 * lines.length + 12, barW = 180, nameW = textWidth(shownRanked + ". L" + (nl - 1) + ".H" + (nh - 1), 12, 600) + 14;
    var c = Math.max(46, monoWidth("-00.00", 10) + 8), ch = 20, x0 = 8 + textWidth("L" + (nl - 1), 11) + 10;
    var gridTop = y + shownRanked * 20 + 40;
    var w = Math.max(x0 + nh * c + 20, nameW + 2 * barW + 420, titleWidth(lines));
    var svg = newSvg(w, gridTop + nl * ch + 16, "ablation view: each head's effect on the next token");
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600 }, svg, x); });
    var mid = nameW + barW;
    rows.slice(0, shownRanked).forEach(function (r, k) {
      var yy = y + k * 20, len = scale ? barW * Math.abs(r[key]) / scale : 0;
      var g = el("g", { "class": "ablate-rank", "data-l": r.layer, "data-h": r.head }, svg);
      el("text", { x: 4, y: yy + 14, "font-weight": 600 }, g, (k + 1) + ". L" + r.layer + ".H" + r.head);
      el("rect", { x: r[key] < 0 ? mid - len : mid, y: yy + 3, width: Math.max(0.5, len), height: 14,
        fill: diverging(r[key], scale) }, g);
      el("text", { x: mid + barW + 8, y: yy + 14, "class": "mono arank", "data-value": r[key] }, g, numbers(r, 3));
    });
    el("line", { x1: mid, x2: mid, y1: y, y2: y + shownRanked * 20, stroke: C.muted }, svg);
    el("text", { x: 4, y: gridTop - 24, "font-weight": 600 }, svg, label + " of every head: layers down, heads across");
    for (var h = 0; h < nh; h++) el("text", { x: x0 + h * c + c / 2, y: gridTop - 6, "text-anchor": "middle", fill: C.muted, "font-size": 11 }, svg, "H" + h);
    for (var l = 0; l < nl; l++) el("text", { x: 4, y: gridTop + l * ch + 14, fill: C.muted, "font-size": 11 }, svg, "L" + l);
    var g = el("g", { "class": "ablation", tabindex: 0, role: "grid", "aria-label": "ablation: arrow keys move, the readout gives a head's numbers" }, svg);
    for (l = 0; l < nl; l++) for (h = 0; h < nh; h++) {
      var at = cells[l + ":" + h], x = x0 + h * c, yy = gridTop + l * ch;
      if (!at) { el("rect", { x: x, y: yy, width: c, height: ch, fill: C.panel, stroke: C.bg }, g); continue; }
      var d = at[0][key], ink = scale && Math.abs(d) / scale > 0.5 ? C.bg : C.fg;
      el("rect", { x: x, y: yy, width: c, height: ch, fill: diverging(d, scale), stroke: C.bg, "class": "acell", "data-l": l, "data-h": h }, g);
      el("text", { x: x + c / 2, y: yy + 14, "text-anchor": "middle", "class": "mono avalue", "font-size": 10, "data-value": d,
        "pointer-events": "none", style: "fill:" + ink }, g, d.toFixed(2));
    }
    gridEvents(g, x0, gridTop, c, ch, nl, nh, function (l, h) {
      var at = cells[l + ":" + h];
      if (!at) return "layer " + l + ", head " + h + ": not switched off";
      return "layer " + l + ", head " + h + " switched off: " + numbers(at[0], 4) + " of " + target +
        " (rank " + (at[1] + 1) + " of " + rows.length + " by |" + label + "|)";
    });
    return svg;
  }

  // ---- patch view (--patch): every activation's normalized score, layers × positions (or × heads) --------------
  function metricText(X) {  // m of attn patch and attn dla: logit(A) − logit(B)
    return "m = logit(" + shown(X.target.token) + ")" + (X.contrast ? " − logit(" + shown(X.contrast.token) + ")" : "");
  }
  function drawPatch(width) {
    var P = D.patch, byHead = P.axis === "head", nl = P.n_layer, px = 11, cells = {}, scale = 0;
    var ncol = byHead ? P.n_head : P.tokens.length;
    P.rows.forEach(function (r, k) { cells[r.layer + ":" + r[P.axis]] = r; scale = Math.max(scale, Math.abs(r.score)); });
    function colName(j) {  // a position's clean token, and the corrupt one where they differ
      if (byHead) return "H" + j;
      return j + " " + shown(P.tokens[j]) + (P.tokens[j] === P.corrupt_tokens[j] ? "" : " ≠ " + shown(P.corrupt_tokens[j]));
    }
    function cellName(r) { return "L" + r.layer + (byHead ? ".H" + r.head : " " + colName(r.position)); }
    var source = P.direction === "noising" ? "corrupt" : "clean", into = P.direction === "noising" ? "clean" : "corrupt";
    var lines = ["activation patching (" + P.direction + ") of " + P.what + ": " + P.means,
      metricText(P) + " at position " + P.position + ": m_clean " + P.m_clean.toFixed(3) + ", m_corrupt " + P.m_corrupt.toFixed(3),
      "each cell: the " + source + " run's activation put into the " + into + " run, score = (m_patched − m_corrupt) / " +
      "(m_clean − m_corrupt); blue: up, red: down, stronger: larger |score|",
      "the " + P.strongest.length + " strongest of " + P.rows.length + " cells (every cell is in the grid below):"];
    P.strongest.forEach(function (k, i) {
      var r = P.rows[k];
      lines.push((i + 1) + ". " + cellName(r) + "  score\u00a0" + r.score.toFixed(3));
    });
    var heads = [];
    for (var j = 0; j < ncol; j++) heads.push(colName(j));
    var c = Math.max(46, monoWidth("-00.00", 10) + 8);
    var ch = 22, x0 = 8 + textWidth("L" + (nl - 1), 11) + 10, y0 = 18 * lines.length + 16 + labelWidth(heads, px) * 0.87 + 8;
    var w = Math.max(x0 + ncol * c + 20 + labelWidth(heads, px) / 2, titleWidth(lines));
    var svg = newSvg(w, y0 + nl * ch + 16, "patch view: the normalized score of every patched activation");
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600 }, svg, x); });
    columnHeaders(svg, heads, x0, y0 - 6, c, px);
    for (var l = 0; l < nl; l++) el("text", { x: 4, y: y0 + l * ch + 15, fill: C.muted, "font-size": 11 }, svg, "L" + l);
    var g = el("g", { "class": "patch", tabindex: 0, role: "grid", "aria-label": "patch: arrow keys move, the readout gives a cell's score" }, svg);
    for (l = 0; l < nl; l++) for (j = 0; j < ncol; j++) {
      var r = cells[l + ":" + j], x = x0 + j * c, y = y0 + l * ch, ink = scale && Math.abs(r.score) / scale > 0.5 ? C.bg : C.fg;
      el("rect", { x: x, y: y, width: c, height: ch, fill: diverging(r.score, scale), stroke: C.bg, "class": "pcell", "data-l": l, "data-j": j }, g);
      el("text", { x: x + c / 2, y: y + 15, "text-anchor": "middle", "class": "mono pvalue", "font-size": 10, "data-value": r.score,
        "pointer-events": "none", style: "fill:" + ink }, g, r.score.toFixed(2));
    }
    gridEvents(g, x0, y0, c, ch, nl, ncol, function (l, j) {
      var r = cells[l + ":" + j];
      return "layer " + l + (byHead ? ", head " + j : ", position " + colName(j)) + " patched (" + P.direction + "): score " +
        r.score.toFixed(4) + " of " + metricText(P) + " (m_clean " + P.m_clean.toFixed(4) + ", m_corrupt " + P.m_corrupt.toFixed(4) + ")";
    });
    return svg;
  }

  // ---- dla view (--dla): each part's direct contribution to m, ranked, and their sum ---------------------------
  var DLA_SHOWN = 20;  // bars drawn; -f json (and attn dla) has every part
  function dlaPart(r) {
    if (r.component === "head") return "L" + r.layer + ".H" + r.head;
    return r.layer === null ? r.component : "L" + r.layer + " " + r.component;
  }
  function drawDla(width) {
    var A = D.dla, ranked = A.ranked.slice(0, DLA_SHOWN), scale = 0;
    ranked.forEach(function (k) { scale = Math.max(scale, Math.abs(A.rows[k].dla)); });
    var lines = ["direct logit attribution of " + metricText(A) + " after position " + A.position + " " + tokName("q", A.position),
      "the " + A.rows.length + " parts sum to " + A.sum.toFixed(6) + "; m = " + A.m.toFixed(6) + " (difference " +
        A.difference.toExponential(1) + ", within float32 rounding " + A.tolerance.toExponential(1) + ")",
      "each part through the final norm with its scale frozen from the full run, then the unembedding; blue: toward " +
        shown(A.target.token) + ", red: against",
      "the " + ranked.length + " largest |dla| of " + A.rows.length + " parts" + (ranked.length < A.rows.length ?
        " (every part: attn dla -f json)" : "") + ":"];
    if (A.capped) lines.push(A.capped);
    var names = ranked.map(function (k, i) { return (i + 1) + ". " + dlaPart(A.rows[k]); });
    var y = 18 * lines.length + 12, barW = 180, nameW = Math.max.apply(null, names.map(function (s) { return textWidth(s, 12, 600); }).concat([40])) + 14;
    var mid = nameW + barW, rowH = 20;
    var w = Math.max(nameW + 2 * barW + 140, titleWidth(lines));
    var svg = newSvg(w, y + ranked.length * rowH + 16, "dla view: each part's direct contribution to m, ranked");
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600 }, svg, x); });
    var g = el("g", { "class": "dla", tabindex: 0, role: "grid", "aria-label": "dla: arrow keys move, the readout gives a part's share" }, svg);
    ranked.forEach(function (k, i) {
      var r = A.rows[k], yy = y + i * rowH, len = scale ? barW * Math.abs(r.dla) / scale : 0;
      var bar = el("g", { "class": "dla-rank", "data-k": k }, g);
      el("text", { x: 4, y: yy + 14, "font-weight": 600 }, bar, names[i]);
      el("rect", { x: r.dla < 0 ? mid - len : mid, y: yy + 3, width: Math.max(0.5, len), height: 14, fill: diverging(r.dla, scale) }, bar);
      el("text", { x: mid + barW + 8, y: yy + 14, "class": "mono dvalue", "data-value": r.dla }, bar, "dla " + r.dla.toFixed(4));
    });
    el("line", { x1: mid, x2: mid, y1: y, y2: y + ranked.length * rowH, stroke: C.muted }, svg);
    gridEvents(g, 0, y, w, rowH, ranked.length, 1, function (i) {
      var r = A.rows[ranked[i]];
      return dlaPart(r) + ": dla " + r.dla.toFixed(6) + " of " + metricText(A) + " = " + A.m.toFixed(6) + " (rank " + (i + 1) +
        " of " + A.rows.length + " by |dla|)";
    });
    return svg;
  }

  // ---- knockout view (--knockout): the top token's probability with edges blocked, one bar per window ---------
  function drawKnockout(width) {
    var K0 = D.knockout, rows = K0.rows, scale = 0;
    rows.forEach(function (r) { scale = Math.max(scale, Math.abs(r.delta_prob)); });
    var keys = K0.from.positions.map(function (i) { return i + " " + shown(K0.tokens[i]); }).join(", ");
    var lines = ["attention knockout: position " + K0.to + " " + shown(K0.tokens[K0.to]) + " blocked from " + keys +
      " (--from " + K0.from.given + ")",
      "top next token " + shown(K0.top.token) + " (id " + K0.top.id + "): probability " + K0.top.prob.toFixed(4) + " with nothing blocked",
      "in each window of " + K0.window + " layers those edges' scores are −∞ before the softmax; relative change = (p_blocked − p) / p " +
        "(Geva et al. 2023); blue: up, red: down"];
    var names = rows.map(function (r) { return "layers " + r.first_layer + "–" + r.last_layer; });
    var y = 18 * lines.length + 12, barW = 180, rowH = 20;
    var nameW = Math.max.apply(null, names.map(function (s) { return textWidth(s, 12, 600); }).concat([40])) + 14, mid = nameW + barW;
    var w = Math.max(nameW + 2 * barW + 300, titleWidth(lines));
    var svg = newSvg(w, y + rows.length * rowH + 16, "knockout view: the top token's probability with the edges blocked, per window of layers");
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600 }, svg, x); });
    var g = el("g", { "class": "knockout", tabindex: 0, role: "grid", "aria-label": "knockout: arrow keys move, the readout gives a window's numbers" }, svg);
    rows.forEach(function (r, i) {
      var yy = y + i * rowH, len = scale ? barW * Math.abs(r.delta_prob) / scale : 0;
      var bar = el("g", { "class": "knock-row", "data-first": r.first_layer }, g);
      el("text", { x: 4, y: yy + 14, "font-weight": 600 }, bar, names[i]);
      el("rect", { x: r.delta_prob < 0 ? mid - len : mid, y: yy + 3, width: Math.max(0.5, len), height: 14, fill: diverging(r.delta_prob, scale) }, bar);
      el("text", { x: mid + barW + 8, y: yy + 14, "class": "mono kvalue", "data-value": r.delta_prob }, bar,
        "relative change " + r.delta_prob.toFixed(4) + " · probability " + r.prob.toFixed(4));
    });
    el("line", { x1: mid, x2: mid, y1: y, y2: y + rows.length * rowH, stroke: C.muted }, svg);
    gridEvents(g, 0, y, w, rowH, rows.length, 1, function (i) {
      var r = rows[i];
      return names[i] + " blocked: probability of " + shown(K0.top.token) + " " + r.prob.toFixed(6) + " (unblocked " +
        K0.top.prob.toFixed(6) + "), relative change " + r.delta_prob.toFixed(6);
    });
    return svg;
  }

  /*{contrib*/
  // ---- contributions view (--contrib): a measure's maps of the layer, what each input token moves into each output
  // (attn show --contrib's numbers, exact): the chosen head's (where the measure has them), the layer's, the rollout
  function drawContrib(width) {
    var M = D.contributions, hi = S.heads[0], here = null, px = 11;
    M.layers.forEach(function (l) { if (l.layer === layerOf().layer) here = l; });
    if (!here) {
      var note = newSvg(Math.max(width - 20, 400), 60, "contributions view: not carried for this layer");
      el("text", { x: 4, y: 20, "font-weight": 600 }, note, "This page carries the " + M.title + " of layer " +
        M.layers.map(function (l) { return l.layer; }).join(", ") + " (the layer it was written for); press ] or [ to reach it,");
      el("text", { x: 4, y: 40 }, note, "or write the page of layer " + layerOf().layer + ": " + D.command + " ... --layer " + layerOf().layer + (D.parts ? " --part " + S.part : ""));
      return note;
    }
    var maps = [];  // [title, entry, the head whose mask hatches it]
    if (here.heads) maps.push([M.title + ", layer " + here.layer + ", head " + layerOf().heads[hi].head +
      (S.mean ? " (the mean is the weights': this is head " + layerOf().heads[hi].head + ")" : ""), here.heads[hi]]);
    maps.push([M.title + ", layer " + here.layer + (M.per_head ? ", all heads together" : ""), here.map, here.r]);
    if (here.rollout) maps.push([M.title + " rolled out through layers 0.." + here.layer, here.rollout]);
    var qn = Q.map(function (_, i) { return tokName("q", i); }), kn = K.map(function (_, j) { return tokName("k", j); });
    var wq = labelWidth(qn, px) + 12, wk = labelWidth(kn, px) + 12, n = K.length, m = Q.length;
    var c = Math.max(6, Math.min(28, Math.floor((width - wq - 40) / n)));
    var lines = [(D.parts ? S.part + ": " : "") + M.title + ": " + M.unit, M.formula, M.paper].concat(M.note ? noteLines(M.note, width) : []);
    var block = wk * 0.87 + 30 + m * c + 50, top = 18 * lines.length + 10;
    var svgW = Math.max(wq + 8 + n * c + 20 + wk / 2, titleWidth(lines), 360);
    var svg = newSvg(svgW, top + maps.length * block, "contributions view: " + M.title + " of layer " + here.layer);
    hatch(svg);
    lines.forEach(function (x, k) { el("text", { x: 4, y: 16 + k * 18, "font-weight": k ? 400 : 600, "class": "contrib-title" }, svg, x); });
    var shut = WEIGHTS.layers[S.layer].heads[hi].mask;  // the layer's mask (causal, a window): the same in every head
    maps.forEach(function (mp, k) {
      var y = top + k * block, x0 = wq + 8, y0 = y + 22 + wk * 0.87, a = mp[1], scale = a.top || 1;
      el("text", { x: 4, y: y + 14, "font-weight": 600, "class": "contrib-map" }, svg, mp[0]);
      qn.forEach(function (t, i) { labelText(svg, { x: x0 - 6, y: y0 + i * c + c / 2 + 4, "text-anchor": "end", "class": "mono", "font-size": px }, t, px); });
      columnHeaders(svg, kn, x0, y0 - 6, c, px);
      var off = function (i, j) { return shut !== null && WEIGHTS.masks[shut][i].charAt(j) === "1"; };
      var g = drawGrid(svg, x0, y0, c, m, n, function (i, j) {
        return off(i, j) ? HATCH() : css(ramp(a.v[i * n + j] / scale));
      }, "contrib", null, null);
      g.setAttribute("data-map", k);
      var defs = svg.querySelector("defs"), grad = el("linearGradient", { id: "contrib-ramp-" + k }, defs);
      colourBar(svg, x0, y0 + m * c + 14, grad, M.title + " (" + (M.normalized ? "a share" : "a length") + "), " +
        SCALES[S.scale].words, M.normalized ? null : a.top);
      gridEvents(g, x0, y0, c, c, m, n, function (i, j) {
        return mp[0] + ": query " + i + " " + tokName("q", i) + " → key " + j + " " + tokName("k", j) + ": " +
          (off(i, j) ? "masked (" + a.v[i * n + j] + ")" : String(a.v[i * n + j])) + " (exact, float64)" +
          (mp[2] ? "; the residual carries " + mp[2][i] + " of row " + i + " (the rest of the row)" : "");
      });
    });
    return svg;
  }

  function noteLines(text, width) {  // a part's note (what its maps are there), cut at words into lines that fit
    var out = [""], most = Math.max(60, Math.floor((width - 40) / 6.5));
    text.split(" ").forEach(function (w) {
      var last = out[out.length - 1];
      if (last && (last + " " + w).length > most) out.push(w); else out[out.length - 1] = last ? last + " " + w : w;
    });
    return out;
  }
  /*contrib}*/
  // ---- the page around the views --------------------------------------------------------------------
  function hint() {
    return { head: "Hover, focus or click a token to follow its lines; choose the layer and heads above.",
      model: "Each thumbnail is one head's weights, labelled with the pattern attn heads finds; click or Enter opens it.",
      matrix: "Hover a cell (or focus the matrix and use the arrow keys) for its weight; click or Enter for the exact value.",
      steps: D.steps ? "Hover a weight (or focus the weights and use the arrow keys) for the arithmetic that produced it." :
        "Choose a head and a query (or focus the table and use ↑ ↓); hover a cell for its numbers and their arithmetic.",
      written: "n next step · p previous step · w the whole sequence; choose the layer and heads above; hover a key for its weights.",
      lens: "Hover, focus (arrow keys) or click a cell for its most probable next tokens.",
      ablation: "Hover or focus a cell of the grid (arrow keys) for a head's Δ logit and Δ log-probability.",
      patch: "Hover, focus (arrow keys) or click a cell for its normalized score.",
      dla: "Hover, focus (arrow keys) or click a bar for the part's share of m.",
      knockout: "Hover, focus (arrow keys) or click a window for the probability with its edges blocked.",
      text: "Hover a token for its weight; choose the layer and head above."/*{contrib*/, contrib: "Hover a cell (or focus a map and use the arrow keys) for its exact number; choose the layer and head above."/*contrib}*/ }[S.view];
  }
  function draw() {
    if (!ready) return;
    readColors();
    var width = Math.max(320, stage.clientWidth || root.clientWidth - 32);
    var svg = { head: drawHead, model: drawModel, matrix: drawMatrix, steps: D.steps ? drawSteps : drawNeuron,
      written: drawWritten, lens: drawLens, ablation: drawAblation, patch: drawPatch, dla: drawDla, knockout: drawKnockout,
      text: drawText/*{contrib*/, contrib: drawContrib/*contrib}*/ }[S.view](width);
    stage.replaceChildren(svg);
    wideCue();
    S.pinned = false; S.pin = null; S.focus = null;
    say(hint());
    layerSelect.value = S.layer;
    headBox.querySelectorAll("input[data-head]").forEach(function (box) { box.checked = !S.mean && S.heads.indexOf(+box.value) >= 0; });
    meanBox.checked = S.mean;
    /*{colour*/
    scaleSelect.value = S.scale;
    if (sinkBox) { sinkBox.checked = S.sinkless; sinkBox.parentNode.hidden = S.view === "contrib"; }  // the maps keep key 0
    /*colour}*/
    if (partSelect) partSelect.value = S.part;
    var behaviour = S.view === "lens" || S.view === "ablation";  // their grids have every layer (and head): no chooser acts
    layerLabel.hidden = headBox.hidden = behaviour;
    if (writtenSet) writtenSet.hidden = behaviour;
    zoomLabel.hidden = blockSet.hidden = S.view !== "matrix";
    blockSet.querySelectorAll(".block-from").forEach(function (l) { l.hidden = S.block === "all"; });
    if (querySelect) { querySelect.value = S.query; queryLabel.hidden = S.view !== "steps"; }
    if (keySelect) { keySelect.value = S.key; keyLabel.hidden = S.view !== "steps"; }
    if (stepLabel) stepLabel.textContent = stepText();
    root.dataset.part = S.part || "";
    VIEWS.forEach(function (v) { tabs[v[0]].setAttribute("aria-selected", String(v[0] === S.view)); tabs[v[0]].tabIndex = v[0] === S.view ? 0 : -1; });
    root.dataset.view = S.view;
    fitFrame();
  }
  function fitFrame() {  // in a notebook's frame: the page's height, for the notebook to size the frame (api/page.py)
    // the body's own height (the window's would only grow with the frame)
    if (window.parent !== window) window.parent.postMessage({ attnHeight: root.offsetHeight }, "*");
  }
  function setView(v) { S.view = v; draw(); }
  function wideCue() {  // a view wider than the window: say so above it, and keep its scrollbar visible
    var over = stage.scrollWidth > stage.clientWidth + 1;
    stage.classList.toggle("overflows", over);
    wide.hidden = !over;
  }
  function fillLayers() {
    layerSelect.replaceChildren();
    D.layers.forEach(function (l, i) { html("option", { value: i }, layerSelect, String(l.layer)); });
    layerSelect.disabled = D.layers.length < 2;
  }
  function fillQueries() {  // the query chooser of the steps view: the rows' tokens
    if (!querySelect) return;
    querySelect.replaceChildren();
    Q.forEach(function (_, i) { html("option", { value: i }, querySelect, i + " " + tokName("q", i)); });
    S.query = Math.min(S.query, Q.length - 1);
  }
  function fillBlock() {  // the matrix's Block, and its first query and key
    blockSet.replaceChildren();
    var sizes = BLOCKS.filter(function (b) { return b < Math.max(Q.length, K.length); });
    if (!sizes.length) { S.block = "all"; return; }
    [["Block ", "block", ["all"].concat(sizes), "block"], ["Queries from ", "block-query", Q, "rowFrom", "q"],
      ["Keys from ", "block-key", K, "colFrom", "k"]].forEach(function (o) {
      var l = html("label", { "class": o[4] ? "block-from" : "" }, blockSet, o[0]), sel = html("select", { id: o[1] }, l);
      o[2].forEach(function (v, i) {
        html("option", { value: o[4] ? i : v }, sel, o[4] ? i + " " + tokName(o[4], i) : v === "all" ? "the whole matrix" : v + " × " + v + " tokens");
      });
      if (o[4]) S[o[3]] = Math.min(S[o[3]], o[2].length - 1);
      sel.value = S[o[3]];
      sel.addEventListener("change", function () { S[o[3]] = o[4] ? +sel.value : sel.value; draw(); });
    });
  }
  function setPart(name) {  // another attention of the encoder–decoder: the same layer (or its last) and heads
    usePart(name);
    fillQueries();
    S.layer = Math.min(S.layer, D.layers.length - 1);
    S.heads = S.heads.filter(function (h) { return h < layerOf().heads.length; });
    if (!S.heads.length) S.heads = [0];
    S.cell = [0, 0];
    fillLayers();
    fillHeads();
    fillBlock();
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
    var header = html("header", {}, root);
    html("h1", {}, header, "attn view");
    var pair = D.second_segment !== undefined && D.second_segment !== null;
    html("p", { "class": "text" }, header, (D.parts && D.context !== null ? "target: " : pair ? "text 1: " : "") + (D.text || ""));
    if (D.parts && D.context !== null) html("p", { "class": "text" }, header, "source: " + D.context);
    if (pair) html("p", { "class": "text" }, header, "text 2 (--context, a sentence pair): " + D.context);
    if (written()) html("p", { "class": "text" }, header, "written by the model (› in the labels): " + shownText(D.generated.text));
    if (D.opened) html("p", { "class": "help", id: "opened" }, header, D.opened.note);  // no --head: where it opens, and why
    var details = html("details", {}, header);
    html("summary", {}, details, "about this run" + (D.model ? ": " + D.model.name : ""));
    var ul = html("ul", {}, details);
    D.caption.forEach(function (line) { html("li", {}, ul, line); });
    if (D.parts) Object.keys(D.parts).forEach(function (name) { html("li", {}, ul, "part " + name + ": " + D.parts[name].help); });
    html("li", {}, ul, "weights drawn to 1/" + D.scale + " (" + D.encoding.weights + "); " + (D.steps ?
      "the exact numbers are in the steps view and on a click in the matrix view" : "a click in the matrix view gives the command that prints the exact number"));
    if (written()) html("li", {}, ul, "written (--generate " + D.generated.ids.length + "): " + D.generated.decoding +
      "; the Written view steps through them");
    if (D.lens) html("li", {}, ul, "lens: the " + D.lens.k + " most probable next tokens of every layer and position (" +
      D.lens.layers + "), computed by attn as attn lens does");
    if (D.ablation) html("li", {}, ul, "ablation: every head switched off alone (" + D.ablation.means + "), watching " +
      shown(D.ablation.target.label) + " after position " + D.ablation.position + ", as attn ablate does");
    if (D.patch) html("li", {}, ul, "patch: every activation of " + D.patch.what + " patched (" + D.patch.direction + ") from --corrupt " +
      D.patch.corrupt + ", as attn patch does");
    if (D.dla) html("li", {}, ul, "dla: each part's direct contribution to " + metricText(D.dla) + ", as attn dla does");
    if (D.knockout) html("li", {}, ul, "knockout: the edges from position " + D.knockout.to + " to --from " + D.knockout.from.given +
      " blocked " + D.knockout.window + " layers at a time, as attn knockout does");
    /*{contrib*/
    if (D.contributions) html("li", {}, ul, "contributions: " + D.contributions.title + " (" + D.contributions.unit + "): " +
      D.contributions.formula + ". " + D.contributions.paper + ", as attn show --contrib " + D.contributions.measure + " computes it");
    /*contrib}*/
    html("li", {}, ul, "data: schema " + D.schema + ", the same document as " + D.command + " -f json");
    var nav = html("nav", { role: "tablist", "aria-label": "views" }, root);
    VIEWS.forEach(function (v, i) {
      var keyed = i < 9;  // keys 1–9; a 10th view (every option at once) is reached by the arrows in the tab bar
      var b = html("button", { role: "tab", id: "tab-" + v[0], title: keyed ? "key " + (i + 1) : "← → in the tabs" }, nav,
        (keyed ? (i + 1) + " " : "") + v[1]);
      b.addEventListener("click", function () { setView(v[0]); });
      tabs[v[0]] = b;
    });
    nav.addEventListener("keydown", function (e) {
      var i = VIEWS.findIndex(function (v) { return v[0] === S.view; }), d = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
      if (d) { setView(VIEWS[(i + d + VIEWS.length) % VIEWS.length][0]); tabs[S.view].focus(); }
    });
    var controls = html("div", { "class": "controls" }, root);
    if (D.parts) {
      var plab = html("label", {}, controls, "Attention ");
      partSelect = html("select", { id: "part", title: "key c" }, plab);
      Object.keys(D.parts).forEach(function (name) {
        html("option", { value: name }, partSelect, name + (D.parts[name].context_tokens ? " (alignment)" : " self-attention"));
      });
      partSelect.addEventListener("change", function () { setPart(partSelect.value); });
    }
    if (D.second_segment) {
      var pl = html("label", {}, controls, "Show ");
      var pairSelect = html("select", { id: "pair" }, pl);
      PAIRS.forEach(function (o) { html("option", { value: o[0] }, pairSelect, o[1]); });
      pairSelect.addEventListener("change", function () { S.pair = pairSelect.value; draw(); });
    }
    layerLabel = html("label", {}, controls, "Layer ");
    layerSelect = html("select", { id: "layer" }, layerLabel);
    fillLayers();
    layerSelect.addEventListener("change", function () { S.layer = +layerSelect.value; draw(); });
    headBox = html("fieldset", { "class": "heads", id: "heads" }, controls);
    html("legend", { style: "float:left;margin-right:6px" }, headBox, "Heads");
    fillHeads();
    meanLabel = html("label", { title: "key a" }, headBox);
    meanBox = html("input", { type: "checkbox", id: "mean", "aria-label": "mean of the heads" }, meanLabel);
    meanLabel.appendChild(document.createTextNode(" mean"));
    meanBox.addEventListener("change", function () { S.mean = meanBox.checked; draw(); });
    var steps = VIEWS.some(function (v) { return v[0] === "steps"; });
    if (steps && (!D.steps || Q.length > STEP_ROWS || K.length > 4)) {  // a text run: the window's first row
      queryLabel = html("label", {}, controls, D.steps ? "Queries from " : "Query ");
      querySelect = html("select", { id: "query" }, queryLabel);
      fillQueries();
      querySelect.addEventListener("change", function () { S.query = +querySelect.value; draw(); });
    }
    if (D.steps && querySelect) {  // and its first key
      keyLabel = html("label", {}, controls, "Keys from ");
      keySelect = html("select", { id: "key" }, keyLabel);
      K.forEach(function (_, j) { html("option", { value: j }, keySelect, j + " " + tokName("k", j)); });
      keySelect.addEventListener("change", function () { S.key = +keySelect.value; draw(); });
    }
    if (written()) {  // --generate: step through the tokens the model wrote, and back to the whole sequence
      var wf = (writtenSet = html("fieldset", { "class": "heads written", id: "written" }, controls));
      html("legend", { style: "float:left;margin-right:6px" }, wf, "Written");
      [["prev", "‹ previous (p)", -1], ["next", "next (n) ›", 1]].forEach(function (b) {
        html("button", { type: "button", id: "step-" + b[0], title: "key " + b[0].charAt(0) }, wf, b[1])
          .addEventListener("click", function () { stepWritten(b[2]); });
      });
      stepLabel = html("span", { id: "step", "class": "step-label", "aria-live": "polite" }, wf, stepText());
      html("button", { type: "button", id: "step-whole", title: "key w" }, wf, "whole sequence (w)")
        .addEventListener("click", wholeSequence);
      wf.addEventListener("keydown", function (e) {  // ← → on the control's buttons step as p and n do
        var by = { ArrowLeft: -1, ArrowRight: 1 }[e.key];
        if (by) { stepWritten(by); e.preventDefault(); }
      });
    }
    blockSet = html("span", { id: "block-set" }, controls);
    fillBlock();
    zoomLabel = html("label", {}, controls, "Zoom ");  // the matrix view's
    var zoomSelect = html("select", { id: "zoom" }, zoomLabel);
    ZOOMS.forEach(function (z) { html("option", { value: z[0] }, zoomSelect, z[1]); });
    zoomSelect.addEventListener("change", function () { S.zoom = zoomSelect.value; draw(); });
    /*{colour*/
    var scaleLabel = html("label", {}, controls, "Colour ");  // every view's shades
    scaleSelect = html("select", { id: "scale" }, scaleLabel);
    Object.keys(SCALES).forEach(function (k) { html("option", { value: k }, scaleSelect, SCALES[k].words); });
    scaleSelect.addEventListener("change", function () { S.scale = scaleSelect.value; draw(); });
    if (D.sinkless) {
      var sinkLabel = html("label", { title: "the weights without key 0 (the first token, a sink), each row renormalized" }, controls);
      sinkBox = html("input", { type: "checkbox", id: "drop-sink" }, sinkLabel);
      sinkLabel.appendChild(document.createTextNode(" drop the sink (key 0)"));
      sinkBox.addEventListener("change", function () { useSink(sinkBox.checked); draw(); });
    }
    /*colour}*/
    var save = html("button", { id: "save-svg", type: "button" }, controls, "Download SVG");
    save.addEventListener("click", downloadSvg);
    // the view, its cue and its readout in one box: the readout sticks to the window's bottom only over the view,
    // never over the tabs and controls above it (on a phone they would be under it, out of reach)
    var box = html("div", { "class": "view-box" }, root);
    wide = html("p", { id: "wide", "class": "help wide-note", hidden: "" }, box,
      "→ this view is wider than the window: scroll sideways (the bar under it, or Shift + wheel)");
    stage = html("main", { id: "stage", "class": "stage" }, box);
    readout = html("p", { id: "readout", "class": "readout", "aria-live": "polite" }, box);
    html("p", { "class": "help" }, root,
      "Keys: 1–" + VIEWS.length + " views · [ ] layer · , . head · a mean of the heads" + (D.parts ? " · c attention (part)" : "") +
      (written() ? " · n p (or ← → on the Written buttons) step through the written tokens · w the whole sequence" : "") +
      " · Tab to a token, thumbnail or matrix, then arrows · Enter pins · Esc clears");
    document.addEventListener("keydown", pageKey);
    var resized = null;
    window.addEventListener("resize", function () { clearTimeout(resized); resized = setTimeout(draw, 150); });
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", draw);
    window.addEventListener("beforeprint", function () { root.classList.add("print"); draw(); });
    window.addEventListener("afterprint", function () { root.classList.remove("print"); draw(); });
  }
  function typing(t) {  // a control that takes text: its keys are its own (a checkbox, a select or a button's are not)
    return t.isContentEditable || t.tagName === "TEXTAREA" ||
      (t.tagName === "INPUT" && ["checkbox", "radio", "button", "submit", "reset", "range", "color"].indexOf(t.type) < 0);
  }
  function pageKey(e) {  // the page's keys act whatever control was used last; Tab and the arrows keep their own
    if (!ready || typing(e.target) || e.ctrlKey || e.metaKey || e.altKey) return;
    var n = parseInt(e.key, 10), done = true;
    if (n >= 1 && n <= VIEWS.length) setView(VIEWS[n - 1][0]);
    else if (e.key === "[" || e.key === "]") { S.layer = step(D.layers.length, S.layer, e.key === "]" ? 1 : -1); draw(); }
    else if (e.key === "," || e.key === ".") { S.heads = [step(layerOf().heads.length, S.heads[0], e.key === "." ? 1 : -1)]; S.mean = false; draw(); }
    else if (e.key === "a") { S.mean = !S.mean; draw(); }
    else if (e.key === "c" && D.parts) { var names = Object.keys(D.parts); setPart(names[(names.indexOf(S.part) + 1) % names.length]); }
    else if ((e.key === "n" || e.key === "p") && written()) stepWritten(e.key === "n" ? 1 : -1);
    else if (e.key === "w" && written()) wholeSequence();
    else if (e.key === "Escape") draw();
    else done = false;
    if (done && e.target.tagName === "SELECT" && e.key !== "Escape") e.preventDefault();  // not its type-ahead too
  }
  function downloadSvg() {
    var svg = stage.querySelector("svg").cloneNode(true);
    svg.classList.remove("focused");
    var text = '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(svg);
    var url = URL.createObjectURL(new Blob([text], { type: "image/svg+xml" }));
    var a = html("a", { href: url, download: "attn-" + S.view + ".svg" }, root);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  build();
  decodeAll().then(function () {
    ready = true;
    /*{colour*/
    useSink(D.colour.drop_sink);
    /*colour}*/
    draw();
    performance.mark("attn-drawn");  // the first view drawn, on the browser's own clock (benchmarks/view_page.py)
    root.dataset.ready = "true";  // drawn: what a test (or a reader's script) can wait for
  });
})(document.currentScript);

"""The report page's inline style and script. The script renders the transcript browser from the
page's JSON a page of rows at a time (in the folder layout, loading the transcript files that page
needs); every piece of run text goes in with ``textContent``."""

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1400px;padding:0 16px 40px;color:#222}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}h3{font-size:15px}
.runs{display:flex;flex-wrap:wrap;gap:24px}.run{flex:1 1 560px;min-width:0}
.fig svg{max-width:100%;height:auto}
table{border-collapse:collapse;font-size:12px;margin:6px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f6f6f6;padding:8px;overflow:auto;max-height:320px;font-size:12px}
.note{color:#666;font-size:13px}.how{background:#f4f8fb;border-left:3px solid #8ab;padding:4px 10px;font-size:13px}
#tb-controls{display:flex;flex-wrap:wrap;gap:10px;align-items:center;margin:8px 0}
.tb-row{border:1px solid #ddd;border-radius:4px;margin:8px 0;padding:6px 10px}
.tb-head{font-weight:600}.tb-q{margin:4px 0}.tb-case{border-top:1px dashed #ddd;margin-top:6px;padding-top:4px}
.tb-turn{margin:3px 0 3px 12px;white-space:pre-wrap}.tb-speaker{color:#246;font-weight:600;margin-right:6px}
.r{color:#1a7f37}.w{color:#c62828}.t{color:#9a6700}.u{color:#777}
.q-ok{background:#e6f4ea}.q-bad{background:#fde8e8}.q-none{background:#eee}
.tb-quote{display:inline-block;margin:2px 6px 2px 12px;padding:0 4px;font-size:12px}
"""  # noqa: E501

JS = r"""
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("browser-data").textContent);
  var PAGE = 20;
  var state = {page: 0, hits: null};
  var hay = null;
  // The folder layout (D.split): D.rows is "cell, question, flags" per row; the rows themselves and
  // the questions are in script files beside the page, added as script elements when a page of rows
  // needs them (fetch() of local files is refused from file://).
  var SPLIT = !!D.split, N = SPLIT ? D.rows.length / 3 : D.rows.length;
  var chunks = {}, waiting = {}, rank = null;
  window.seerbenchChunk = function (name, items) {
    chunks[name] = items;
    (waiting[name] || []).forEach(function (f) { f(); });
    delete waiting[name];
  };
  function load(names, done) {
    var left = names.filter(function (n) { return !(n in chunks); });
    var n = left.length;
    if (!n) { done(); return; }
    left.forEach(function (name) {
      var first = !(name in waiting);
      (waiting[name] = waiting[name] || []).push(function () { if (--n === 0) done(); });
      if (!first) return;
      var s = document.createElement("script");
      s.src = D.split + "/" + name + ".js";
      s.onerror = function () { status.textContent = "cannot load " + s.src + ": keep the page beside its " + D.split + " folder"; };
      document.head.appendChild(s);
    });
  }
  function cellOf(i) { return SPLIT ? D.rows[3 * i] : D.rows[i][0]; }
  function qOf(i) { return SPLIT ? D.rows[3 * i + 1] : D.rows[i][1]; }
  if (SPLIT) {
    rank = new Int32Array(N);
    var seen = new Int32Array(D.cells.length);
    for (var k = 0; k < N; k++) rank[k] = seen[cellOf(k)]++;
  }
  function rowChunk(i) { return "c" + cellOf(i) + "-" + Math.floor(rank[i] / D.chunk_rows); }
  function qChunk(q) { return "q" + Math.floor(q / D.chunk_questions); }
  function row(i) { return SPLIT ? chunks[rowChunk(i)][rank[i] % D.chunk_rows] : D.rows[i]; }
  function question(q) { return SPLIT ? chunks[qChunk(q)][q % D.chunk_questions] : D.questions[q]; }
  function needs(list) {
    var names = {};
    list.forEach(function (i) { names[rowChunk(i)] = 1; names[qChunk(qOf(i))] = 1; });
    return Object.keys(names);
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  // seerbench._format.num's rules: n/a when missing, no sign on a value that rounds to zero
  function fmt(x) {
    if (x === null || x === undefined) return "n/a";
    var s = Number(x).toFixed(3);
    return Number(s) === 0 ? s.replace("-", "") : s;
  }
  var MARK = {r: "right", w: "wrong", t: "tie", u: "unscored"};
  function fill(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  function uniq(key) {
    var seen = {}; var out = [];
    D.cells.forEach(function (c) { var v = String(c[key]); if (!seen[v]) { seen[v] = 1; out.push(v); } });
    return out.sort();
  }
  var fRun = document.getElementById("tb-run"), fProt = document.getElementById("tb-protocol"),
      fJudge = document.getElementById("tb-judge"), fWrong = document.getElementById("tb-wrong"),
      fFail = document.getElementById("tb-failures"), fText = document.getElementById("tb-search"),
      list = document.getElementById("tb-rows"), status = document.getElementById("tb-status");
  fill(fRun, uniq("run")); fill(fProt, uniq("protocol")); fill(fJudge, uniq("judge"));
  if (uniq("run").length < 2) fRun.parentNode.style.display = "none";
  function text(i) {
    var r = row(i), q = question(r[1]), parts = [q[0], q[1], D.cells[r[0]].label];
    q[2].forEach(function (o) { parts.push(o[1]); });
    r[7].forEach(function (c) { if (c[4]) parts.push(c[4]); c[6].forEach(function (t) { parts.push(t[2]); }); });
    return parts.join("\n").toLowerCase();
  }
  // the same tests as row_flags in seerbench/report/_browser.py, which gives them in the folder layout
  function wrong(i) {
    if (SPLIT) return (D.rows[3 * i + 2] & 1) !== 0;
    return D.rows[i][7].some(function (c) { return c[5] === "w" || c[5] === "t"; });
  }
  function failed(i) {
    if (SPLIT) return (D.rows[3 * i + 2] & 2) !== 0;
    var r = D.rows[i];
    return r[3] > 0 || r[7].some(function (c) { return c[3] !== "ok"; });
  }
  function all() {
    var names = [], k;
    D.cells.forEach(function (c, ci) {
      var n = 0;
      for (k = 0; k < N; k++) if (cellOf(k) === ci) n++;
      for (k = 0; k * D.chunk_rows < n; k++) names.push("c" + ci + "-" + k);
    });
    for (k = 0; k * D.chunk_questions < D.n_questions; k++) names.push("q" + k);
    return names;
  }
  var generation = 0;
  function apply() {
    var needle = fText.value.trim().toLowerCase(), mine = ++generation;
    if (needle && hay === null) {
      if (SPLIT) {
        status.textContent = "loading every transcript for the search\u2026";
        load(all(), function () { if (mine === generation) { hay = []; for (var k = 0; k < N; k++) hay.push(text(k)); apply(); } });
        return;
      }
      hay = [];
      for (var k = 0; k < N; k++) hay.push(text(k));
    }
    var run = fRun.value, prot = fProt.value, judge = fJudge.value;
    var hits = [];
    for (var i = 0; i < N; i++) {
      var c = D.cells[cellOf(i)];
      if (run && c.run !== run) continue;
      if (prot && c.protocol !== prot) continue;
      if (judge && c.judge !== judge) continue;
      if (fWrong.checked && !wrong(i)) continue;
      if (fFail.checked && !failed(i)) continue;
      if (needle && hay[i].indexOf(needle) < 0) continue;
      hits.push(i);
    }
    state.hits = hits; state.page = 0; render();
  }
  function renderRow(r) {
    var c = D.cells[r[0]], q = question(r[1]);
    var box = el("div", "tb-row"); box.setAttribute("data-cell", c.cell); box.setAttribute("data-question", q[0]);
    var head = el("div", "tb-head");
    head.appendChild(el("span", null, q[0] + " \u00b7 " + (D.multi ? c.run + " \u00b7 " : "") + c.label + " \u00b7 accuracy " +
      fmt(r[4]) + " \u00b7 ASD(log) " + fmt(r[5]) + (r[2] ? " \u00b7 excluded" : "") +
      (r[3] ? " \u00b7 " + r[3] + " parse failure(s)" : "")));
    box.appendChild(head);
    box.appendChild(el("div", "tb-q", q[1]));
    var opts = el("div", "tb-opts");
    q[2].forEach(function (o) { opts.appendChild(el("span", o[2] ? "r" : null, o[0] + ") " + o[1] + (o[2] ? " (true)  " : "  "))); });
    box.appendChild(opts);
    // a symmetric line: one protocol run for every answer case (NaiveJudge; a debate, where both
    // sides argue in one run), each case carrying its verdict and the first its transcript: shown once
    var agent = c.agent && c.agent !== "null", cases = r[7];
    var once = r[8] === true && cases.length > 1;
    if (once) cases = cases.slice(0, 1);
    cases.forEach(function (cs) {
      var div = el("div", "tb-case");
      var truth = q[2].filter(function (o) { return o[0] === cs[0]; })[0];
      var who = once ? (agent ? "one run, both sides argued" : "verdict") + " (one judge run, for every answer case)"
                : agent ? "agent argues " + cs[0] + (truth ? " (" + truth[1] + (truth[2] ? ", true)" : ", false)") : "")
                : "verdict";
      div.appendChild(el("span", null, who + " \u00b7 judge " + cs[1] + ": "));
      var probs = cs[2] ? Object.keys(cs[2]).sort().map(function (k) { return "P(" + k + ")=" + fmt(cs[2][k]); }).join(", ") : "no probabilities";
      div.appendChild(el("span", "tb-probs", probs + " "));
      if (cs[7]) {
        var views = ["as asked", "swapped"].map(function (name, k) {
          var p = cs[7][k];
          return name + " " + (p ? Object.keys(p).sort().map(function (o) { return o + " " + fmt(p[o]); }).join(", ") : "n/a");
        });
        div.appendChild(el("span", "tb-orders note", "(both orders, mean of: " + views.join("; ") + ") "));
      }
      div.appendChild(el("span", "tb-mark " + cs[5], MARK[cs[5]]));
      if (cs[3] !== "ok") div.appendChild(el("span", "w", "  parse: " + cs[3] + (cs[4] ? " \u2014 " + cs[4] : "")));
      cs[6].forEach(function (t) {
        var turn = el("div", "tb-turn");
        turn.appendChild(el("span", "tb-speaker", t[0] + (t[1] ? " (" + t[1] + ")" : "") + ":"));
        turn.appendChild(el("span", "tb-text", t[2]));
        t[3].forEach(function (qt) {
          var k = qt[1] === true ? "q-ok" : qt[1] === false ? "q-bad" : "q-none";
          var tag = qt[1] === true ? "verified" : qt[1] === false ? "unverified" : "unchecked";
          var s = el("span", "tb-quote " + k, "\u201c" + qt[0] + "\u201d " + tag);
          turn.appendChild(s);
        });
        div.appendChild(turn);
      });
      box.appendChild(div);
    });
    return box;
  }
  function render() {
    var hits = state.hits, n = hits.length, start = state.page * PAGE, end = Math.min(n, start + PAGE);
    var shown = hits.slice(start, end), mine = ++generation;
    function draw() {
      if (mine !== generation) return;  // a later filter or page is on its way
      list.textContent = "";
      shown.forEach(function (i) { list.appendChild(renderRow(row(i))); });
      status.textContent = n ? "rows " + (start + 1) + "\u2013" + end + " of " + n + " (of " + N + ")" : "no rows match (of " + N + ")";
    }
    document.getElementById("tb-prev").disabled = state.page === 0;
    document.getElementById("tb-next").disabled = end >= n;
    if (SPLIT) { status.textContent = "loading\u2026"; load(needs(shown), draw); } else draw();
  }
  [fRun, fProt, fJudge, fWrong, fFail].forEach(function (f) { f.addEventListener("change", apply); });
  var timer = null;
  fText.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(apply, 150); });
  document.getElementById("tb-prev").addEventListener("click", function () { state.page--; render(); });
  document.getElementById("tb-next").addEventListener("click", function () { state.page++; render(); });
  apply();
})();
"""  # noqa: E501

package timeline

import "html/template"

// page is the whole timeline page: style, markup and script inline, so the
// file opens from disk with no network.
var page = template.Must(template.New("timeline").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font: 13px/1.35 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1c2833; background: #fbfcfc; }
header { padding: 10px 16px 6px; border-bottom: 1px solid #d5d8dc; background: #fff; }
h1 { font-size: 17px; margin: 0 0 4px; }
code, pre { font: 12px/1.35 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.summary { font-weight: 600; }
.verdict-pass { color: #1e8449; } .verdict-fail { color: #b03a2e; }
#controls { margin: 6px 0 2px; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
button { font: inherit; padding: 2px 8px; border: 1px solid #aab7b8; border-radius: 3px; background: #f4f6f6; cursor: pointer; }
button.failure { border-color: #c0392b; color: #922b21; background: #fdedec; }
#window { color: #566573; }
#failures { margin: 4px 0; padding-left: 20px; color: #922b21; }
#failures li { margin: 1px 0; }
#chart { display: flex; position: relative; border-bottom: 1px solid #d5d8dc; }
#labels { flex: 0 0 170px; background: #f4f6f6; border-right: 1px solid #d5d8dc; }
#plot { flex: 1 1 auto; position: relative; overflow: hidden; min-width: 300px; }
#axis { height: 22px; position: relative; border-bottom: 1px solid #d5d8dc; background: #fff; }
.tick-label { position: absolute; top: 3px; font-size: 11px; color: #566573; white-space: nowrap; transform: translateX(-50%); }
.lane { position: relative; border-bottom: 1px solid #e5e8e8; }
.lane.endpoint { background: #fff; } .lane.region { background: #fbfcfc; }
.label { box-sizing: border-box; padding: 3px 6px; border-bottom: 1px solid #e5e8e8; overflow: hidden; white-space: nowrap; text-overflow: ellipsis; }
.label.endpoint { font-weight: 600; } .label.region { padding-left: 18px; color: #566573; }
.el { position: absolute; box-sizing: border-box; cursor: pointer; }
.call { height: 12px; border-radius: 2px; border: 1px solid rgba(0,0,0,.25); overflow: hidden; font-size: 9px; line-height: 10px; color: #17202a; white-space: nowrap; }
.call.FETCH { background: #aed6f1; } .call.PUBLISH { background: #abebc6; }
.call.UNPROVABLE { background: repeating-linear-gradient(45deg, #f5cba7, #f5cba7 4px, #fdebd0 4px, #fdebd0 8px); }
.call.open { border-right: 2px dashed #7b241c; }
.span { height: 10px; background: #d6dbdf; border: 1px solid #aab7b8; border-radius: 2px; font-size: 9px; line-height: 8px; overflow: hidden; white-space: nowrap; }
.tick { width: 3px; height: 12px; }
.tick.row { width: 2px; height: 12px; background: #1c2833; }
.tick.faults { background: #c0392b; } .tick.callbacks { background: #2e86c1; } .tick.access { background: #1e8449; }
.tick.cancels { background: #e67e22; } .tick.regions { background: #5d6d7e; width: 4px; } .tick.shutdown { background: #6c3483; width: 4px; }
.tick.store { background: #d4ac0d; } .tick.lookups { background: #8e44ad; } .tick.submits { background: #a04000; }
.tick.attempts { background: #117a65; } .tick.lender { background: #212f3c; width: 4px; }
.fline { position: absolute; top: 0; width: 0; border-left: 2px solid #e74c3c; pointer-events: none; z-index: 3; }
.fmark { position: absolute; z-index: 4; background: #e74c3c; color: #fff; font-weight: 700; font-size: 11px; padding: 1px 5px; border-radius: 3px; white-space: nowrap; transform: translateX(-50%); }
.call.offending, .span.offending { outline: 2px solid #e74c3c; outline-offset: 1px; z-index: 2; }
.row-label { position: absolute; left: 2px; font-size: 9px; color: #7f8c8d; }
#detail { padding: 6px 16px; min-height: 2.6em; background: #fff; border-bottom: 1px solid #d5d8dc; white-space: pre-wrap; }
details { padding: 4px 16px; }
table { border-collapse: collapse; font-size: 12px; }
td, th { border: 1px solid #e5e8e8; padding: 1px 6px; text-align: left; vertical-align: top; }
#legend span { display: inline-block; margin-right: 10px; }
#legend i { display: inline-block; width: 10px; height: 10px; margin-right: 3px; vertical-align: middle; }
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
<div class="summary" id="summary">{{.Summary}}</div>
<div>repro: <code id="repro">{{.Repro}}</code></div>
<div id="lin">{{.Lin}}{{if .Porcupine}} — <a id="porcupine-link" href="{{.Porcupine}}">porcupine's linearization view</a>{{if .LinFailed}} (this run's S-LIN failure){{end}}{{else if .LinFailed}} — no porcupine view was written for this S-LIN failure{{end}}</div>
<nav id="controls"><button id="whole" type="button">whole run</button><span id="failure-buttons"></span><span id="window"></span></nav>
<details id="failure-list"><summary id="failure-count">no failures</summary><ol id="failures"></ol></details>
<div id="legend"><span><i style="background:#aed6f1"></i>fetch call (submit → access evidence)</span><span><i style="background:#abebc6"></i>publish call</span><span><i style="background:#f5cba7"></i>UNPROVABLE</span><span><i style="background:#1c2833"></i>row result</span><span><i style="background:#2e86c1"></i>callback</span><span><i style="background:#1e8449"></i>access</span><span><i style="background:#e67e22"></i>cancel</span><span><i style="background:#c0392b"></i>fault</span><span><i style="background:#5d6d7e"></i>registration</span><span><i style="background:#212f3c"></i>lender release</span><span><i style="background:#117a65"></i>attempt</span><span><i style="background:#e74c3c"></i>failure</span> — wheel: zoom; axis: event order (virtual time on hover)</div>
</header>
<div id="chart"><div id="labels"></div><div id="plot"><div id="axis"></div><div id="lanes"></div></div></div>
<div id="detail">Click an element for its details.</div>
<details><summary>ops of the log and what became of them</summary><table id="ops"><tr><th>op</th><th>at</th><th>line</th><th>attempt</th><th>outcome</th><th>access</th><th>skipped</th></tr></table></details>
<details open><summary>the text report</summary><pre id="report">{{.Report}}</pre></details>
<div id="storesim-status" data-failure-in-view="pending" data-rule="{{range $i, $r := .Rules}}{{if $i}} {{end}}{{$r}}{{end}}"></div>
<script>
"use strict";
const D = {{.Data}};
const ROW = 16, TOP = 4;
let v0 = D.first, v1 = D.last;
const plot = document.getElementById("plot"), lanesEl = document.getElementById("lanes"), axis = document.getElementById("axis");
const labels = document.getElementById("labels"), detail = document.getElementById("detail");
const summary = document.getElementById("summary");
summary.className += D.verdict === "pass" ? " verdict-pass" : " verdict-fail";

// Rows of every lane are packed anew for the window shown: only the calls
// and slots in view take a row, so a zoomed lane stays compact.
let laneRows = [], callRow = [], slotRow = {}, laneTop = [];
const callByLaneId = {};
D.calls.forEach((c, i) => { callByLaneId[c.lane + "/" + c.id] = i; });
function pack() {
  laneRows = D.lanes.map(() => 1);
  callRow = D.calls.map(() => -1);
  slotRow = {};
  const ends = D.lanes.map(() => []);
  const order = D.calls.map((c, i) => i).filter(i => visible(D.calls[i].start, D.calls[i].end)).sort((a, b) => D.calls[a].start - D.calls[b].start || a - b);
  for (const i of order) {
    const c = D.calls[i], rows = ends[c.lane];
    let r = rows.findIndex(e => e < c.start);
    if (r < 0) { r = rows.length; rows.push(0); }
    rows[r] = c.end;
    callRow[i] = r + 1;
    laneRows[c.lane] = Math.max(laneRows[c.lane], r + 2);
  }
  for (let l = 0; l < D.lanes.length; l++) {
    const slots = D.spans.filter(s => s.lane === l && visible(s.start, s.end)).map(s => s.slot).filter((v, i, a) => a.indexOf(v) === i).sort((a, b) => a - b);
    slots.forEach((slot, i) => { slotRow[l + "/" + slot] = i + 1; });
    laneRows[l] = Math.max(laneRows[l], slots.length + 1);
  }
  laneTop = [];
  let y = 0;
  for (let l = 0; l < D.lanes.length; l++) { laneTop.push(y); y += laneHeight(l); }
  labels.textContent = "";
  const head = document.createElement("div");
  head.className = "label"; head.style.height = "22px"; head.textContent = "lane";
  labels.appendChild(head);
  for (let l = 0; l < D.lanes.length; l++) {
    const ln = D.lanes[l], div = document.createElement("div");
    div.className = "label " + ln.kind;
    div.style.height = laneHeight(l) + "px";
    div.textContent = ln.kind === "endpoint" ? "endpoint " + ln.name : "region " + ln.name;
    if (ln.kind === "endpoint" && ln.setup.includes("faults injected")) div.textContent += " ⚡";
    div.title = (ln.kind === "endpoint" ? "calls and events of endpoint " + ln.name : "slots of region " + ln.name + " of endpoint " + ln.endpoint + ": rows placed on them, registrations, the lender's releases") + (ln.setup ? "\n" + ln.setup : "");
    div.addEventListener("click", () => show(div.title));
    labels.appendChild(div);
  }
}
const laneHeight = l => TOP + laneRows[l] * ROW + 2;

function width() { return Math.max(100, plot.clientWidth); }
function px(seq) { return (seq - v0) / (v1 - v0) * width(); }
function show(text) { detail.textContent = text; }
function el(cls, x, y, w, title, parent) {
  const d = document.createElement("div");
  d.className = "el " + cls;
  d.style.left = x + "px"; d.style.top = y + "px";
  if (w !== null) d.style.width = Math.max(2, w) + "px";
  d.title = title;
  d.addEventListener("click", ev => { ev.stopPropagation(); show(title); });
  parent.appendChild(d);
  return d;
}
function visible(a, b) { return b >= v0 && a <= v1; }

function render() {
  pack();
  lanesEl.textContent = ""; axis.textContent = "";
  const W = width();
  const laneDivs = D.lanes.map((ln, l) => {
    const d = document.createElement("div");
    d.className = "lane " + ln.kind; d.style.height = laneHeight(l) + "px";
    lanesEl.appendChild(d);
    return d;
  });
  // Axis: event order, with the virtual time of the nearest event.
  const n = 8;
  for (let i = 0; i <= n; i++) {
    const seq = Math.round(v0 + (v1 - v0) * i / n);
    const t = document.createElement("div");
    t.className = "tick-label"; t.style.left = (W * i / n) + "px";
    t.textContent = "#" + seq + " " + timeAt(seq);
    axis.appendChild(t);
  }
  D.calls.forEach((c, i) => {
    if (!visible(c.start, c.end)) return;
    const x0 = Math.max(0, px(c.start)), x1 = Math.min(W, px(c.end));
    let cls = "call " + c.dir + (c.access === "UNPROVABLE" ? " UNPROVABLE" : "") + (c.evidenced && c.access !== "PENDING" ? "" : " open");
    const rows = c.rows.map((r, k) => "  row " + k + " " + r.key + " @" + (r.region || "?") + "/" + r.slot + ": " + r.status + (r.seq ? " at #" + r.seq + " " + r.at : "")).join("\n");
    const title = "call " + c.id + " " + c.dir + " on endpoint " + D.lanes[c.lane].name + "\nsubmitted #" + c.start + " at " + c.startAt +
      "\naccess " + c.access + (c.evidenced ? " (evidence at #" + c.end + " " + c.endAt + ")" : " — no evidence by the end of the run") +
      (c.cancelled ? "\ncancelled" : "") + (c.labelled ? "\nshutdown label " + c.labelled : "") + "\n" + rows;
    const d = el(cls, x0, TOP + callRow[i] * ROW, x1 - x0, title, laneDivs[c.lane]);
    d.id = "call-" + i;
    d.textContent = "call " + c.id;
    c.rows.forEach((r, k) => {
      if (r.seq && visible(r.seq, r.seq)) el("tick row", px(r.seq) - 1, TOP + callRow[i] * ROW, null, "call " + c.id + " row " + k + " " + r.key + ": " + r.status + " at #" + r.seq + " " + r.at, laneDivs[c.lane]);
    });
  });
  D.spans.forEach(s => {
    if (!visible(s.start, s.end)) return;
    const x0 = Math.max(0, px(s.start)), x1 = Math.min(W, px(s.end)), c = D.calls[s.call];
    const d = el("span", x0, TOP + slotRow[s.lane + "/" + s.slot] * ROW, x1 - x0,
      "slot " + s.slot + " of region " + D.lanes[s.lane].name + ": call " + c.id + " row " + s.row + " (" + c.dir + " " + s.key + ") from #" + s.start + " " + c.startAt + " to " + (c.evidenced ? "its access evidence #" + s.end + " " + c.endAt : "the end of the run (no evidence)"), laneDivs[s.lane]);
    d.dataset.call = s.call;
    d.textContent = "s" + s.slot + " c" + c.id;
  });
  D.events.forEach(e => {
    if (!visible(e.seq, e.seq)) return;
    let row = 0;
    const ci = callByLaneId[e.lane + "/" + e.call];
    if (e.call && ci !== undefined && D.lanes[e.lane].kind === "endpoint") row = callRow[ci];
    el("tick " + e.tag, px(e.seq) - 1, TOP + row * ROW, null, "#" + e.seq + " " + e.at + " " + e.tag + (e.call ? " call " + e.call : "") + (e.key ? " key " + e.key : "") + ": " + e.text, laneDivs[e.lane]);
  });
  const total = laneTop.length ? laneTop[laneTop.length - 1] + laneHeight(laneTop.length - 1) : 0;
  D.failures.forEach((f, i) => {
    if (f.call >= 0) {
      const b = document.getElementById("call-" + f.call);
      if (b) b.classList.add("offending");
      document.querySelectorAll('.span[data-call="' + f.call + '"]').forEach(s => s.classList.add("offending"));
    }
    if (!visible(f.seq, f.seq)) return;
    const x = px(f.seq);
    const line = document.createElement("div");
    line.className = "fline"; line.style.left = x + "px"; line.style.height = total + "px";
    lanesEl.appendChild(line);
    f.lanes.forEach((l, k) => {
      const m = el("fmark", x, 0, null, "failure " + (i + 1) + ": " + f.text, laneDivs[l]);
      m.textContent = "⚠ " + f.rule;
      if (k === 0) { m.id = "failure-marker-" + i; }
      m.style.zIndex = String(5 + D.failures.length - i); // the first failure on top
    });
  });
  document.getElementById("window").textContent = "showing events #" + Math.round(v0) + "–#" + Math.round(v1) + " of " + D.last + " (" + timeAt(v0) + " – " + timeAt(v1) + ")";
}

// timeAt is the virtual time of the last event at or before seq.
const seqTimes = [];
for (const e of D.events) seqTimes.push([e.seq, e.at]);
for (const c of D.calls) seqTimes.push([c.start, c.startAt]);
seqTimes.sort((a, b) => a[0] - b[0]);
function timeAt(seq) {
  let lo = 0, hi = seqTimes.length - 1, best = seqTimes.length ? seqTimes[0][1] : "0s";
  while (lo <= hi) { const m = (lo + hi) >> 1; if (seqTimes[m][0] <= seq) { best = seqTimes[m][1]; lo = m + 1; } else hi = m - 1; }
  return best;
}

function zoom(a, b) { v0 = Math.max(D.first, Math.min(a, b - 2)); v1 = Math.min(D.last, Math.max(b, v0 + 2)); render(); }
function jump(i) {
  const f = D.failures[i];
  zoom(f.from, f.to);
  const m = document.getElementById("failure-marker-" + i);
  if (m) m.scrollIntoView({block: "nearest", inline: "nearest"});
  show("failure " + (i + 1) + ": " + f.text);
  return m;
}
document.getElementById("whole").addEventListener("click", () => zoom(D.first, D.last));
plot.addEventListener("wheel", ev => {
  ev.preventDefault();
  const r = plot.getBoundingClientRect(), at = v0 + (ev.clientX - r.left) / r.width * (v1 - v0);
  const k = ev.deltaY > 0 ? 1.25 : 0.8;
  zoom(at - (at - v0) * k, at + (v1 - at) * k);
}, {passive: false});
const fb = document.getElementById("failure-buttons"), fl = document.getElementById("failures");
if (D.failures.length) document.getElementById("failure-count").textContent = D.failures.length + " failure(s), in the order of the report; the first is marked on the lanes: " + D.failures[0].text;
D.failures.forEach((f, i) => {
  if (i < 8) {
    const b = document.createElement("button");
    b.type = "button"; b.className = "failure"; b.id = "jump-" + i;
    b.textContent = "jump to failure " + (i + 1) + ": " + f.rule;
    b.addEventListener("click", () => jump(i));
    fb.appendChild(b);
  }
  const li = document.createElement("li");
  li.textContent = f.text;
  fl.appendChild(li);
});
const ops = document.getElementById("ops");
for (const o of D.ops) {
  const tr = document.createElement("tr");
  for (const v of [o.index, o.at, o.line, o.attempt || "", o.outcome, o.access, o.skipped]) { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); }
  ops.appendChild(tr);
}
const status = document.getElementById("storesim-status");
function report() {
  if (!D.failures.length) { render(); status.dataset.failureInView = "none"; status.textContent = "no failure: the whole run is shown"; return; }
  const m = jump(0);
  const r = m ? m.getBoundingClientRect() : null;
  const inView = !!r && r.width > 0 && r.left >= 0 && r.right <= window.innerWidth && r.top >= 0 && r.bottom <= window.innerHeight;
  status.dataset.failureInView = String(inView);
  status.dataset.window = Math.round(v0) + ".." + Math.round(v1);
  status.dataset.first = D.failures[0].rule;
  if (r) status.dataset.markerRect = Math.round(r.left) + "," + Math.round(r.top) + " in " + window.innerWidth + "x" + window.innerHeight + " scrolled " + Math.round(window.scrollX) + "," + Math.round(window.scrollY);
  status.textContent = "failure 1 (" + D.failures[0].rule + ") " + (inView ? "in view" : "NOT in view") + " at #" + D.failures[0].seq + ", window #" + Math.round(v0) + "–#" + Math.round(v1);
}
window.addEventListener("resize", render);
report();
</script>
</body>
</html>
`))

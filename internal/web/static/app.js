// er analyzer: the page. Every view asks the server (or, in a static report, window.ER_STATIC) for
// its data as JSON and draws it; names are always set as text, never parsed as HTML.
"use strict";

const STATIC = window.ER_STATIC || null;
const VIEW_TITLES = {
  overview: "Overview", processes: "Processes", functions: "Functions", callers: "Callers-Callees", calltree: "Call Tree",
  flame: "Flame Graph", source: "Source", disasm: "Disassembly", timeline: "Timeline", threads: "Threads",
  cpus: "CPUs", samples: "Samples", objects: "Load Objects", heap: "Heap", sync: "Synchronization", dataspace: "Data Space",
  io: "I/O", openmp: "OpenMP", compare: "Compare",
};
const TL_WIDTH_STATIC = 1200;

const state = {
  view: "functions",
  f: -1,            // the selected function
  gen: 0,           // bumped when the filter or metrics change: every view is stale
  rendered: {},     // view -> key of what it shows
  overview: null,
  funcSort: "",
  funcQuery: "",
  flameRoot: 0,
  flameInvert: false,
  tl: { t0: 0, t1: 0, sel: null, data: null },
  expr: "",         // the filter expression now set (a process selected in Processes sets one)
  range: null,      // the time range now set, [t0, t1] ns
  metricSpec: "",   // the metrics set with the Metrics box ("": the default)
  viewmode: "",     // the view mode set with the View box ("": the server's, user)
  procTree: true,   // selecting a process keeps its descendants too
  procClosed: {},   // process id -> its subtree is collapsed
};

// ---------- helpers ----------

const $ = (sel, root) => (root || document).querySelector(sel);
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(k.nodeType ? k : document.createTextNode(String(k)));
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

let inflight = 0;
function busy(d) {
  inflight += d;
  document.body.dataset.busy = inflight > 0 ? "1" : "0";
}

// The server's token, from the page's URL (er analyzer prints it: http://127.0.0.1:PORT/?token=...):
// every request must carry it. CLIENT names this page to the server, which keeps its view (filter,
// metrics, sort) apart from other pages'; it lasts as long as the tab (sessionStorage).
const TOKEN = new URLSearchParams(location.search).get("token") || "";
let CLIENT = clientID(false);

function clientID(fresh) {
  const draw = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
  try {
    let id = fresh ? "" : sessionStorage.getItem("er-client");
    if (!id) { id = draw(); sessionStorage.setItem("er-client", id); }
    return id;
  } catch (e) {
    return draw();
  }
}

async function api(path, body, again) {
  if (STATIC) {
    if (body !== undefined) throw new Error("this is a static report: run er analyzer on the experiment to change filters or metrics");
    if (!(path in STATIC)) throw new Error("not in this static report: " + path + " (run er analyzer on the experiment for every view)");
    const v = STATIC[path];
    if (v && v.error) throw new Error(v.error);
    return v;
  }
  busy(1);
  try {
    const headers = { "X-Er-Token": TOKEN, "X-Er-Client": CLIENT };
    const opt = { headers };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      opt.method = "POST";
      opt.body = JSON.stringify(body);
    }
    const r = await fetch(path, opt);
    const j = await r.json();
    if (r.status === 409 && j.view === "gone" && !again) {
      // The server dropped this page's view (too many pages, or idle): start another, as it was.
      CLIENT = clientID(true);
      await restoreView();
      return api(path, body, true);
    }
    if (!r.ok) throw new Error(j.error || r.statusText);
    return j;
  } finally {
    busy(-1);
  }
}

// restoreView sets this page's metrics, filter and sort on a new view of the server.
async function restoreView() {
  if (state.metricSpec) await api("/api/metrics", { spec: state.metricSpec }, true);
  if (state.viewmode) await api("/api/viewmode", { mode: state.viewmode }, true);
  if (state.expr || state.range) await api("/api/filter", { expr: state.expr, range: state.range || [0, 0] }, true);
  if (state.funcSort) await api("/api/functions?limit=1&sort=" + encodeURIComponent(state.funcSort), undefined, true);
}

function message(text, isError) {
  const m = $("#message");
  m.textContent = text || "";
  m.className = isError ? "error" : "";
}

function secs(ns) {
  if (ns === 0) return "0.";
  return (ns / 1e9).toFixed(3);
}
function pct(p) {
  if (p < 0) return "";
  if (p === 0) return "0. %";
  return p.toFixed(2) + "%";
}
function fmtValue(col, c) {
  if (c.b) return "";
  if (col.kind === "text") return c.t || "";
  const parts = [];
  if (col.value) parts.push(col.kind === "time" ? secs(c.v) : col.kind === "ratio" ? (c.v / 1000).toFixed(3) : String(c.v));
  if (col.pct && c.p >= 0) parts.push(pct(c.p));
  return parts.join("  ");
}
function hueOf(name) {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 16777619); }
  return (h >>> 0);
}
function flameColor(name) {
  const h = hueOf(name);
  return `hsl(${10 + (h % 45)}, ${70 + (h >> 8) % 25}%, ${58 + (h >> 16) % 14}%)`;
}
// PALETTE colours the leaf functions with the most events, in order; the others get muted colours.
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6", "#d37295", "#a0cbe8"];
function tlColor(name) {
  const h = hueOf(name);
  return `hsl(${h % 360}, ${18 + (h >> 9) % 20}%, ${62 + (h >> 17) % 14}%)`;
}

// ---------- metric tables ----------

// metricTable draws a table of the server's table JSON. opts: sortable, onSort, onClick, onDblClick,
// rowClass(row) -> class, selected (function id), code (name column holds code).
function metricTable(t, opts) {
  opts = opts || {};
  const tbl = el("table", { class: "metrics" });
  const head = el("tr");
  if (t.rows.some((r) => r.flag)) head.append(el("th", { class: "left" }, ""));
  t.columns.forEach((c) => {
    const th = el("th", { "data-key": c.key, class: (c.left ? "left " : "") + (opts.sort === c.key ? "sorted" : ""), title: c.title + (c.unit ? " (" + c.unit + ")" : "") }, c.title);
    if (opts.onSort) th.addEventListener("click", () => opts.onSort(c.key));
    head.append(th);
  });
  if (t.nameTitle !== undefined) {
    const th = el("th", { class: "name" + (opts.sort === "name" ? " sorted" : ""), "data-key": "name" }, t.nameTitle || "Name");
    if (opts.onSort) th.addEventListener("click", () => opts.onSort("name"));
    head.append(th);
  }
  tbl.append(el("thead", null, head));
  const body = el("tbody");
  const hasFlag = t.rows.some((r) => r.flag);
  let section = "";
  for (const r of t.rows) {
    if (opts.sections && r.section && r.section !== section) {
      section = r.section;
      body.append(el("tr", { class: "section" }, el("td", { colspan: t.columns.length + 1 + (hasFlag ? 1 : 0) }, section)));
    }
    const cls = [opts.rowClass ? opts.rowClass(r) : ""];
    if (r.id === 0 && r.name === "<Total>") cls.push("total");
    if (opts.selected !== undefined && r.id === opts.selected && r.id >= 0) cls.push("selected");
    const tr = el("tr", { class: cls.join(" ").trim() || null, "data-id": r.id >= 0 ? r.id : null });
    if (hasFlag) tr.append(el("td", { class: "flag left" }, r.flag || ""));
    t.columns.forEach((c, j) => {
      const cell = r.cells[j] || { v: 0, p: -1 };
      const zero = c.kind !== "text" && !cell.b && cell.v === 0;
      const td = el("td", { "data-key": c.key, "data-value": c.kind === "text" ? null : (cell.b ? null : cell.v), class: (c.left ? "left" : "") + (zero ? " zero" : "") || null });
      if (c.kind !== "text" && c.pct && !cell.b && cell.p >= 0 && opts.bars && j === 0) {
        td.append(el("span", { class: "bar", style: "width:" + Math.round(Math.min(100, cell.p) * 0.5) + "px" }));
      }
      td.append(document.createTextNode(fmtValue(c, cell)));
      tr.append(td);
    });
    if (t.nameTitle !== undefined) tr.append(el("td", { class: opts.code ? "code" : "name" }, r.name));
    if (opts.decorate) opts.decorate(tr, r);
    if (r.id >= 0 && opts.onClick) tr.addEventListener("click", () => opts.onClick(r, tr));
    if (r.id >= 0 && opts.onDblClick) tr.addEventListener("dblclick", () => opts.onDblClick(r, tr));
    body.append(tr);
  }
  tbl.append(body);
  return tbl;
}

function errorBox(err) {
  return el("div", { class: "error-box" }, String(err.message || err));
}

// ---------- navigation ----------

function buildTabs(views) {
  const nav = $("#tabs");
  nav.textContent = "";
  for (const v of views) {
    nav.append(el("button", { type: "button", "data-view": v, onclick: () => show(v) }, VIEW_TITLES[v] || v));
  }
}

function writeHash() {
  const h = "#view=" + state.view + (state.f >= 0 ? "&f=" + state.f : "");
  if (location.hash !== h) history.replaceState(null, "", h);
}

function readHash() {
  const m = new URLSearchParams(location.hash.slice(1));
  if (m.get("view") && VIEW_TITLES[m.get("view")]) state.view = m.get("view");
  if (m.get("f") !== null && !isNaN(+m.get("f"))) state.f = +m.get("f");
}

function show(view) {
  state.view = view;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll("main > .view")) s.classList.toggle("active", s.id === "view-" + view);
  writeHash();
  load(view);
}

function select(f, name) {
  state.f = f;
  $("#sel-func").textContent = name || "";
  writeHash();
}

// viewKey says what a view shows now; a view is drawn again only when its key changes.
function viewKey(view) {
  const dep = { callers: 1, source: 1, disasm: 1 };
  return state.gen + (dep[view] ? ":" + state.f : "") + (view === "functions" ? ":" + state.funcSort + ":" + state.funcQuery : "") +
    (view === "flame" ? ":" + state.flameRoot + ":" + state.flameInvert : "") + (view === "timeline" ? ":" + state.tl.t0 + ":" + state.tl.t1 : "");
}

async function load(view, force) {
  const sec = $("#view-" + view);
  const key = viewKey(view);
  if (!force && state.rendered[view] === key) return;
  sec.dataset.ready = "0";
  try {
    await VIEWS[view](sec);
    state.rendered[view] = key;
    message("");
  } catch (err) {
    state.rendered[view] = key;
    const box = sec.querySelector(".view-error") || el("div", { class: "view-error" });
    box.textContent = "";
    box.append(errorBox(err));
    if (!box.parentNode) sec.prepend(box);
    message(String(err.message || err), true);
  }
  sec.dataset.ready = "1";
}

function clearError(sec) {
  const b = sec.querySelector(".view-error");
  if (b) b.remove();
}

function invalidate() {
  state.gen++;
  load(state.view, true);
}

function needFunction(sec) {
  if (state.f >= 0) return true;
  sec.textContent = "";
  sec.append(el("p", { class: "muted" }, "Select a function in the Functions view first."));
  return false;
}

// ---------- views ----------

const VIEWS = {};

VIEWS.overview = async (sec) => {
  const o = await api("/api/overview");
  state.overview = o;
  sec.textContent = "";
  sec.append(el("h2", null, "Experiments"));
  const cards = el("div", { class: "cards" });
  const card = (k, v, small) => cards.append(el("div", { class: "card" }, el("div", { class: "k" }, k), el("div", { class: "v" + (small ? " small" : "") }, v)));
  card("Duration", secs(o.duration) + " s");
  card("Data", (o.kinds || []).join(", ") || "none");
  card("Events analysed", String(o.events));
  for (const m of o.metrics.slice(0, 4)) if (m.total) card(m.title, m.time ? secs(m.total) + " s" : String(m.total));
  sec.append(cards);
  // With a process tree the table lists the founders; the Processes view shows every process.
  const tree = o.processes > o.founders.length;
  const shown = tree ? o.founders.map((i) => o.experiments[i]) : o.experiments;
  const t = {
    columns: ["Experiment", "Command", "Host", "PID", "Threads", "Duration", ...(o.eventKinds || []), "End"].map((x, i, all) => ({ key: "c" + i, title: x, kind: "text", left: i < 3 || i === all.length - 1 })),
    rows: shown.map((e) => ({ id: -1, name: "", cells: [e.Name, e.Command, e.Host, String(e.Pid), String(e.Threads), secs(e.Duration) + " s", ...(e.Events || []).map(String), e.Exit].map((x) => ({ t: x, v: 0, p: -1 })) })),
  };
  sec.append(metricTable(t));
  if (tree) {
    sec.append(el("p", { class: "muted", id: "overview-desc" }, `and ${descText(o)} in ${o.experiments.length - o.founders.length} subexperiments: `,
      el("a", { href: "#view=processes", onclick: (ev) => { ev.preventDefault(); show("processes"); } }, "see Processes"), "."));
  }
  sec.append(el("h3", null, "Events over time"));
  const cv = el("canvas", { class: "hist", id: "overview-hist" });
  sec.append(cv);
  requestAnimationFrame(() => drawHistogram(cv, o.histogram));
  if (o.warnings && o.warnings.length) {
    sec.append(el("h3", null, "Warnings"));
    for (const w of o.warnings) sec.append(el("div", { class: "warn" }, w));
  }
};

function drawHistogram(cv, h) {
  const dpr = window.devicePixelRatio || 1;
  const W = cv.clientWidth || 800, H = cv.clientHeight || 160;
  cv.width = W * dpr; cv.height = H * dpr;
  const g = cv.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, W, H);
  const names = Object.keys(h.series || {});
  const colors = { clock: "#f5a623", heap: "#2f6fde", synchronization: "#c0392b", "I/O": "#27ae60", counter: "#8e44ad" };
  let maxv = 1;
  for (let b = 0; b < h.bins; b++) {
    let s = 0;
    for (const n of names) s += h.series[n][b];
    maxv = Math.max(maxv, s);
  }
  const bw = (W - 50) / h.bins;
  for (let b = 0; b < h.bins; b++) {
    let y = H - 18;
    for (const n of names) {
      const v = h.series[n][b];
      const hh = (v / maxv) * (H - 28);
      g.fillStyle = colors[n] || "#888";
      g.fillRect(45 + b * bw, y - hh, Math.max(1, bw - 0.5), hh);
      y -= hh;
    }
  }
  g.fillStyle = "#6b7385";
  g.font = "11px sans-serif";
  g.fillText(String(maxv), 4, 14);
  g.fillText("0", 4, H - 18);
  g.fillText("0 s", 45, H - 4);
  const end = secs(h.t1) + " s";
  g.fillText(end, W - 8 - g.measureText(end).width, H - 4);
  let x = 120;
  for (const n of names) {
    g.fillStyle = colors[n] || "#888";
    g.fillRect(x, H - 12, 10, 10);
    g.fillStyle = "#333";
    g.fillText(n + " events", x + 14, H - 3);
    x += g.measureText(n + " events").width + 34;
  }
}

VIEWS.functions = async (sec) => {
  let path = "/api/functions";
  if (!STATIC) {
    const q = new URLSearchParams();
    if (state.funcSort) q.set("sort", state.funcSort);
    if (state.funcQuery) q.set("q", state.funcQuery);
    if ([...q].length) path += "?" + q.toString();
  }
  let t = await api(path);
  if (STATIC) t = localSortSearch(t);
  clearError(sec);
  state.funcSort = t.sort || state.funcSort;
  const box = $("#func-table");
  box.textContent = "";
  const shownN = t.rows.length - 1;
  $("#func-count").textContent = `${shownN} of ${t.matched - 1} functions` + (state.funcQuery ? ` matching "${state.funcQuery}"` : "");
  box.append(metricTable(t, {
    sort: t.sort, bars: true, selected: state.f,
    onSort: (key) => { state.funcSort = key; load("functions"); },
    onClick: (r, tr) => {
      for (const x of box.querySelectorAll("tr.selected")) x.classList.remove("selected");
      tr.classList.add("selected");
      select(r.id, r.name);
    },
    onDblClick: (r) => { select(r.id, r.name); show("callers"); },
  }));
  if (state.f >= 0) {
    const r = t.rows.find((x) => x.id === state.f);
    if (r) $("#sel-func").textContent = r.name;
  }
};

// localSortSearch sorts and searches the function list of a static report in the page.
function localSortSearch(t) {
  t = { ...t, rows: t.rows.slice() };
  const total = t.rows.shift();
  let rows = t.rows;
  if (state.funcQuery) {
    let m;
    if (state.funcQuery.startsWith("/")) { const re = new RegExp(state.funcQuery.slice(1), "i"); m = (s) => re.test(s); }
    else { const q = state.funcQuery.toLowerCase(); m = (s) => s.toLowerCase().includes(q); }
    rows = rows.filter((r) => m(r.name));
  }
  const key = state.funcSort || t.sort;
  const j = t.columns.findIndex((c) => c.key === key);
  if (key === "name") rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  else if (j >= 0) rows.sort((a, b) => b.cells[j].v - a.cells[j].v || (a.name < b.name ? -1 : 1));
  t.rows = [total, ...rows];
  t.matched = t.rows.length;
  t.sort = key;
  return t;
}

VIEWS.callers = async (sec) => {
  if (!needFunction(sec)) return;
  const t = await api("/api/callers?f=" + state.f);
  sec.textContent = "";
  const center = t.rows.find((r) => r.section === "Stack Fragment");
  sec.append(el("h2", null, "Callers and callees of ", el("code", null, center ? center.name : "")));
  if (t.title) sec.append(el("div", { class: "muted" }, t.title.join(" ")));
  const cls = { Callers: "caller", "Stack Fragment": "center", Callees: "callee" };
  sec.append(el("div", { class: "scroll" }, metricTable(t, {
    sections: true,
    rowClass: (r) => cls[r.section] || "",
    onClick: (r) => { select(r.id, r.name); load("callers"); },
  })));
  if (center) $("#sel-func").textContent = center.name;
};

VIEWS.calltree = async (sec) => {
  const t = await api("/api/tree?node=0&hot=1");
  sec.textContent = "";
  sec.append(el("div", { class: "toolbar" }, el("span", { class: "muted" }, "Click ▸ to open a node; click a row to select its function. The hottest path is open.")));
  const tree = el("div", { class: "tree" });
  const cols = t.columns.map(() => "minmax(110px, max-content)").join(" ");
  tree.style.setProperty("--cols", cols);
  const head = el("div", { class: "head" });
  for (const c of t.columns) head.append(el("span", { "data-key": c.key, title: c.title }, c.title));
  head.append(el("span", { class: "name" }, "Name"));
  tree.append(head);
  const add = (r, after) => {
    r.depth = r.depth || 0; // the JSON leaves out zeros: the root's depth and node
    r.node = r.node || 0;
    const n = el("div", { class: "node", "data-node": r.node, "data-id": r.id, "data-depth": r.depth });
    t.columns.forEach((c, j) => n.append(el("span", { "data-key": c.key, "data-value": r.cells[j].v }, fmtValue(c, r.cells[j]))));
    const name = el("span", { class: "name" });
    name.append(document.createTextNode("  ".repeat(r.depth)));
    const tw = el("span", { class: "twisty" }, r.kids ? (r.open ? "▾" : "▸") : " ");
    name.append(tw, document.createTextNode(r.name));
    n.append(name);
    n.dataset.open = r.open ? "1" : "0";
    if (state.f === r.id) n.classList.add("selected");
    n.addEventListener("click", (ev) => {
      if (ev.target === tw) return;
      for (const x of tree.querySelectorAll(".node.selected")) x.classList.remove("selected");
      n.classList.add("selected");
      select(r.id, r.name);
    });
    if (r.kids) tw.addEventListener("click", () => toggle(n, r, tw));
    if (after) after.after(n); else tree.append(n);
    return n;
  };
  const toggle = async (n, r, tw) => {
    if (n.dataset.open === "1") {
      let x = n.nextElementSibling;
      while (x && +x.dataset.depth > r.depth) { const nx = x.nextElementSibling; x.remove(); x = nx; }
      n.dataset.open = "0";
      tw.textContent = "▸";
      return;
    }
    const sub = await api("/api/tree?node=" + r.node);
    let after = n;
    for (const k of sub.rows) after = add(k, after);
    n.dataset.open = "1";
    tw.textContent = "▾";
  };
  for (const r of t.rows) add(r);
  sec.append(el("div", { class: "scroll" }, tree));
};

VIEWS.flame = async (sec) => {
  const path = "/api/flame" + (state.flameRoot && !STATIC ? "?root=" + state.flameRoot : "");
  const d = await api(path);
  clearError(sec);
  state.flame = d;
  drawFlame();
};

function drawFlame() {
  const d = state.flame;
  const box = $("#flame-box");
  box.textContent = "";
  const crumbs = $("#flame-path");
  crumbs.textContent = "";
  for (const p of d.path || []) {
    crumbs.append(el("a", { onclick: () => { state.flameRoot = p.n; load("flame"); } }, p.name), " › ");
  }
  if (!d.nodes.length) { box.append(el("p", { class: "muted" }, "No data.")); return; }
  // In a static report every node is there: zoom by drawing the subtree of the chosen node.
  let nodes = d.nodes, rootIdx = 0;
  if (STATIC && state.flameRoot) {
    const i = nodes.findIndex((n) => n.n === state.flameRoot);
    if (i >= 0) rootIdx = i;
  }
  const W = Math.max(600, box.clientWidth - 4), RH = 18;
  const root = nodes[rootIdx];
  const x = new Float64Array(nodes.length), inSub = new Uint8Array(nodes.length);
  const next = new Float64Array(nodes.length);
  let maxDepth = 0;
  inSub[rootIdx] = 1;
  x[rootIdx] = 0;
  next[rootIdx] = 0;
  for (let i = rootIdx + 1; i < nodes.length; i++) {
    const n = nodes[i];
    if (n.p < 0 || !inSub[n.p]) continue;
    inSub[i] = 1;
    x[i] = x[n.p] + next[n.p];
    next[n.p] += n.v;
    next[i] = 0;
    maxDepth = Math.max(maxDepth, n.d - root.d);
  }
  const H = (maxDepth + 1) * RH + 4;
  const s = svg("svg", { id: "flame-svg", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const scale = W / Math.max(1, root.v);
  const q = ($("#flame-search").value || "").trim();
  let match = null;
  if (q) {
    try { match = q.startsWith("/") ? ((re) => (t) => re.test(t))(new RegExp(q.slice(1), "i")) : (t) => t.toLowerCase().includes(q.toLowerCase()); }
    catch (e) { match = null; }
  }
  let matched = 0;
  for (let i = rootIdx; i < nodes.length; i++) {
    if (!inSub[i]) continue;
    const n = nodes[i];
    const w = n.v * scale;
    if (w < 0.4) continue;
    const depth = n.d - root.d;
    const y = state.flameInvert ? H - (depth + 1) * RH : depth * RH;
    const name = d.names[n.f] || "?";
    const g = svg("g", { class: "frame", "data-id": n.f, "data-node": n.n });
    if (match && match(name)) { g.classList.add("match"); matched += n.v; }
    const r = svg("rect", { x: x[i] * scale, y: y, width: Math.max(0.5, w), height: RH - 1, fill: n.f === 0 ? "#b8c2d8" : flameColor(name), rx: 1.5 });
    const title = svg("title");
    title.textContent = `${name}\n${fmtMetric(d, n.v)} (${(100 * n.v / Math.max(1, d.total)).toFixed(2)}% of total), self ${fmtMetric(d, n.s)}`;
    g.append(title, r);
    if (w > 28) {
      const t = svg("text", { x: x[i] * scale + 3, y: y + RH - 5 });
      const maxChars = Math.floor((w - 6) / 6.6);
      t.textContent = name.length > maxChars ? name.slice(0, Math.max(0, maxChars - 1)) + "…" : name;
      g.append(t);
    }
    g.addEventListener("click", () => {
      if (n.f > 0) select(n.f, name);
      state.flameRoot = n.n;
      load("flame");
    });
    s.append(g);
  }
  box.append(s);
  $("#flame-info").textContent = `${d.metric}; ${nodes.length} boxes` + (match ? `; matches: ${(100 * matched / Math.max(1, root.v)).toFixed(1)}%` : "");
}

function fmtMetric(d, v) {
  return d.time ? secs(v) + " s" : String(v);
}

async function annotated(sec, kind) {
  if (!needFunction(sec)) return;
  const t = await api(`/api/${kind}?f=${state.f}`);
  sec.textContent = "";
  sec.append(el("h2", null, (kind === "source" ? "Source of " : "Disassembly of ") , el("code", null, $("#sel-func").textContent || "function " + state.f)));
  if (t.title) sec.append(el("div", { class: "muted" }, t.title.join(" ")));
  const tbl = metricTable(t, {
    code: true,
    rowClass: (r) => "line" + (r.flag && r.flag.trim() ? " hot" : "") + (r.cells.every((c) => c.b || c.v === 0) ? " nometric" : ""),
    decorate: (tr, r) => { if (r.line) tr.dataset.line = r.line; },
  });
  const wrap = el("div", { class: "scroll" }, tbl);
  sec.append(wrap);
  if (t.text) sec.append(el("pre", { class: "text" }, t.text));
  const hot = tbl.querySelector("tr.hot");
  if (hot) requestAnimationFrame(() => { wrap.scrollTop = Math.max(0, hot.offsetTop - 120); });
}
VIEWS.source = (sec) => annotated(sec, "source");
VIEWS.disasm = (sec) => annotated(sec, "disasm");

// ---------- processes ----------

// descText says how many processes the founders have below them: "84 descendant processes".
function descText(o) {
  const n = o.processes - o.founders.length;
  return n + (n === 1 ? " descendant process" : " descendant processes");
}

// shortExit is the first words of how a process ended ("exited", "replaced by exec").
function shortExit(s) {
  return (s || "").split(/[;:]/)[0];
}

VIEWS.processes = async (sec) => {
  const d = await api("/api/processes");
  sec.textContent = "";
  const procs = d.processes;
  sec.append(el("h2", null, `${procs.length} processes`, el("span", { class: "muted" }, ` (${d.founders} ${d.founders === 1 ? "founder" : "founders"}, ${d.subexperiments} experiments)`)));
  const tb = el("div", { class: "toolbar" });
  const withDesc = el("input", { type: "checkbox", id: "proc-desc", checked: state.procTree });
  withDesc.addEventListener("change", () => { state.procTree = withDesc.checked; });
  tb.append(el("label", null, withDesc, " selecting a process keeps its descendants"),
    el("button", { type: "button", id: "proc-all", disabled: !!STATIC, onclick: () => selectProcess(null) }, "All processes"),
    el("button", { type: "button", id: "proc-collapse", onclick: () => { for (const p of procs) if (p.children) state.procClosed[p.id] = true; refresh(); } }, "Collapse all"),
    el("button", { type: "button", id: "proc-expand", onclick: () => { state.procClosed = {}; refresh(); } }, "Expand all"),
    el("span", { class: "muted" }, STATIC ? "CPU of the whole run. A static report: selecting a process needs er analyzer." :
      "CPU of the whole run. Click a process to show only its events (and its descendants') in every view; ▸ opens it."));
  sec.append(tb);
  const cols = [["PID", "pid"], ["Lineage", "lineage"], ["Threads", "threads"], ["CPU (s)", "cpu"], ["with descendants", "cpuIncl"],
    ["User+Sys (s)", "proc"], ["with descendants", "procIncl"], ["Start (s)", "start"], ["End (s)", "end"], ["How it ended", "exit"]];
  const titles = {
    cpu: "Total CPU time of its clock samples, as every view counts it (the function list's <Total> with the process selected)",
    cpuIncl: "Total CPU time of its clock samples and its descendants'",
    proc: "User and System CPU time of the process (er print statistics: Process Times)", procIncl: "User and System CPU time of it and its descendants",
    start: "When it began, s since the founder's start", end: "When its experiment ended", lineage: "Its last image's lineage (experiment_list)",
  };
  const tbl = el("table", { class: "metrics procs", id: "proc-table" });
  const head = el("tr", null, el("th", { class: "name" }, "Process"));
  for (const [t, k] of cols) head.append(el("th", { "data-key": k, class: k === "lineage" || k === "exit" ? "left" : null, title: titles[k] || null }, t));
  tbl.append(el("thead", null, head));
  const body = el("tbody");
  const rows = [];
  for (const p of procs) {
    const tw = el("span", { class: "twisty" }, p.children ? "▾" : " ");
    const images = p.images.map((im) => `${im.lineage || "(founder)"} ${im.program}  (experiment ${im.exp})`).join("\n");
    const name = el("td", { class: "proc", title: p.command + "\n" + images }, "  ".repeat(p.depth), tw, el("span", { class: "prog" }, p.program));
    if (p.descendants) name.append(el("span", { class: "muted" }, `  +${p.descendants}`));
    const tr = el("tr", { "data-proc": p.id, "data-pid": p.pid, "data-depth": p.depth }, name);
    const cell = (k, text, v) => tr.append(el("td", { "data-key": k, "data-value": v, class: k === "lineage" || k === "exit" ? "left" : null }, text));
    cell("pid", String(p.pid), p.pid);
    cell("lineage", p.lineage || "(founder)");
    cell("threads", String(p.threads), p.threads);
    cell("cpu", secs(p.cpu), p.cpu);
    cell("cpuIncl", secs(p.cpuIncl), p.cpuIncl);
    cell("proc", secs(p.user + p.system), p.user + p.system);
    cell("procIncl", secs(p.userIncl + p.systemIncl), p.userIncl + p.systemIncl);
    cell("start", secs(p.start), p.start);
    cell("end", secs(p.end), p.end);
    const ex = el("td", { "data-key": "exit", class: "left", title: p.exit }, shortExit(p.exit));
    tr.append(ex);
    for (const td of tr.querySelectorAll("td[data-value]")) if (td.dataset.value === "0" && td.dataset.key !== "pid") td.classList.add("zero");
    tw.addEventListener("click", (ev) => {
      ev.stopPropagation();
      if (!p.children) return;
      state.procClosed[p.id] = !state.procClosed[p.id];
      refresh();
    });
    tr.addEventListener("click", () => selectProcess(p));
    rows.push(tr);
    body.append(tr);
  }
  tbl.append(body);
  sec.append(el("div", { class: "scroll" }, tbl));
  // refresh hides the rows under a collapsed process and marks the selected one.
  function refresh() {
    let hideUntil = -1;
    procs.forEach((p, i) => {
      const tr = rows[i];
      tr.classList.toggle("hidden", i <= hideUntil);
      if (i > hideUntil && state.procClosed[p.id]) hideUntil = i + p.descendants;
      tr.querySelector(".twisty").textContent = p.children ? (state.procClosed[p.id] ? "▸" : "▾") : " ";
      tr.classList.toggle("selected", !!state.expr && (state.expr === p.select || state.expr === p.selectTree));
    });
  }
  state.procRefresh = refresh;
  refresh();
};

// selectProcess filters every view to process p (with its descendants when asked), or shows every
// process again (null).
async function selectProcess(p) {
  if (STATIC) { message("This is a static report: run er analyzer on the experiment to select a process.", true); return; }
  const expr = p ? (state.procTree ? p.selectTree : p.select) : "";
  await setFilter({ expr: expr });
  state.rendered.processes = viewKey("processes");
  if (state.procRefresh) state.procRefresh();
  if (p) message(`Every view now shows process ${p.program} [${p.pid}]` + (state.procTree && p.descendants ? ` and its ${p.descendants} descendants` : "") + ` (filter ${expr}).`);
}

// ---------- timeline ----------

const TL = { label: 170, rowH: 22, axis: 24 };

VIEWS.timeline = async (sec) => {
  const o = state.overview || await api("/api/overview");
  state.overview = o;
  if (!state.tl.t1) { state.tl.t0 = 0; state.tl.t1 = o.duration; }
  const canvas = $("#timeline-canvas");
  const wrap = $("#timeline-wrap");
  const w = STATIC ? TL_WIDTH_STATIC : Math.max(200, Math.min(4000, Math.floor((wrap.clientWidth || 1000) - TL.label - 20)));
  const d = await api(`/api/timeline?t0=${state.tl.t0}&t1=${state.tl.t1}&w=${w}`);
  clearError(sec);
  state.tl.data = d;
  legend(d);
  drawTimeline();
  const f = o.filter && o.filter.range;
  if (state.tl.sel === null && f) state.tl.sel = f.slice();
  fillRange();
};

function fillRange() {
  const s = state.tl.sel;
  $("#range-start").value = s ? (s[0] / 1e9).toFixed(4) : "";
  $("#range-end").value = s ? (s[1] / 1e9).toFixed(4) : "";
}

// Thread states (analysis.State) in a timeline row's strip: on a CPU, then the off-CPU states that
// microstates record.
const STATES = [null,
  ["User CPU", "#3a9a5b"], ["System CPU", "#9bd08e"], ["Wait CPU", "#e8b339"], ["User Lock", "#d9534f"],
  ["Text Page Fault", "#8e5bd0"], ["Data Page Fault", "#b991e6"], ["Other Wait", "#a8adb8"]];

function legend(d) {
  const count = {};
  for (const r of d.rows) r.leaf.forEach((f, i) => { if (f >= 0) count[f] = (count[f] || 0) + r.count[i]; });
  const ranked = Object.keys(count).sort((a, b) => count[b] - count[a]);
  d.colors = {};
  ranked.forEach((f, i) => { d.colors[f] = i < PALETTE.length ? PALETTE[i] : tlColor(d.names[f]); });
  const top = ranked.slice(0, 14);
  const lg = $("#timeline-legend");
  lg.textContent = "";
  lg.append(el("div", { class: "muted" }, "Leaf functions (most events first)"));
  for (const f of top) {
    const i = el("i");
    i.style.background = d.colors[f];
    lg.append(el("div", null, i, d.names[f]));
  }
  // The thread-state strip's colors, where the rows have one.
  d.hasStates = d.rows.some((r) => r.state && r.state.some((x) => x > 0));
  if (d.hasStates) {
    const seen = new Set();
    for (const r of d.rows) if (r.state) for (const x of r.state) if (x > 0) seen.add(x);
    lg.append(el("div", { class: "muted" }, "Thread state (the strip under each row)"));
    for (let x = 1; x < STATES.length; x++) {
      if (!seen.has(x)) continue;
      const i = el("i");
      i.style.background = STATES[x][1];
      lg.append(el("div", { class: "tl-state" }, i, STATES[x][0]));
    }
  }
}

function drawTimeline() {
  const d = state.tl.data;
  if (!d) return;
  const canvas = $("#timeline-canvas");
  const dpr = window.devicePixelRatio || 1;
  const W = TL.label + d.w + 10, H = TL.axis + d.rows.length * TL.rowH + 6;
  canvas.width = W * dpr; canvas.height = H * dpr;
  canvas.style.width = W + "px"; canvas.style.height = H + "px";
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
  // time axis
  g.fillStyle = "#6b7385"; g.font = "11px sans-serif";
  const span = d.t1 - d.t0;
  const step = niceStep(span / 8);
  for (let t = Math.ceil(d.t0 / step) * step; t <= d.t1; t += step) {
    const x = TL.label + ((t - d.t0) / span) * d.w;
    g.fillRect(x, TL.axis - 6, 1, 6);
    g.fillText((t / 1e9).toFixed(step < 1e7 ? 3 : step < 1e8 ? 2 : 1) + " s", x + 2, TL.axis - 9);
  }
  g.fillStyle = "#e3e6ec"; g.fillRect(TL.label, TL.axis - 1, d.w, 1);
  d.rows.forEach((r, i) => {
    const y = TL.axis + i * TL.rowH;
    g.fillStyle = i % 2 ? "#fafbfd" : "#fff";
    g.fillRect(0, y, W, TL.rowH);
    g.fillStyle = "#1d2330"; g.font = "12px ui-monospace, monospace";
    g.fillText(fitLabel(g, r, TL.label - 10), 6, y + 15);
    let maxc = 1;
    for (const c of r.count) maxc = Math.max(maxc, c);
    const strip = d.hasStates ? 5 : 0; // the thread-state strip at the row's foot
    for (let b = 0; b < d.w; b++) {
      const f = r.leaf[b];
      if (f < 0) continue;
      g.globalAlpha = 0.35 + 0.65 * Math.min(1, r.count[b] / maxc);
      g.fillStyle = d.colors[f] || tlColor(d.names[f]);
      g.fillRect(TL.label + b, y + 3, 1, TL.rowH - 6 - strip);
    }
    g.globalAlpha = 1;
    if (strip && r.state) {
      for (let b = 0; b < d.w; b++) {
        const x = r.state[b];
        if (!(x > 0) || !STATES[x]) continue;
        g.fillStyle = STATES[x][1];
        g.fillRect(TL.label + b, y + TL.rowH - 3 - strip + 1, 1, strip - 1);
      }
    }
  });
  const s = state.tl.sel;
  if (s) {
    const x0 = TL.label + Math.max(0, (s[0] - d.t0) / span) * d.w, x1 = TL.label + Math.min(1, (s[1] - d.t0) / span) * d.w;
    if (x1 > x0) {
      g.fillStyle = "rgba(47,111,222,0.14)"; g.fillRect(x0, TL.axis, x1 - x0, H - TL.axis);
      g.fillStyle = "#2f6fde"; g.fillRect(x0, TL.axis, 1, H - TL.axis); g.fillRect(x1, TL.axis, 1, H - TL.axis);
    }
  }
}

// fitLabel is a timeline row's label ("cc1 [2633] T:1") within width px: a long program name is
// cut, its pid and thread kept.
function fitLabel(g, r, width) {
  if (g.measureText(r.label).width <= width || !r.program || !r.label.startsWith(r.program)) return r.label;
  const rest = r.label.slice(r.program.length);
  let prog = r.program;
  while (prog.length > 1 && g.measureText(prog + "…" + rest).width > width) prog = prog.slice(0, -1);
  return prog + "…" + rest;
}

function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(Math.max(1, x))));
  for (const m of [1, 2, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

function tlTime(ev) {
  const d = state.tl.data;
  const rect = $("#timeline-canvas").getBoundingClientRect();
  const x = ev.clientX - rect.left - TL.label;
  const y = ev.clientY - rect.top - TL.axis;
  const t = d.t0 + (Math.min(Math.max(x, 0), d.w) / d.w) * (d.t1 - d.t0);
  return { t: Math.round(t), row: Math.floor(y / TL.rowH), x };
}

function setupTimeline() {
  const canvas = $("#timeline-canvas");
  let drag = null, hoverTimer = null;
  canvas.addEventListener("mousedown", (ev) => {
    if (!state.tl.data) return;
    drag = tlTime(ev);
    ev.preventDefault();
  });
  window.addEventListener("mousemove", (ev) => {
    if (drag && state.tl.data) {
      const p = tlTime(ev);
      state.tl.sel = [Math.min(drag.t, p.t), Math.max(drag.t, p.t)];
      fillRange();
      drawTimeline();
    }
  });
  window.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    const p = tlTime(ev);
    const a = drag;
    drag = null;
    if (Math.abs(p.x - a.x) < 3) { stackAt(ev, true); return; }
    state.tl.sel = [Math.min(a.t, p.t), Math.max(a.t, p.t)];
    fillRange();
    drawTimeline();
    applyRange();
  });
  canvas.addEventListener("mousemove", (ev) => {
    if (drag) return;
    clearTimeout(hoverTimer);
    hoverTimer = setTimeout(() => stackAt(ev, false), 60);
  });
  $("#range-apply").addEventListener("click", () => {
    const a = parseFloat($("#range-start").value), b = parseFloat($("#range-end").value);
    if (!(b > a)) { message("The range needs a start before its end, in seconds.", true); return; }
    state.tl.sel = [Math.round(a * 1e9), Math.round(b * 1e9)];
    drawTimeline();
    applyRange();
  });
  $("#range-clear").addEventListener("click", async () => {
    state.tl.sel = null;
    fillRange();
    drawTimeline();
    await setFilter({ range: [0, 0] });
  });
  $("#tl-zoom").addEventListener("click", () => {
    if (!state.tl.sel) return;
    state.tl.t0 = state.tl.sel[0]; state.tl.t1 = state.tl.sel[1];
    load("timeline");
  });
  $("#tl-unzoom").addEventListener("click", () => {
    const o = state.overview;
    const c = (state.tl.t0 + state.tl.t1) / 2, half = state.tl.t1 - state.tl.t0;
    state.tl.t0 = Math.max(0, Math.round(c - half)); state.tl.t1 = Math.min(o.duration, Math.round(c + half));
    if (state.tl.t1 - state.tl.t0 >= o.duration) { state.tl.t0 = 0; state.tl.t1 = o.duration; }
    load("timeline");
  });
}

// staticEvent answers as /api/event would from the static report's table of the event nearest
// each pixel of the whole run's timeline; null when the report has none for this view.
function staticEvent(d, p) {
  const S = STATIC["timeline-events"];
  if (!S || S.t0 !== d.t0 || S.t1 !== d.t1 || !S.rows[p.row]) return null;
  const x = Math.min(S.w - 1, Math.max(0, Math.floor(((p.t - S.t0) / Math.max(1, S.t1 - S.t0)) * S.w)));
  const k = S.rows[p.row][x];
  if (k < 0) return { found: false };
  const e = S.events[k];
  return { found: true, time: e.time, dur: e.dur, kind: e.kind, row: d.rows[p.row].label, frames: S.stacks[e.stack] };
}

async function stackAt(ev, sticky) {
  const d = state.tl.data;
  if (!d) return;
  const p = tlTime(ev);
  if (p.row < 0 || p.row >= d.rows.length || p.x < 0) return;
  const tol = Math.max(1, Math.round(((d.t1 - d.t0) / d.w) * 2));
  const e = STATIC ? staticEvent(d, p) : await api(`/api/event?row=${p.row}&t=${p.t}&tol=${tol}`);
  if (!e) return;
  const box = $("#timeline-stack");
  box.textContent = "";
  if (!e.found) { box.append(el("span", { class: "muted" }, "No event here.")); return; }
  box.append(el("div", { class: "muted" }, `${e.row} (tid ${d.rows[p.row].tid}): ${e.kind} event at ${(e.time / 1e9).toFixed(6)} s` +
    (e.state ? ` (${e.state})` : "") + (e.dur ? `, lasted ${(e.dur / 1e6).toFixed(3)} ms` : "")));
  for (const fr of e.frames) {
    const a = el("div", null, fr.name);
    a.style.cursor = "pointer";
    a.addEventListener("click", () => select(fr.id, fr.name));
    box.append(a);
  }
}

async function applyRange() {
  const s = state.tl.sel;
  if (!s) return;
  await setFilter({ range: s });
}

async function setFilter(body) {
  try {
    const f = await api("/api/filter", body);
    showFilter(f);
    state.overview = null;
    state.gen++;
    // The timeline shows every event whatever the filter: once drawn, it stays (a filter set
    // before it was ever drawn must not mark it drawn).
    if (state.rendered.timeline !== undefined) state.rendered.timeline = viewKey("timeline");
    message("");
  } catch (err) {
    message(String(err.message || err), true);
  }
}

function showFilter(f) {
  state.expr = f.expr || "";
  state.range = f.range || null;
  $("#filter-text").textContent = f.text || "";
  if (document.activeElement !== $("#filter-expr")) $("#filter-expr").value = f.expr || "";
}

// ---------- tables of er print ----------

async function tables(sec, cmds, intro) {
  sec.textContent = "";
  if (intro) sec.append(el("p", { class: "muted" }, intro));
  for (const [cmd, title] of cmds) {
    const r = await api("/api/table?cmd=" + cmd);
    if (title) sec.append(el("h3", null, title));
    for (const t of r.tables) sec.append(metricTable(t, { sections: true }));
    if (r.text && r.text.trim()) sec.append(el("pre", { class: "text" }, r.text));
  }
}

VIEWS.threads = (sec) => tables(sec, [["thread_list", "Threads"]]);
VIEWS.cpus = (sec) => tables(sec, [["cpu_list", "CPUs"]]);
VIEWS.samples = (sec) => tables(sec, [["sample_list", "Samples"]]);
VIEWS.objects = (sec) => tables(sec, [["lobjects", "Load objects by metric"], ["objects", "Load objects and their files"]]);
VIEWS.dataspace = (sec) => tables(sec, [["data_objects", "Data objects (counters given with +)"], ["data_layout", "Data layout of struct types"]]);
VIEWS.heap = (sec) => tables(sec, [["heapstat", "Heap statistics"], ["leaks", "Leaks by call stack"], ["allocs", "Allocations by call stack"]]);
VIEWS.io = (sec) => tables(sec, [["iostat", "I/O statistics"], ["ioactivity", "I/O by file"]]);
VIEWS.openmp = (sec) => tables(sec, [["omp_preg", "OpenMP parallel regions"], ["omp_task", "OpenMP tasks"]], "Each parallel region and explicit task of the code with all its instances: the metrics of the events of its threads while they were in it (its work, its waits). The View box shows the stacks as the user, expert or machine mode has them.");
VIEWS.sync = (sec) => tables(sec, [["statistics", "Statistics"]], "Synchronization wait time per function is in the Functions view with the metrics i.sync:i+syncn (the default when the experiment has synchronization data).");

VIEWS.compare = async (sec) => {
  const r = await api("/api/compare");
  sec.textContent = "";
  sec.append(el("h2", null, "Comparing " + r.experiments.join(" and ") + " by " + r.metric));
  sec.append(el("div", { class: "scroll" }, metricTable(r.table, {
    decorate: (tr, row) => {
      const c = row.cells[row.cells.length - 1];
      tr.lastElementChild.previousElementSibling.classList.add(c.v > 0 ? "up" : c.v < 0 ? "down" : "same");
    },
  })));
  const d = await api("/api/diffflame");
  const [a, b] = d.experiments;
  sec.append(el("h2", null, "Differential flame graph"),
    el("p", { class: "muted" }, `Widths: ${b}. Colours: the change from ${a} to ${b} of each call path's inclusive ${d.metric}: red grew, blue shrank, the deeper the larger (full at 5% of the total).`));
  const box = el("div", { id: "diff-flame", class: "scroll" });
  sec.append(box);
  drawDiffFlame(box, d);
};

// drawDiffFlame draws a differential flame graph: the merged call trees of two experiments, each
// box as wide as its value in the second and coloured by its change from the first.
function drawDiffFlame(box, d) {
  const nodes = d.nodes;
  if (!nodes.length || !d.totals[1]) { box.append(el("p", { class: "muted" }, "No data in " + d.experiments[1] + ".")); return; }
  const W = Math.max(600, box.clientWidth - 4), RH = 18;
  const x = new Float64Array(nodes.length), next = new Float64Array(nodes.length);
  const path = [nodes[0].name];
  let maxDepth = 0;
  for (let i = 1; i < nodes.length; i++) {
    const n = nodes[i];
    x[i] = x[n.p] + next[n.p];
    next[n.p] += n.b;
    path[i] = path[n.p] + "/" + n.name;
    maxDepth = Math.max(maxDepth, n.d);
  }
  const H = (maxDepth + 1) * RH + 4;
  const s = svg("svg", { id: "diff-flame-svg", width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const scale = W / Math.max(1, nodes[0].b);
  const full = 0.05 * Math.max(d.totals[0], d.totals[1], 1);
  const fmt = (v) => d.time ? secs(v) + " s" : String(v);
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i];
    const w = n.b * scale;
    if (w < 0.4) continue;
    const delta = n.b - n.a;
    const k = Math.min(1, Math.abs(delta) / full);
    const light = Math.round(235 - 135 * k);
    const fill = delta > 0 ? `rgb(255,${light},${light})` : delta < 0 ? `rgb(${light},${light},255)` : "rgb(235,235,235)";
    const g = svg("g", { class: "frame " + (delta > 0 ? "up" : delta < 0 ? "down" : "same"), "data-path": path[i] });
    const r = svg("rect", { x: x[i] * scale, y: n.d * RH, width: Math.max(0.5, w), height: RH - 1, fill: fill, rx: 1.5 });
    const title = svg("title");
    const ratio = n.a ? (n.b / n.a).toFixed(3) : "new";
    title.textContent = `${n.name}\n${d.experiments[0]}: ${fmt(n.a)}\n${d.experiments[1]}: ${fmt(n.b)}\nchange ${delta >= 0 ? "+" : ""}${fmt(delta)} (ratio ${ratio})`;
    g.append(title, r);
    if (w > 28) {
      const t = svg("text", { x: x[i] * scale + 3, y: n.d * RH + RH - 5 });
      const maxChars = Math.floor((w - 6) / 6.6);
      t.textContent = n.name.length > maxChars ? n.name.slice(0, Math.max(0, maxChars - 1)) + "…" : n.name;
      g.append(t);
    }
    s.append(g);
  }
  box.append(s);
}

// ---------- start ----------

async function start() {
  if (STATIC) document.body.dataset.busy = "0";
  readHash();
  setupTimeline();
  $("#func-search").addEventListener("input", () => {
    clearTimeout(start.searchTimer);
    start.searchTimer = setTimeout(() => { state.funcQuery = $("#func-search").value.trim(); load("functions"); }, 150);
  });
  $("#flame-search").addEventListener("input", () => { if (state.flame) drawFlame(); });
  $("#flame-reset").addEventListener("click", () => { state.flameRoot = 0; load("flame"); });
  $("#flame-invert").addEventListener("click", () => { state.flameInvert = !state.flameInvert; if (state.flame) drawFlame(); });
  $("#filter-apply").addEventListener("click", async () => { await setFilter({ expr: $("#filter-expr").value }); load(state.view, true); });
  $("#filter-expr").addEventListener("keydown", async (ev) => { if (ev.key === "Enter") { await setFilter({ expr: $("#filter-expr").value }); load(state.view, true); } });
  $("#filter-clear").addEventListener("click", async () => { state.tl.sel = null; fillRange(); await setFilter({}); load(state.view, true); });
  $("#metric-apply").addEventListener("click", async () => {
    try {
      const spec = $("#metric-spec").value;
      const r = await api("/api/metrics", { spec });
      state.metricSpec = spec;
      state.funcSort = r.sort;
      invalidate();
    } catch (err) { message(String(err.message || err), true); }
  });
  $("#viewmode").addEventListener("change", async () => {
    try {
      const r = await api("/api/viewmode", { mode: $("#viewmode").value });
      state.viewmode = r.mode;
      invalidate();
    } catch (err) { message(String(err.message || err), true); }
  });
  window.addEventListener("resize", () => { if (state.view === "flame" && state.flame) drawFlame(); });
  window.addEventListener("hashchange", () => { const v = state.view, f = state.f; readHash(); if (state.view !== v || state.f !== f) show(state.view); });
  try {
    const o = await api("/api/overview");
    state.overview = o;
    buildTabs(o.views);
    const founders = o.founders.map((i) => o.experiments[i].Name).join(", ");
    const hdr = $("#exp-name");
    hdr.textContent = founders;
    if (o.processes > o.founders.length) {
      hdr.append(" ", el("a", { id: "exp-desc", title: `${o.experiments.length - o.founders.length} subexperiments; the Processes view shows the tree`,
        onclick: () => show("processes") }, "+ " + descText(o)));
    }
    if (STATIC) hdr.append("  (static report)");
    document.title = "er analyzer: " + founders + (o.processes > o.founders.length ? " + " + descText(o) : "");
    $("#metric-spec").value = o.metricSpec || "";
    $("#viewmode").value = o.viewmode || "user";
    showFilter(o.filter || {});
    if (STATIC) {
      for (const id of ["filter-expr", "filter-apply", "filter-clear", "metric-spec", "metric-apply", "viewmode", "range-apply", "range-clear", "tl-zoom", "tl-unzoom"]) $("#" + id).disabled = true;
      $("#tl-hint").textContent = "A static report: hover or click shows a call stack; ranges and zoom need er analyzer.";
    }
    if (!o.views.includes(state.view)) state.view = "functions";
    if (state.f >= 0) {
      const t = await api("/api/functions" + (STATIC ? "" : "?limit=0"));
      const r = t.rows.find((x) => x.id === state.f);
      $("#sel-func").textContent = r ? r.name : "";
    }
    show(state.view);
  } catch (err) {
    document.body.dataset.busy = "0";
    $("#main").prepend(errorBox(err));
  }
}

start();

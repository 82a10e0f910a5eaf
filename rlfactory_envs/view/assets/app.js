// rlf view's page: the runs table, an episode's page, the plots and the comparison of two runs. Its data comes
// from the server's /api (live) or from the export it is embedded in; the filtering, sorting and aggregating run
// in the engine (engine.js), in a worker.
"use strict";

const {esc, fmt} = Plots;
const PAGE_ROWS = 50;
const FOLD_CHARS = 600;

// -- where the data comes from -------------------------------------------------------------------------------
const embedded = document.getElementById("rlf-export");
const EXPORT = embedded ? JSON.parse(embedded.textContent) : null;

async function api(path, params) {
  const query = new URLSearchParams(params).toString();
  const response = await fetch(`api/${path}?${query}`, {credentials: "same-origin"});
  const body = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

const Source = EXPORT ? {
  runs: async () => EXPORT.runs,
  bad: async (run) => EXPORT.bad[run],
  episode: async (run, row) => EXPORT.episodes[`${run}:${row}`] ||
    {kind: "unreadable", why: "this episode's page is not in the export (it holds the first pages of each run; " +
      "rlf view --export-episodes N holds more)"},
  search: async (run, text) => {
    const needle = text.toLowerCase();
    const rows = Object.entries(EXPORT.episodes).filter(([key, page]) => key.startsWith(`${run}:`) &&
      JSON.stringify(page).toLowerCase().includes(needle)).map(([key]) => Number(key.split(":")[1]));
    return {rows, complete: true, note: "searched the episode pages this export holds"};
  },
} : {
  runs: () => api("runs", {}),
  bad: (run) => api("bad", {run}),
  episode: (run, row) => api("episode", {run, row}),
  search: (run, q) => api("search", {run, q}),
};

// -- the engine, in a worker where one can be made -----------------------------------------------------------
const engine = (() => {
  let worker = null;
  try {
    const inline = document.getElementById("rlf-engine");
    const url = inline ? URL.createObjectURL(new Blob([inline.textContent], {type: "text/javascript"})) : "assets/engine.js";
    worker = new Worker(url);
  } catch (error) {
    worker = null;  // the page runs the engine itself
  }
  const waiting = new Map();
  let next = 0;
  if (worker) {
    worker.onmessage = (event) => {  // the worker answers each call, in order or not, by its id
      const {id, result, error} = event.data;
      const pending = waiting.get(id);
      waiting.delete(id);
      if (error) pending.reject(new Error(error)); else pending.resolve(result);
    };
    worker.onerror = () => { worker = null; };
  }
  return {
    call(method, ...args) {
      if (!worker) return Promise.resolve().then(() => Engine[method](...args));  // may return a promise too
      const id = next++;
      return new Promise((resolve, reject) => { waiting.set(id, {resolve, reject}); worker.postMessage({id, method, args}); });
    },
    get inWorker() { return worker !== null; },
  };
})();

// -- state ----------------------------------------------------------------------------------------------------
const state = {runs: [], loaded: {}, views: {}, firstRender: null};

function viewOf(run) {
  if (!state.views[run]) {
    state.views[run] = {filter: {family: "", env: "", reason: "", template: "", difficulty: "", min: "", max: "", hits: null},
                        search: "", searchNote: "", sort: {key: "line", desc: false}, offset: 0};
  }
  return state.views[run];
}

async function loadColumns(run) {
  state.loaded[run] = EXPORT
    ? await engine.call("load", run, EXPORT.columns[run])
    : await engine.call("fetchAndLoad", run, new URL(`api/columns?run=${run}`, location.href).href);
}

// -- routing --------------------------------------------------------------------------------------------------
function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "compare" && state.runs.length > 1) return {view: "compare", a: +parts[1] || 0, b: parts[2] === undefined ? 1 : +parts[2], task: parts[4] || null};
  const run = parts[0] === "run" ? Math.min(Math.max(0, +parts[1] || 0), state.runs.length - 1) : 0;
  if (parts[2] === "episode") return {view: "episode", run, row: +parts[3]};
  return {view: "run", run};
}

async function render() {
  const where = route();
  renderTabs(where);
  const main = document.getElementById("main");
  try {
    if (where.view === "episode") main.innerHTML = await episodePage(where.run, where.row);
    else if (where.view === "compare") main.innerHTML = await comparePage(where);
    else await renderRun(where.run);
  } catch (error) {
    main.innerHTML = `<p class="error" data-testid="error">${esc(error.message)}</p>`;
  }
}

function renderTabs(where) {
  const current = where.view === "compare" ? -1 : where.run;
  const tabs = state.runs.map((r) => `<a class="tab${r.id === current ? " active" : ""}" data-testid="run-tab" href="#/run/${r.id}">` +
    `${esc(r.name)} <small>${r.rows.toLocaleString()}${r.kind === "audit" ? " examples" : ""}</small></a>`);
  if (state.runs.length > 1) tabs.push(`<a class="tab${current === -1 ? " active" : ""}" data-testid="compare-tab" href="#/compare/0/1">compare</a>`);
  document.getElementById("run-tabs").innerHTML = tabs.join("");
  const indexing = state.runs.filter((r) => !r.complete);
  document.getElementById("status").textContent = indexing.length
    ? `indexing ${indexing.map((r) => `${r.name} ${Math.round((100 * r.bytes_done) / Math.max(1, r.bytes_total))}%`).join(", ")}`
    : EXPORT ? "exported report" : "";
}

// -- the runs page --------------------------------------------------------------------------------------------
async function renderRun(run) {
  if (!state.loaded[run]) await loadColumns(run);
  const main = document.getElementById("main");
  const meta = state.runs[run];
  const loaded = state.loaded[run];
  const v = viewOf(run);
  if (!main.querySelector(`[data-run="${run}"]`)) {
    main.innerHTML = `<section data-run="${run}">${runHeader(meta)}${filterBar(run, meta, loaded)}` +
      `<div id="summary"></div><div id="table"></div><div id="problems"></div><div id="audit"></div>` +
      `<h3>Plots</h3><div id="plots" class="plots"></div></section>`;
    bindFilters(run);
    if (meta.bad_count) renderProblems(run);
    if (meta.audit) document.getElementById("audit").innerHTML = auditTable(meta.audit);
  }
  const result = await engine.call("query", run, {filter: v.filter, sort: v.sort, offset: v.offset, limit: PAGE_ROWS});
  document.getElementById("summary").innerHTML = summaryCards(result, v);
  document.getElementById("table").innerHTML = table(run, meta, loaded, result, v);
  if (state.firstRender === null) {
    state.firstRender = performance.now();
    document.body.dataset.firstRenderMs = String(Math.round(state.firstRender));
  }
  document.body.dataset.ready = "1";
  renderPlots(run, v.filter);
}

function runHeader(meta) {
  const what = meta.kind === "audit" ? "rlf audit report" : "trajectories";
  return `<h2 data-testid="run-title">${esc(meta.name)} <small>${what}: ${esc(meta.path)}</small></h2>` +
    (meta.failure ? `<p class="error">${esc(meta.failure)}</p>` : "");
}

function options(values, chosen, any) {
  return `<option value="">${esc(any)}</option>` + values.filter((x) => x !== "").slice(0, 1000)
    .map((x) => `<option${x === chosen ? " selected" : ""}>${esc(x)}</option>`).join("");
}

function filterBar(run, meta, loaded) {
  const v = viewOf(run);
  const labels = loaded.labels;
  const templateName = meta.kind === "audit" ? "hack" : "template";
  const select = (name, values, any) => values.filter((x) => x !== "").length
    ? `<label>${esc(name === "template" ? templateName : name)} <select data-filter="${name}" data-testid="filter-${name}">${options(values, v.filter[name], any)}</select></label>` : "";
  return `<form class="filters" data-testid="filters" onsubmit="return false">` +
    select("family", loaded.families, "any family") + select("reason", labels.reason, "any end") +
    select("template", labels.template, `any ${templateName}`) + select("difficulty", labels.difficulty, "any difficulty") +
    `<label>reward <input type="number" step="any" data-filter="min" data-testid="filter-min" placeholder="min" value="${esc(v.filter.min)}">` +
    `–<input type="number" step="any" data-filter="max" data-testid="filter-max" placeholder="max" value="${esc(v.filter.max)}"></label>` +
    `<label>text <input type="search" data-testid="search" placeholder="any field (Enter)" value="${esc(v.search)}"></label>` +
    `<button type="button" data-testid="clear">clear</button><span class="note" data-testid="search-note">${esc(v.searchNote)}</span></form>`;
}

function bindFilters(run) {
  const form = document.querySelector("[data-testid=filters]");
  const v = viewOf(run);
  form.querySelectorAll("[data-filter]").forEach((input) => {
    input.addEventListener("change", () => { v.filter[input.dataset.filter] = input.value; v.offset = 0; renderRun(run); });
  });
  const search = form.querySelector("[data-testid=search]");
  search.addEventListener("keydown", async (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    await runSearch(run, search.value.trim());
  });
  form.querySelector("[data-testid=clear]").addEventListener("click", () => {
    state.views[run] = undefined;
    document.getElementById("main").innerHTML = "";
    renderRun(run);
  });
}

async function runSearch(run, text) {
  const v = viewOf(run);
  const note = document.querySelector("[data-testid=search-note]");
  v.search = text;
  if (!text) { v.filter.hits = null; v.searchNote = ""; }
  else {
    note.textContent = "searching…";
    try {
      const found = await Source.search(run, text);
      v.filter.hits = found.rows;
      v.searchNote = `${found.rows.length.toLocaleString()} episodes hold “${text}”` +
        (found.complete ? "" : " (the scan stopped at its time limit: more may)") + (found.note ? `; ${found.note}` : "");
    } catch (error) { v.searchNote = error.message; }
  }
  note.textContent = v.searchNote;
  v.offset = 0;
  renderRun(run);
}

function summaryCards(result, v) {
  const s = result.summary;
  const card = (label, value, id) => `<div class="card"><div class="value" data-testid="${id}">${value}</div><div>${esc(label)}</div></div>`;
  return `<div class="cards">` + card("episodes shown", `${s.episodes.toLocaleString()}<small> of ${result.all.toLocaleString()}</small>`, "count") +
    card("mean reward", fmt(s.mean_reward), "mean-reward") + card("reward > 0", s.rewarded === null ? "–" : `${(100 * s.rewarded).toFixed(1)}%`, "rewarded") +
    card("mean turns", fmt(s.mean_turns), "mean-turns") + card("tool calls (errors)", `${s.tool_calls.toLocaleString()} (${s.tool_errors.toLocaleString()})`, "tool-calls") + `</div>`;
}

const COLUMNS = [["line", "line"], ["family", "family"], ["task", "task"], ["template", "template"], ["reward", "reward"],
  ["parts", "reward parts"], ["turns", "turns"], ["tool_calls", "tool calls"], ["tool_errors", "tool errors"],
  ["reason", "end"], ["seconds", "time (s)"], ["step", "step"]];

function table(run, meta, loaded, result, v) {
  const shown = COLUMNS.filter(([key]) => (key !== "step" || loaded.hasSteps) && (key !== "template" || loaded.labels.template.some((t) => t)));
  const head = shown.map(([key, label]) => {
    const name = key === "template" && meta.kind === "audit" ? "hack" : label;
    if (key === "parts") return `<th>${esc(name)}</th>`;
    const arrow = v.sort.key === key ? (v.sort.desc ? " ▼" : " ▲") : "";
    return `<th><a href="javascript:void 0" data-sort="${key}" data-testid="sort-${key}">${esc(name)}${arrow}</a></th>`;
  }).join("");
  const body = result.rows.map((r) => `<tr data-row="${r.row}" data-testid="episode-row">` + shown.map(([key]) => cell(r, key, meta)).join("") + "</tr>").join("");
  const empty = result.total ? "" : `<tr><td colspan="${shown.length}" class="note" data-testid="no-rows">${result.all ? "no episode matches the filters" : "no episodes in this run"}</td></tr>`;
  const last = Math.min(result.offset + PAGE_ROWS, result.total);
  const pager = `<div class="pager"><button data-page="-1" data-testid="prev"${result.offset ? "" : " disabled"}>‹ prev</button>` +
    `<span data-testid="page-info">${result.total ? result.offset + 1 : 0}–${last} of ${result.total.toLocaleString()}</span>` +
    `<button data-page="1" data-testid="next"${last < result.total ? "" : " disabled"}>next ›</button></div>`;
  setTimeout(() => bindTable(run), 0);
  return `<table class="runs" data-testid="runs-table"><thead><tr>${head}</tr></thead><tbody>${body}${empty}</tbody></table>${pager}`;
}

function cell(r, key, meta) {
  if (key === "parts") return `<td class="parts">${Object.entries(r.parts).map(([k, x]) => `<span>${esc(k)} ${fmt(x)}</span>`).join(" ")}</td>`;
  if (key === "reward") return `<td class="num ${r.reward > 0 ? "good" : "bad"}">${fmt(r.reward)}</td>`;
  if (key === "task") return `<td><a href="#/run/${meta.id}/episode/${r.row}" data-testid="episode-link">${esc(r.task)}</a></td>`;
  if (key === "step") return `<td class="num">${r.step >= 0 ? r.step : ""}</td>`;
  if (key === "seconds") return `<td class="num">${r.seconds === null ? "–" : r.seconds.toFixed(r.seconds < 10 ? 3 : 1)}</td>`;
  const value = r[key];
  return typeof value === "number" || value === null ? `<td class="num">${fmt(value)}</td>` : `<td>${esc(value)}</td>`;
}

function bindTable(run) {
  const v = viewOf(run);
  document.querySelectorAll("[data-sort]").forEach((a) => a.addEventListener("click", () => {
    const key = a.dataset.sort;
    v.sort = {key, desc: v.sort.key === key ? !v.sort.desc : key !== "line" && key !== "task"};
    v.offset = 0;
    renderRun(run);
  }));
  document.querySelectorAll("[data-page]").forEach((b) => b.addEventListener("click", () => {
    v.offset = Math.max(0, v.offset + Number(b.dataset.page) * PAGE_ROWS);
    renderRun(run);
  }));
  document.querySelectorAll("tr[data-row]").forEach((tr) => tr.addEventListener("dblclick", () => {
    location.hash = `#/run/${run}/episode/${tr.dataset.row}`;
  }));
}

async function renderProblems(run) {
  const bad = await Source.bad(run);
  const items = bad.lines.map((b) => `<li data-testid="bad-line"><b>${esc(b.file.split("/").pop())} line ${b.line}</b>: ${esc(b.reason)}` +
    `<pre class="raw">${esc(b.preview)}${b.bytes > b.preview.length ? " …" : ""}</pre></li>`).join("");
  document.getElementById("problems").innerHTML = `<details class="problems" data-testid="problems" open><summary>` +
    `${bad.count.toLocaleString()} line${bad.count === 1 ? "" : "s"} could not be read and ${bad.count === 1 ? "was" : "were"} skipped</summary><ul>${items}</ul></details>`;
}

function auditTable(audit) {
  const rows = audit.hacks.map((h) => `<tr data-testid="audit-hack"><td>${esc(h.name)}${h.control ? " (control)" : ""}</td><td class="num">${h.tried}</td>` +
    `<td class="num">${h.earned}</td><td class="num">${h.tried ? (100 * h.rate).toFixed(1) + "%" : "n/a"}</td><td class="${h.verdict === "FAIL" ? "bad" : "good"}">${esc(h.verdict)}</td>` +
    `<td>${esc(h.description || "")}</td></tr>`).join("");
  return `<h3>Audit of ${esc(audit.env_id)}</h3><p data-testid="audit-summary" class="${audit.passed ? "good" : "bad"}">${esc(audit.summary)}</p>` +
    `<table class="runs"><thead><tr><th>hack</th><th>tried</th><th>earned</th><th>rate</th><th>verdict</th><th>what it tries</th></tr></thead><tbody>${rows}</tbody></table>`;
}

// -- plots ----------------------------------------------------------------------------------------------------
async function renderPlots(run, filter) {
  const p = await engine.call("plots", run, filter);
  const box = document.getElementById("plots");
  if (!box) return;
  const meta = state.runs[run];
  const logTick = (edges, k) => (k < edges.length ? fmt(edges[k]) : null);
  const latency = {edges: [0, ...p.latency.edges], counts: p.latency.counts};
  const svgs = [
    Plots.histogram("reward", p.reward, {xlabel: "reward", testid: "plot-reward"}),
    Plots.bars("mean reward by family", p.family, {testid: "plot-family"}),
    p.template.length ? Plots.bars(`mean reward by ${meta.kind === "audit" ? "hack" : "template"}`, p.template, {testid: "plot-template"}) : "",
    p.difficulty.length ? Plots.bars("mean reward by difficulty", p.difficulty, {testid: "plot-difficulty"}) : "",
    Plots.histogram("turns per episode", p.turns, {xlabel: "turns", testid: "plot-turns"}),
    Plots.histogram("tool calls per episode", p.tool_calls, {xlabel: "tool calls", testid: "plot-tool-calls"}),
    Plots.histogram("tool latency (episode mean)", latency, {xlabel: "ms (log bins)", tick: logTick, testid: "plot-latency"}),
    Plots.bars("mean of each reward part", p.parts, {xlabel: "mean (episodes with the part)", testid: "plot-parts"}),
  ];
  if (p.steps.length) {
    svgs.push(Plots.lines("mean reward over training steps", [{name: "mean reward", points: p.steps.map((s) => ({x: s.step, y: s.mean}))}],
      {xlabel: "training step", ylabel: "mean reward", testid: "plot-steps"}));
  }
  if (state.runs.length > 1) svgs.push(...await acrossRuns());
  box.innerHTML = svgs.filter((svg) => svg).map((svg) => `<div class="plot-box">${svg}</div>`).join("");
}

async function acrossRuns() {
  const x = (r) => (r.step !== null ? r.step : r.id);
  const label = state.runs.some((r) => r.step === null) ? "run (in the order given)" : "training step (from the file names)";
  const means = [];
  for (const r of state.runs.filter((r) => r.kind === "episodes")) {
    if (!state.loaded[r.id]) await loadColumns(r.id);
    const q = await engine.call("query", r.id, {filter: {}, sort: {key: "line"}, offset: 0, limit: 0});
    means.push({x: x(r), y: q.summary.mean_reward, label: r.name});
  }
  const audits = state.runs.filter((r) => r.kind === "audit");
  const out = [];
  if (means.length > 1) out.push(Plots.lines("mean reward across runs", [{name: "mean reward", points: means}], {xlabel: label, ylabel: "mean reward", testid: "plot-runs"}));
  if (audits.length) {
    const hacks = [...new Set(audits.flatMap((r) => r.audit.hacks.filter((h) => !h.control).map((h) => h.name)))];
    const series = [{name: "hacks failing", points: audits.map((r) => ({x: x(r), y: r.audit.failing_hacks.length, label: r.name}))}];
    const rates = hacks.slice(0, 5).map((name) => ({name, points: audits.map((r) => {
      const h = r.audit.hacks.find((k) => k.name === name);
      return {x: x(r), y: h && h.tried ? h.rate : null, label: r.name};
    })}));
    out.push(Plots.lines("hack-audit flags across runs", series, {xlabel: label, ylabel: "failing hacks", testid: "plot-hack-flags"}));
    out.push(Plots.lines("hack earn rates across runs", rates, {xlabel: label, ylabel: "share of tasks", yMax: 1, testid: "plot-hack-rates"}));
  }
  return out;
}

// -- an episode's page ----------------------------------------------------------------------------------------
async function episodePage(run, row) {
  if (!state.loaded[run]) await loadColumns(run);
  const page = await Source.episode(run, row);
  const back = `<p><a href="#/run/${run}" data-testid="back">← ${esc(state.runs[run].name)}</a></p>`;
  return back + `<section class="episode" data-testid="episode">${episodeBody(page, row)}</section>`;
}

function folded(text, label, open) {
  const long = text.length > FOLD_CHARS;
  return `<details class="fold"${long && !open ? "" : " open"}><summary>${esc(label)}${long ? ` <small>(${text.length.toLocaleString()} chars)</small>` : ""}</summary><pre>${esc(text)}</pre></details>`;
}

function episodeBody(page, row) {
  if (page.kind === "unreadable") return `<p class="error" data-testid="unreadable">${esc(page.why)}</p>`;
  if (page.kind === "audit") return auditExample(page);
  const h = page.header;
  const r = page.reward;
  const title = `<h2 data-testid="episode-title">${esc(taskTitle(page.task, h))}</h2>`;
  const facts = [["reward", fmt(r.reward)], ["env", h.env_id], ["end", h.error ? "error" : h.terminated ? "answer" : r.truncation_reason || "truncated"],
    ["turns", h.turns], ["tool calls", `${h.tool_calls} (${h.tool_errors} errors)`], ["seed", h.seed], ["step", h.train_step]]
    .filter(([, value]) => value !== null && value !== undefined)
    .map(([k, value]) => `<div class="card"><div class="value">${esc(String(value))}</div><div>${esc(k)}</div></div>`).join("");
  const error = h.error ? `<p class="error" data-testid="episode-error">${esc(h.error)}</p>` : "";
  const task = `<details class="fold"><summary>task</summary><pre>${esc(JSON.stringify(page.task, null, 2))}</pre></details>`;
  const prompt = page.prompt.map((m) => folded(m.text, `${m.role} (prompt)`, false)).join("");
  const turns = page.turns.map(turnView).join("") + (page.transcript ? folded(page.transcript, "transcript", true) : "");
  const answer = h.answer !== null && h.answer !== undefined ? folded(String(h.answer), "final answer", true) : "";
  return `${title}<div class="cards">${facts}</div>${error}${rewardView(r)}${task}<h3>Conversation</h3>${prompt}` +
    `<div data-testid="turns">${turns}</div>${answer}`;
}

function taskTitle(task, header) {
  const t = task || {};
  const id = t.task_id || t.id || (t.template ? `${t.template}#${t.seed}` : `seed ${header.seed}`);
  const what = t.question || t.goal || t.query || "";
  return `${id}${what ? ": " + String(what).slice(0, 160) : ""}`;
}

function turnView(t) {
  const pr = t.process_reward !== null && t.process_reward !== undefined
    ? ` <span class="badge" data-testid="process-reward" title="${esc(t.process_reward_reason || "")}">process reward ${fmt(t.process_reward)}</span>` : "";
  const secs = t.seconds !== null && t.seconds !== undefined
    ? ` <small>${t.seconds < 1 ? `${(1000 * t.seconds).toFixed(1)} ms` : `${t.seconds.toFixed(2)} s`}</small>` : "";
  const calls = t.calls.map((c) => {
    const args = c.arguments !== undefined ? esc(JSON.stringify(c.arguments)) : "";
    const badge = c.is_error ? `<span class="badge bad">error</span>` : "";
    const latency = c.latency_s !== undefined ? ` <small>${fmt(1000 * c.latency_s)} ms</small>` : "";
    const result = c.result === null || c.result === undefined ? "<p class=note>no result recorded</p>" : folded(c.result, "result", false);
    return `<div class="call" data-testid="tool-call"><code>${esc(c.name || "?")}(${args})</code> ${badge}${latency}${result}</div>`;
  }).join("");
  const notes = t.notes.map((n) => folded(n.text, `${n.role}: what the env told the model`, true)).join("");
  const errors = t.parse_errors.length ? `<p class="bad">parse errors: ${esc(t.parse_errors.join("; "))}</p>` : "";
  return `<div class="turn" data-testid="turn"><h4>turn ${t.turn}${pr}${secs}</h4>${folded(t.response, "model", true)}${errors}${calls}${notes}</div>`;
}

function rewardView(r) {
  const parts = Object.entries(r.parts || {}).map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num">${fmt(v)}</td></tr>`).join("");
  const reason = r.reason ? `<p data-testid="reward-reason"><b>why:</b> ${esc(r.reason)}</p>` : "";
  const sections = r.sections.map((s) => {
    const checks = s.checks.map(([k, v]) => `<tr><td>${esc(k)}</td><td class="${v === true ? "good" : v === false ? "bad" : "note"}">${v === true ? "✓ pass" : v === false ? "✗ fail" : "– n/a"}</td></tr>`).join("");
    const fields = s.fields.map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v === null ? "–" : String(v))}</td></tr>`).join("");
    const texts = s.texts.map(([k, v]) => folded(String(v), k, true)).join("");
    return `<div class="verdict" data-testid="verdict"><h4>${esc(s.title)}</h4><table>${checks}${fields}</table>${texts}</div>`;
  }).join("");
  return `<div class="reward" data-testid="reward"><h3>Reward ${fmt(r.reward)}</h3>${reason}` +
    (parts ? `<table class="parts-table" data-testid="reward-parts">${parts}</table>` : "") + `<div class="verdicts">${sections}</div></div>`;
}

function auditExample(page) {
  const e = page.audit_example;
  const parts = Object.entries(e.parts || {}).map(([k, v]) => `${esc(k)} ${fmt(v)}`).join(", ");
  return `<h2 data-testid="episode-title">${esc(page.hack.name)} on task ${esc(e.task_id)}</h2>` +
    `<p>${esc(page.hack.description || "")}</p><div class="cards"><div class="card"><div class="value">${fmt(e.reward)}</div><div>reward</div></div>` +
    `<div class="card"><div class="value">${esc(page.outcome)}</div><div>outcome</div></div><div class="card"><div class="value">${esc(page.hack.verdict)}</div><div>hack's verdict</div></div></div>` +
    (parts ? `<p>parts: ${parts}</p>` : "") + (e.reason ? `<p data-testid="reward-reason"><b>why:</b> ${esc(e.reason)}</p>` : "") +
    (e.error ? `<p class="error">${esc(e.error)}</p>` : "") + (e.answer !== null && e.answer !== undefined ? folded(String(e.answer), `answer${e.answer_chars ? ` (${e.answer_chars} chars)` : ""}`, true) : "") +
    `<p class="note">rlf audit --json keeps each example's answer and reward, not its conversation.</p>`;
}

// -- comparing two runs ---------------------------------------------------------------------------------------
async function comparePage(where) {
  const episodes = state.runs.filter((r) => r.kind === "episodes");
  for (const r of [where.a, where.b]) if (!state.loaded[r]) await loadColumns(r);
  const result = await engine.call("compare", where.a, where.b);
  const pick = (name, chosen) => `<select data-testid="compare-${name}" onchange="location.hash='#/compare/'+(${name === "a" ? "this.value" : where.a})+'/'+(${name === "b" ? "this.value" : where.b})">` +
    state.runs.map((r) => `<option value="${r.id}"${r.id === chosen ? " selected" : ""}>${esc(r.name)}</option>`).join("") + `</select>`;
  const chip = (label, n, id) => `<div class="card"><div class="value" data-testid="${id}">${n.toLocaleString()}</div><div>${esc(label)}</div></div>`;
  const changed = result.tasks.filter((t) => t.delta !== 0 || t.flipped);
  const rows = changed.slice(0, 500).map((t) => `<tr data-testid="compare-row"><td><a href="#/compare/${where.a}/${where.b}/task/${encodeURIComponent(t.task)}">${esc(t.task)}</a></td>` +
    `<td class="num">${fmt(t.a)}</td><td class="num">${fmt(t.b)}</td><td class="num ${t.delta > 0 ? "good" : "bad"}">${t.delta > 0 ? "+" : ""}${fmt(t.delta)}</td>` +
    `<td>${t.flipped ? "flipped" : ""}</td><td class="num">${t.n_a} / ${t.n_b}</td></tr>`).join("");
  let side = "";
  if (where.task !== null) {
    const t = result.tasks.find((x) => x.task === where.task);
    if (t) {
      const [pa, pb] = await Promise.all([Source.episode(where.a, t.row_a), Source.episode(where.b, t.row_b)]);
      side = `<div class="side-by-side" data-testid="side-by-side"><div><h3>${esc(state.runs[where.a].name)}</h3>${episodeBody(pa, t.row_a)}</div>` +
        `<div><h3>${esc(state.runs[where.b].name)}</h3>${episodeBody(pb, t.row_b)}</div></div>`;
    }
  }
  const note = episodes.length < 2 ? `<p class="note">comparing an audit report matches its examples by task id</p>` : "";
  return `<h2>Compare ${pick("a", where.a)} with ${pick("b", where.b)}</h2>${note}<div class="cards">` +
    chip("tasks in both", result.common, "common") + chip("reward went up", result.improved, "improved") +
    chip("reward went down", result.regressed, "regressed") + chip("flipped (paid in one run only)", result.flipped, "flipped") +
    chip(`only in ${state.runs[where.a].name}`, result.only_a, "only-a") + chip(`only in ${state.runs[where.b].name}`, result.only_b, "only-b") + `</div>` +
    `${side}<table class="runs" data-testid="compare-table"><thead><tr><th>task</th><th>mean reward A</th><th>mean reward B</th><th>change</th><th></th><th>episodes A / B</th></tr></thead>` +
    `<tbody>${rows || `<tr><td colspan="6" class="note">no task's reward changed</td></tr>`}</tbody></table>` +
    (changed.length > 500 ? `<p class="note">the 500 largest changes of ${changed.length.toLocaleString()}</p>` : "");
}

// -- start, and follow the index while it grows ---------------------------------------------------------------
async function refreshRuns() {
  const runs = await Source.runs();
  // A run's columns are fetched again when its index completes (or when none had been indexed yet): not on every
  // poll, which would make the server serialise a growing table over and over while it indexes.
  const grown = runs.filter((r) => state.loaded[r.id] && !state.loaded[r.id].complete && (r.complete || !state.loaded[r.id].rows));
  state.runs = runs;
  for (const r of grown) await loadColumns(r.id);
  const where = route();
  renderTabs(where);
  if (grown.length && where.view === "run" && grown.some((r) => r.id === where.run)) {
    document.getElementById("main").innerHTML = "";
    await renderRun(where.run);
  }
  followIndex();
}

// While a run is indexed its runs row is polled; sooner while a loaded run still shows no rows.
function followIndex() {
  if (!state.runs.some((r) => !r.complete)) return;
  const empty = Object.values(state.loaded).some((loaded) => loaded && !loaded.complete && !loaded.rows);
  setTimeout(refreshRuns, empty ? 150 : 700);
}

async function start() {
  try {
    state.runs = await Source.runs();
    window.addEventListener("hashchange", render);
    await render();
    followIndex();
  } catch (error) {
    document.getElementById("main").innerHTML = `<p class="error" data-testid="error">${esc(error.message)}</p>`;
  }
}

start();

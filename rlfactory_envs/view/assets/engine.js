// The viewer's query engine: filters, sorts, pages, aggregates for the plots and compares runs, over the column
// store the server sends (/api/columns) or the export holds. It runs in a Web Worker (the page stays responsive
// with 100,000 episodes) and, where no worker can be made, on the page itself: the same functions either way.
"use strict";

const Engine = (() => {
  const runs = {};
  const NUMERIC = ["reward", "turns", "tool_calls", "tool_errors", "seconds", "latency_ms", "step", "line", "src"];
  const LABELED = ["env", "task", "template", "difficulty", "reason"];

  // Keep a run's columns (the server's /api/columns payload); returns what the page needs to draw its filters
  // (every label but the task ids, which may be 100,000).
  function load(run, payload) {
    const c = payload.columns;
    const cols = {};
    for (const name of [...NUMERIC, ...LABELED, ...payload.parts.map((part) => "part:" + part)]) cols[name] = typed(c[name]);
    const labels = payload.labels;
    const envFamily = Int32Array.from(labels.env, (_, i) => familyCode(payload, i));
    runs[run] = {rows: payload.rows, cols, labels, ranks: {}, parts: payload.parts, families: uniqueFamilies(payload),
                 envFamily, latencyBins: payload.latency_bins_ms, latencyCounts: payload.latency_counts, cache: null};
    const shown = {};
    for (const name of LABELED) if (name !== "task") shown[name] = labels[name];
    return {rows: payload.rows, complete: payload.complete, labels: shown, families: runs[run].families,
            parts: payload.parts, hasSteps: cols.step.some((s) => s >= 0)};
  }

  // `load` of the columns at `url` (fetched and parsed here, in the worker, not on the page).
  async function fetchAndLoad(run, url) {
    const response = await fetch(url, {credentials: "same-origin"});
    const body = await response.json();
    if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
    return load(run, body);
  }

  // Each label's rank in sorted order, made the first time a table is sorted by that label.
  function ranksOf(r, name) {
    if (!r.ranks[name]) {
      const texts = r.labels[name];
      const keys = texts.map((t) => (t !== "" && !isNaN(Number(t)) ? Number(t) : null));
      const order = texts.map((_, i) => i).sort((a, b) => {
        const ka = keys[a], kb = keys[b];
        if (ka !== null && kb !== null) return ka - kb;
        return texts[a] < texts[b] ? -1 : texts[a] > texts[b] ? 1 : 0;
      });
      const rank = new Int32Array(order.length);
      order.forEach((code, position) => { rank[code] = position; });
      r.ranks[name] = rank;
    }
    return r.ranks[name];
  }

  // A column the server sent: little-endian binary in base64, of type f8, f4 or i4.
  function typed(column) {
    const text = atob(column.base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const kind = {f8: Float64Array, f4: Float32Array, i4: Int32Array}[column.type];
    return new kind(bytes.buffer);
  }

  function uniqueFamilies(payload) { return [...new Set(payload.families)]; }

  function familyCode(payload, envCode) { return uniqueFamilies(payload).indexOf(payload.families[envCode]); }

  function compareText(a, b) {
    const na = Number(a), nb = Number(b);
    if (a !== "" && b !== "" && !isNaN(na) && !isNaN(nb)) return na - nb;
    return a < b ? -1 : a > b ? 1 : 0;
  }

  // The rows passing `filter`: {family, env, reason, template, difficulty (label texts, "" for any), min, max
  // (reward bounds, null for none), hits (row numbers a text search found, null for no search)}.
  function matching(r, filter) {
    const f = filter || {};
    const want = {};
    for (const name of ["env", "reason", "template", "difficulty"]) {
      want[name] = f[name] ? r.labels[name].indexOf(f[name]) : -1;
      if (f[name] && want[name] < 0) return new Int32Array(0);
    }
    const family = f.family ? r.families.indexOf(f.family) : -1;
    if (f.family && family < 0) return new Int32Array(0);
    const lo = f.min === null || f.min === undefined || f.min === "" ? -Infinity : Number(f.min);
    const hi = f.max === null || f.max === undefined || f.max === "" ? Infinity : Number(f.max);
    const source = f.hits ? Int32Array.from(f.hits) : null;
    const n = source ? source.length : r.rows;
    const out = new Int32Array(n);
    let k = 0;
    const c = r.cols;
    for (let j = 0; j < n; j++) {
      const i = source ? source[j] : j;
      if (i >= r.rows) continue;
      if (family >= 0 && r.envFamily[c.env[i]] !== family) continue;
      if (want.env >= 0 && c.env[i] !== want.env) continue;
      if (want.reason >= 0 && c.reason[i] !== want.reason) continue;
      if (want.template >= 0 && c.template[i] !== want.template) continue;
      if (want.difficulty >= 0 && c.difficulty[i] !== want.difficulty) continue;
      const reward = c.reward[i];
      if ((lo > -Infinity || hi < Infinity) && !(reward >= lo && reward <= hi)) continue;
      out[k++] = i;
    }
    return out.slice(0, k);
  }

  function sorted(r, rows, sort) {
    const key = (sort && sort.key) || "line";
    const desc = !!(sort && sort.desc);
    if (key === "line" && !desc) return rows;  // rows are kept in file order
    let values;
    if (LABELED.includes(key)) {
      const rank = ranksOf(r, key);
      values = Float64Array.from(r.cols[key], (code) => rank[code]);
    }
    else if (key === "family") values = Float64Array.from(r.cols.env, (code) => r.envFamily[code]);
    else values = r.cols[key] || r.cols.line;
    const order = Array.from(rows);
    order.sort((a, b) => {
      const va = values[a], vb = values[b];
      const na = Number.isNaN(va), nb = Number.isNaN(vb);
      if (na || nb) return na === nb ? a - b : na ? 1 : -1;  // no value: last, either way
      return va === vb ? a - b : (va < vb) !== desc ? -1 : 1;
    });
    return Int32Array.from(order);
  }

  function rowObject(r, i) {
    const c = r.cols;
    const parts = {};
    for (const part of r.parts) {
      const v = c["part:" + part][i];
      if (!Number.isNaN(v)) parts[part] = v;
    }
    const label = (name) => r.labels[name][c[name][i]];
    return {row: i, env: label("env"), family: r.families[r.envFamily[c.env[i]]], task: label("task"),
            template: label("template"), difficulty: label("difficulty"), reason: label("reason"),
            reward: nan(c.reward[i]), parts, turns: c.turns[i], tool_calls: c.tool_calls[i],
            tool_errors: c.tool_errors[i], seconds: nan(c.seconds[i]), latency_ms: nan(c.latency_ms[i]),
            step: c.step[i], line: c.line[i] + 1, src: c.src[i]};
  }

  function nan(v) { return Number.isNaN(v) ? null : v; }

  // One page of the filtered, sorted rows, with the filtered rows' summary.
  function query(run, request) {
    const r = runs[run];
    const cacheKey = JSON.stringify([request.filter, request.sort]);
    if (!r.cache || r.cache.key !== cacheKey) {
      const rows = sorted(r, matching(r, request.filter), request.sort);
      r.cache = {key: cacheKey, rows, summary: summary(r, rows)};
    }
    const {rows} = r.cache;
    const start = Math.max(0, Math.min(request.offset || 0, rows.length));
    const page = Array.from(rows.subarray(start, start + (request.limit || 50)), (i) => rowObject(r, i));
    return {total: rows.length, all: r.rows, offset: start, rows: page, summary: r.cache.summary};
  }

  function summary(r, rows) {
    const c = r.cols;
    let reward = 0, rewarded = 0, positive = 0, turns = 0, calls = 0, errors = 0;
    for (const i of rows) {
      if (!Number.isNaN(c.reward[i])) { reward += c.reward[i]; rewarded++; if (c.reward[i] > 0) positive++; }
      turns += c.turns[i]; calls += c.tool_calls[i]; errors += c.tool_errors[i];
    }
    const n = rows.length;
    return {episodes: n, mean_reward: rewarded ? reward / rewarded : null, rewarded: rewarded ? positive / rewarded : null,
            mean_turns: n ? turns / n : null, tool_calls: calls, tool_errors: errors};
  }

  function histogram(values, bins) {
    const finite = values.filter((v) => Number.isFinite(v));
    if (!finite.length) return {edges: [], counts: []};
    let lo = finite[0], hi = lo;
    for (const v of finite) { if (v < lo) lo = v; if (v > hi) hi = v; }
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    const width = (hi - lo) / bins;
    const counts = new Array(bins).fill(0);
    for (const v of finite) counts[Math.min(bins - 1, Math.floor((v - lo) / width))]++;
    return {edges: Array.from({length: bins + 1}, (_, k) => lo + k * width), counts};
  }

  function integerHistogram(values) {
    let hi = 0;
    for (const v of values) if (v > hi) hi = v;
    const width = Math.max(1, Math.ceil((hi + 1) / 40));
    const counts = new Array(Math.floor(hi / width) + 1).fill(0);
    for (const v of values) counts[Math.floor(v / width)]++;
    return {edges: Array.from({length: counts.length + 1}, (_, k) => k * width), counts, integer: true};
  }

  function byGroup(r, rows, name) {
    const c = r.cols;
    const sums = new Map(), counts = new Map();
    for (const i of rows) {
      const key = name === "family" ? r.families[r.envFamily[c.env[i]]] : r.labels[name][c[name][i]];
      if (key === "" || Number.isNaN(c.reward[i])) continue;
      sums.set(key, (sums.get(key) || 0) + c.reward[i]);
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    return [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 25)
      .map(([label, n]) => ({label, n, mean: sums.get(label) / n}));
  }

  function overSteps(r, rows) {
    const c = r.cols;
    const sums = new Map(), counts = new Map();
    for (const i of rows) {
      const s = c.step[i];
      if (s < 0 || Number.isNaN(c.reward[i])) continue;
      sums.set(s, (sums.get(s) || 0) + c.reward[i]);
      counts.set(s, (counts.get(s) || 0) + 1);
    }
    return [...counts.keys()].sort((a, b) => a - b).map((s) => ({step: s, n: counts.get(s), mean: sums.get(s) / counts.get(s)}));
  }

  function latencyHistogram(r, rows) {
    const edges = r.latencyBins;
    const counts = new Array(edges.length + 1).fill(0);
    for (const i of rows) {
      const v = r.cols.latency_ms[i];
      if (Number.isNaN(v)) continue;
      let k = 0;
      while (k < edges.length && edges[k] <= v) k++;
      counts[k]++;
    }
    return {edges, counts, calls: r.latencyCounts};
  }

  // What the plots draw, for the filtered rows.
  function plots(run, filter) {
    const r = runs[run];
    const rows = matching(r, filter);
    const pick = (name) => Array.from(rows, (i) => r.cols[name][i]);
    const parts = r.parts.map((part) => {
      const values = pick("part:" + part).filter((v) => !Number.isNaN(v));
      return {label: part, n: values.length, mean: values.length ? values.reduce((a, b) => a + b, 0) / values.length : 0};
    });
    return {episodes: rows.length, reward: histogram(pick("reward"), 20), turns: integerHistogram(pick("turns")),
            tool_calls: integerHistogram(pick("tool_calls")), latency: latencyHistogram(r, rows),
            family: byGroup(r, rows, "family"), template: byGroup(r, rows, "template"),
            difficulty: byGroup(r, rows, "difficulty"), steps: overSteps(r, rows), parts,
            summary: summary(r, rows)};
  }

  function taskTable(r) {
    const c = r.cols;
    const table = new Map();
    for (let i = 0; i < r.rows; i++) {
      const task = r.labels.task[c.task[i]];
      let entry = table.get(task);
      if (!entry) { entry = {sum: 0, n: 0, row: i}; table.set(task, entry); }
      if (!Number.isNaN(c.reward[i])) { entry.sum += c.reward[i]; entry.n++; }
    }
    return table;
  }

  // Tasks of runs a and b side by side: each task's mean reward in each, the change, and whether it flipped
  // (paid in one run and not in the other).
  function compare(a, b) {
    const ta = taskTable(runs[a]), tb = taskTable(runs[b]);
    const tasks = [];
    let onlyA = 0;
    for (const [task, ea] of ta) {
      const eb = tb.get(task);
      if (!eb) { onlyA++; continue; }
      const ra = ea.n ? ea.sum / ea.n : null, rb = eb.n ? eb.sum / eb.n : null;
      const delta = ra === null || rb === null ? 0 : rb - ra;
      tasks.push({task, a: ra, b: rb, delta, flipped: (ra > 0) !== (rb > 0), n_a: ea.n, n_b: eb.n,
                  row_a: ea.row, row_b: eb.row});
    }
    tasks.sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || compareText(x.task, y.task));
    const count = (test) => tasks.filter(test).length;
    return {tasks, common: tasks.length, only_a: onlyA, only_b: tb.size - tasks.length,
            improved: count((t) => t.delta > 0), regressed: count((t) => t.delta < 0), flipped: count((t) => t.flipped),
            same: count((t) => t.delta === 0)};
  }

  return {load, fetchAndLoad, query, plots, compare};
})();

if (typeof WorkerGlobalScope !== "undefined" && self instanceof WorkerGlobalScope) {
  self.onmessage = (event) => {
    const {id, method, args} = event.data;
    Promise.resolve().then(() => Engine[method](...args)).then(
      (result) => self.postMessage({id, result}),
      (error) => self.postMessage({id, error: String((error && error.stack) || error)}));
  };
}

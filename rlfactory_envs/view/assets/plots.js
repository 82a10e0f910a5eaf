// The viewer's plots as SVG: histograms, bars of a mean per group, and lines over steps or runs. Each function
// returns the SVG's markup; every text in it is escaped.
"use strict";

const Plots = (() => {
  const W = 420, H = 200, M = {left: 46, right: 12, top: 26, bottom: 34};
  const COLORS = ["#3b6ea5", "#c0504d", "#4f9a55", "#8064a2", "#d08a2a", "#4bacc6", "#7f7f7f"];

  function esc(text) {
    return String(text).replace(/[&<>"']/g, (ch) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[ch]));
  }

  function fmt(v) {
    if (v === null || v === undefined || Number.isNaN(v)) return "–";
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e4 || a < 1e-2)) return v.toExponential(1);
    return Number.isInteger(v) ? String(v) : v.toFixed(a >= 100 ? 0 : 2);
  }

  function frame(title, body, xlabel, ylabel, testid) {
    return `<svg class="plot" data-testid="${esc(testid)}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">` +
      `<text class="plot-title" x="${M.left}" y="16">${esc(title)}</text>${body}` +
      `<text class="axis-label" x="${(M.left + W - M.right) / 2}" y="${H - 4}" text-anchor="middle">${esc(xlabel)}</text>` +
      `<text class="axis-label" transform="translate(11 ${(M.top + H - M.bottom) / 2}) rotate(-90)" text-anchor="middle">${esc(ylabel)}</text></svg>`;
  }

  // Gridlines and ticks at quarters of `max`; for counts, at whole numbers only.
  function yAxis(max, scaleY, counts) {
    let out = "";
    const ticks = counts ? [...new Set([0, 1, 2, 3, 4].map((k) => Math.round((max * k) / 4)))] : [0, 1, 2, 3, 4].map((k) => (max * k) / 4);
    for (const v of ticks) {
      const y = scaleY(v);
      out += `<line class="grid" x1="${M.left}" x2="${W - M.right}" y1="${y}" y2="${y}"/>` +
        `<text class="tick" x="${M.left - 4}" y="${y + 3}" text-anchor="end">${esc(fmt(v))}</text>`;
    }
    return out;
  }

  function empty(title, testid) {
    return frame(title, `<text class="tick" x="${W / 2}" y="${H / 2}" text-anchor="middle">no data</text>`, "", "", testid);
  }

  // Bars of counts over bins (`hist`: edges and counts); `labels(edge)` writes an edge's tick.
  function histogram(title, hist, opts = {}) {
    const counts = hist.counts || [];
    if (!counts.length || !counts.some((c) => c > 0)) return empty(title, opts.testid || title);
    const max = Math.max(...counts);
    const plotW = W - M.left - M.right, plotH = H - M.top - M.bottom;
    const bw = plotW / counts.length;
    const scaleY = (v) => M.top + plotH - (v / max) * plotH;
    let body = yAxis(max, scaleY, true);
    counts.forEach((c, k) => {
      const lo = opts.edgeLabel ? opts.edgeLabel(hist.edges, k) : `${fmt(hist.edges[k])}–${fmt(hist.edges[k + 1])}`;
      body += `<rect class="bar" x="${M.left + k * bw + 0.5}" y="${scaleY(c)}" width="${Math.max(1, bw - 1)}" height="${M.top + plotH - scaleY(c)}">` +
        `<title>${esc(lo)}: ${c}</title></rect>`;
    });
    const ticks = Math.min(counts.length, 6);
    for (let t = 0; t <= ticks; t++) {
      const k = Math.round((t * counts.length) / ticks);
      const label = opts.tick ? opts.tick(hist.edges, k) : fmt(hist.edges[k]);
      if (label === null) continue;
      body += `<text class="tick" x="${M.left + k * bw}" y="${H - M.bottom + 12}" text-anchor="middle">${esc(label)}</text>`;
    }
    return frame(title, body, opts.xlabel || "", "episodes", opts.testid || title);
  }

  // Horizontal bars: each group's mean (`groups`: label, n, mean).
  function bars(title, groups, opts = {}) {
    if (!groups.length) return empty(title, opts.testid || title);
    const rowH = Math.min(18, (H - M.top - 10) / groups.length);
    const height = Math.max(H, M.top + groups.length * rowH + 12);
    const left = 130, plotW = W - left - 60;
    const max = Math.max(1e-9, ...groups.map((g) => Math.abs(g.mean)));
    let body = "";
    groups.forEach((g, k) => {
      const y = M.top + k * rowH;
      const w = (Math.abs(g.mean) / max) * plotW;
      const label = g.label.length > 20 ? g.label.slice(0, 19) + "…" : g.label;
      body += `<text class="tick" x="${left - 4}" y="${y + rowH * 0.7}" text-anchor="end">${esc(label)}</text>` +
        `<rect class="bar" x="${left}" y="${y + 1}" width="${Math.max(1, w)}" height="${Math.max(2, rowH - 3)}">` +
        `<title>${esc(g.label)}: mean ${fmt(g.mean)} over ${g.n}</title></rect>` +
        `<text class="tick" x="${left + w + 4}" y="${y + rowH * 0.7}">${esc(fmt(g.mean))} (${g.n})</text>`;
    });
    const svg = frame(title, body, opts.xlabel || "mean reward (episodes)", "", opts.testid || title);
    return svg.replace(`viewBox="0 0 ${W} ${H}"`, `viewBox="0 0 ${W} ${height}"`);
  }

  // Lines over x (`series`: name and points {x, y}); points with y null are skipped.
  function lines(title, series, opts = {}) {
    const points = series.flatMap((s) => s.points.filter((p) => p.y !== null));
    if (!points.length) return empty(title, opts.testid || title);
    const xs = points.map((p) => p.x), ys = points.map((p) => p.y);
    const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
    const yMax = opts.yMax !== undefined ? opts.yMax : Math.max(1e-9, ...ys);
    const plotW = W - M.left - M.right - 70, plotH = H - M.top - M.bottom;
    const sx = (x) => M.left + ((x - x0) / (x1 - x0)) * plotW;
    const sy = (y) => M.top + plotH - (y / yMax) * plotH;
    let body = yAxis(yMax, sy);
    series.forEach((s, k) => {
      const color = COLORS[k % COLORS.length];
      const pts = s.points.filter((p) => p.y !== null);
      body += `<polyline fill="none" stroke="${color}" stroke-width="1.6" points="${pts.map((p) => `${sx(p.x)},${sy(p.y)}`).join(" ")}"/>`;
      body += pts.map((p) => `<circle cx="${sx(p.x)}" cy="${sy(p.y)}" r="2.6" fill="${color}"><title>${esc(s.name)} at ${esc(p.label || p.x)}: ${fmt(p.y)}</title></circle>`).join("");
      body += `<text class="legend" x="${W - M.right - 66}" y="${M.top + 10 + k * 12}" fill="${color}">${esc(s.name.slice(0, 14))}</text>`;
    });
    for (const x of [...new Set(xs)].slice(0, 8)) {
      body += `<text class="tick" x="${sx(x)}" y="${H - M.bottom + 12}" text-anchor="middle">${esc(fmt(x))}</text>`;
    }
    return frame(title, body, opts.xlabel || "", opts.ylabel || "", opts.testid || title);
  }

  return {histogram, bars, lines, fmt, esc};
})();

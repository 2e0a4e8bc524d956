// lineChart draws series of {t, v} points as an inline SVG: no library, a few hundred bytes.
const W = 480, H = 160, PAD = 32;
const COLORS = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626"];
const NS = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

export function lineChart(series, unit) {
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img" });
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) {
    svg.append(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, "no data yet"));
    return svg;
  }
  const t0 = Math.min(...all.map((p) => p.t)), t1 = Math.max(...all.map((p) => p.t), t0 + 1);
  const vmax = Math.max(...all.map((p) => p.v), 1) * 1.1;
  const x = (t) => PAD + ((t - t0) / (t1 - t0)) * (W - 2 * PAD);
  const y = (v) => H - PAD + 8 - (v / vmax) * (H - PAD - 8);
  svg.append(el("line", { x1: PAD, y1: y(0), x2: W - PAD, y2: y(0), class: "axis-line" }));
  svg.append(el("text", { x: 2, y: 12, class: "axis" }, `${Math.round(vmax)} ${unit}`));
  svg.append(el("text", { x: 2, y: y(0), class: "axis" }, "0"));
  svg.append(el("text", { x: W - PAD, y: H - 4, "text-anchor": "end", class: "axis" }, new Date(t1).toLocaleTimeString()));
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const d = s.points.map((p, j) => `${j ? "L" : "M"}${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join("");
    if (d) svg.append(el("path", { d, fill: "none", stroke: color, "stroke-width": 2 }));
    if (s.points.length === 1) svg.append(el("circle", { cx: x(s.points[0].t), cy: y(s.points[0].v), r: 3, fill: color }));
    svg.append(el("text", { x: PAD + i * 110, y: H - 4, fill: color, class: "legend" }, s.name));
  });
  return svg;
}

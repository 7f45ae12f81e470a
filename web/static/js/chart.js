// A small line chart on a canvas: values over time, a zero line, the
// scale's top value and the time axis in margins of their own, the latest
// value beside the title, and the values under the pointer. One series, or
// several in colours named in a legend.
import { h, replace } from './dom.js';

const clock = (t) => new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
const COLOURS = ['#2458d3', '#d9480f', '#2b8a3e', '#862e9c'];

export function chart(title, fmt) {
  const canvas = h('canvas', { width: 600, height: 200 });
  const now = h('span', { class: 'now' }, '–');
  const legend = h('div', { class: 'muted small chart-legend' });
  const hover = h('div', { class: 'muted small chart-hover' }, '\u00a0');
  const el = h('div', { class: 'card chart' }, h('div', { class: 'toolbar' }, h('span', {}, title), h('span', { class: 'spacer' }), now), canvas, legend, hover);
  let shown = []; // [{label, vals}]
  let toX = null;
  canvas.addEventListener('mousemove', (ev) => {
    if (!shown.length || !toX) return;
    const r = canvas.getBoundingClientRect();
    const px = (ev.clientX - r.left) * canvas.width / r.width;
    const parts = [];
    let at = null;
    for (const s of shown) {
      if (!s.vals.length) continue;
      let best = s.vals[0];
      for (const p of s.vals) if (Math.abs(toX(p.t) - px) < Math.abs(toX(best.t) - px)) best = p;
      at = at === null ? best.t : at;
      parts.push((s.label ? s.label + ' ' : '') + fmt(best.v));
    }
    hover.textContent = at === null ? '\u00a0' : `${clock(at)}: ${parts.join(', ')}`;
  });
  canvas.addEventListener('mouseleave', () => { hover.textContent = '\u00a0'; });

  // draw takes points [{t: ms, v: number|null}], or series
  // [{label, points}] drawn in their own colours.
  function draw(input) {
    const series = input.length && input[0].points ? input : [{ label: '', points: input }];
    const ctx = canvas.getContext('2d');
    const W = canvas.width, H = canvas.height, left = 6, right = 6, top = 28, bottom = 24;
    ctx.clearRect(0, 0, W, H);
    shown = series.map(s => ({ label: s.label, vals: s.points.filter(p => p.v !== null && p.v !== undefined && isFinite(p.v)) }));
    const all = shown.flatMap(s => s.vals);
    const times = series.flatMap(s => s.points.map(p => p.t));
    replace(legend, series.length > 1 ? series.map((s, i) => h('span', { class: 'legend-item', dataset: { colour: i } }, '\u25a0 ', s.label)) : []);
    legend.querySelectorAll('.legend-item').forEach((e, i) => { e.style.color = COLOURS[i % COLOURS.length]; });
    if (all.length === 0) { now.textContent = 'no data yet'; return; }
    now.textContent = shown.filter(s => s.vals.length).map(s => (s.label ? s.label + ' ' : '') + fmt(s.vals[s.vals.length - 1].v)).join(' · ');
    let lo = Math.min(0, ...all.map(p => p.v)), hi = Math.max(0, ...all.map(p => p.v));
    if (hi === lo) hi = lo + 1;
    const t0 = Math.min(...times), t1 = Math.max(Math.max(...times), t0 + 1);
    const x = t => left + (W - left - right) * (t - t0) / (t1 - t0);
    const y = v => H - bottom - (H - top - bottom) * (v - lo) / (hi - lo);
    toX = x;
    ctx.strokeStyle = '#c5cbd5'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(left, y(0)); ctx.lineTo(W - right, y(0)); ctx.stroke();
    ctx.setLineDash([4, 4]);
    ctx.beginPath(); ctx.moveTo(left, y(hi)); ctx.lineTo(W - right, y(hi)); ctx.stroke();
    ctx.setLineDash([]);
    shown.forEach((s, i) => {
      ctx.strokeStyle = COLOURS[i % COLOURS.length]; ctx.lineWidth = 3; ctx.beginPath();
      let first = true;
      for (const p of s.vals) { if (first) { ctx.moveTo(x(p.t), y(p.v)); first = false; } else ctx.lineTo(x(p.t), y(p.v)); }
      ctx.stroke();
    });
    ctx.fillStyle = '#667085'; ctx.font = '18px system-ui';
    ctx.textAlign = 'left'; ctx.fillText(fmt(hi), left, 20); // above the dashed top line, never on the curve
    ctx.fillText(clock(t0), left, H - 4);
    ctx.textAlign = 'center'; ctx.fillText(clock((t0 + t1) / 2), W / 2, H - 4);
    ctx.textAlign = 'right'; ctx.fillText(clock(t1), W - right, H - 4);
    ctx.textAlign = 'left';
  }
  return { el, draw };
}

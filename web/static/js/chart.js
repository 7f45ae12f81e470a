// A small line chart on a canvas: values over time, a zero line, the
// scale's top value and the time axis in margins of their own, the latest
// value beside the title, and the value under the pointer.
import { h } from './dom.js';

const clock = (t) => new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

export function chart(title, fmt) {
  const canvas = h('canvas', { width: 600, height: 200 });
  const now = h('span', { class: 'now' }, '–');
  const hover = h('div', { class: 'muted small chart-hover' }, '\u00a0');
  const el = h('div', { class: 'card chart' }, h('div', { class: 'toolbar' }, h('span', {}, title), h('span', { class: 'spacer' }), now), canvas, hover);
  let shown = [];
  let toX = null;
  canvas.addEventListener('mousemove', (ev) => {
    if (!shown.length || !toX) return;
    const r = canvas.getBoundingClientRect();
    const px = (ev.clientX - r.left) * canvas.width / r.width;
    let best = shown[0];
    for (const p of shown) if (Math.abs(toX(p.t) - px) < Math.abs(toX(best.t) - px)) best = p;
    hover.textContent = `${clock(best.t)}: ${fmt(best.v)}`;
  });
  canvas.addEventListener('mouseleave', () => { hover.textContent = '\u00a0'; });

  function draw(points) { // [{t: ms, v: number|null}]
    const ctx = canvas.getContext('2d');
    const W = canvas.width, H = canvas.height, left = 6, right = 6, top = 28, bottom = 24;
    ctx.clearRect(0, 0, W, H);
    const vals = points.filter(p => p.v !== null && isFinite(p.v));
    shown = vals;
    if (vals.length === 0) { now.textContent = 'no data yet'; return; }
    now.textContent = fmt(vals[vals.length - 1].v);
    let lo = Math.min(0, ...vals.map(p => p.v)), hi = Math.max(0, ...vals.map(p => p.v));
    if (hi === lo) hi = lo + 1;
    const t0 = points[0].t, t1 = Math.max(points[points.length - 1].t, t0 + 1);
    const x = t => left + (W - left - right) * (t - t0) / (t1 - t0);
    const y = v => H - bottom - (H - top - bottom) * (v - lo) / (hi - lo);
    toX = x;
    ctx.strokeStyle = '#c5cbd5'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(left, y(0)); ctx.lineTo(W - right, y(0)); ctx.stroke();
    ctx.setLineDash([4, 4]);
    ctx.beginPath(); ctx.moveTo(left, y(hi)); ctx.lineTo(W - right, y(hi)); ctx.stroke();
    ctx.setLineDash([]);
    ctx.strokeStyle = '#2458d3'; ctx.lineWidth = 3; ctx.beginPath();
    let first = true;
    for (const p of vals) { if (first) { ctx.moveTo(x(p.t), y(p.v)); first = false; } else ctx.lineTo(x(p.t), y(p.v)); }
    ctx.stroke();
    ctx.fillStyle = '#667085'; ctx.font = '18px system-ui';
    ctx.textAlign = 'left'; ctx.fillText(fmt(hi), left, 20); // above the dashed top line, never on the curve
    ctx.fillText(clock(t0), left, H - 4);
    ctx.textAlign = 'center'; ctx.fillText(clock((t0 + t1) / 2), W / 2, H - 4);
    ctx.textAlign = 'right'; ctx.fillText(clock(t1), W - right, H - 4);
    ctx.textAlign = 'left';
  }
  return { el, draw };
}

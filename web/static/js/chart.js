// A small line chart on a canvas: values over time, zero line, latest value.
import { h } from './dom.js';

export function chart(title, fmt) {
  const canvas = h('canvas', { width: 600, height: 180 });
  const now = h('span', { class: 'now' }, '–');
  const el = h('div', { class: 'card chart' }, h('div', { class: 'toolbar' }, h('span', {}, title), h('span', { class: 'spacer' }), now), canvas);
  function draw(points) { // [{t: ms, v: number|null}]
    const ctx = canvas.getContext('2d');
    const W = canvas.width, H = canvas.height, pad = 6;
    ctx.clearRect(0, 0, W, H);
    const vals = points.filter(p => p.v !== null && isFinite(p.v));
    if (vals.length === 0) { now.textContent = 'no data yet'; return; }
    now.textContent = fmt(vals[vals.length - 1].v);
    let lo = Math.min(0, ...vals.map(p => p.v)), hi = Math.max(0, ...vals.map(p => p.v));
    if (hi === lo) hi = lo + 1;
    const t0 = points[0].t, t1 = Math.max(points[points.length - 1].t, t0 + 1);
    const x = t => pad + (W - 2 * pad) * (t - t0) / (t1 - t0);
    const y = v => H - pad - (H - 2 * pad) * (v - lo) / (hi - lo);
    ctx.strokeStyle = '#c5cbd5'; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(pad, y(0)); ctx.lineTo(W - pad, y(0)); ctx.stroke();
    ctx.strokeStyle = '#2458d3'; ctx.lineWidth = 3; ctx.beginPath();
    let first = true;
    for (const p of vals) { if (first) { ctx.moveTo(x(p.t), y(p.v)); first = false; } else ctx.lineTo(x(p.t), y(p.v)); }
    ctx.stroke();
    ctx.fillStyle = '#667085'; ctx.font = '20px system-ui';
    ctx.fillText(fmt(hi), pad + 2, 22);
  }
  return { el, draw };
}

// The first screen: a feed's day, week, month or year at a glance, drawn from one call,
// GET /feeds/{id}/overview (docs/api.md#overview), and kept live by the feed's live stream:
// now, so far and projected (money first, fixed charges as their own line), stacked bars per
// meter and sub-meter with export below zero, cost on an axis of its own and the compared
// period as a ghost, gas and water beside, baseload, coverage in words and the bill's warnings.
// Every chart has its table behind a toggle. Colours: Okabe and Ito's palette, told apart by
// colour-blind readers too.

import uPlot from '../vendor/uplot/uPlot.esm.js';
import { money, number } from './bill.js';
import { addDays, localDate, midnight, unixToWall } from './time.js';

const $ = (selector) => document.querySelector(selector);
// Okabe & Ito (2008): distinguishable with each kind of colour blindness.
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];
const EXPORT_COLOUR = '#009E73';
const COST_COLOUR = '#D55E00';
const GHOST_COLOUR = '#555555';
const MEDIA = { power: 'Electricity', gas: 'Gas', water: 'Water', heat: 'Heat', export: 'Fed in' };
const UNITS = { gas: 'm³', water: 'm³', heat: 'kWh' };
const STEP = { day: 'hour', week: 'day', month: 'day', year: 'month' };
const HEIGHT = 260;

let plots = [];

/** The period's dates around `date` moved by `step` periods (-1 back, 1 forward). */
export function shifted(period, date, step) {
  if (period === 'day') return addDays(date, step);
  if (period === 'week') return addDays(date, 7 * step);
  const [y, m] = date.split('-').map(Number);
  if (period === 'month') {
    const first = new Date(Date.UTC(y, m - 1 + step, 1)).toISOString().slice(0, 10);
    return first;
  }
  return `${y + step}-01-01`;
}

/**
 * The starts (Unix seconds) of every bucket of the period [from, to] (local dates): each local
 * hour (23 or 25 on DST days), day or month. A bucket the answer lacks has no data.
 */
export function slotsOf(period, from, to, zone) {
  const slots = [];
  if (period === 'day') {
    const end = midnight(zone, addDays(to, 1));
    // Hours are whole in every zone but a few; a local hour starts on the hour either way.
    for (let t = midnight(zone, from); t < end; t += 3600) slots.push(t);
    return slots;
  }
  if (period === 'year') {
    for (let m = 1; m <= 12; m++) slots.push(midnight(zone, `${from.slice(0, 4)}-${String(m).padStart(2, '0')}-01`));
    return slots;
  }
  for (let d = from; d <= to; d = addDays(d, 1)) slots.push(midnight(zone, d));
  return slots;
}

/** A bucket's name in the tables: its local hour, date or month. */
function slotName(period, zone, t) {
  const wall = unixToWall(zone, t);
  if (period === 'day') return wall.slice(11, 16);
  if (period === 'year') return wall.slice(0, 7);
  return wall.slice(0, 10);
}

/** Coverage in words. */
export function coverageWords(coverage, elapsedS) {
  if (elapsedS <= 0) return 'This period has not begun.';
  if (coverage <= 0) return 'No data for this period.';
  if (coverage >= 0.995) return 'Data for the whole period so far.';
  const missing = (1 - coverage) * elapsedS;
  const span = missing >= 2 * 86_400 ? `${Math.round(missing / 86_400)} days`
    : missing >= 2 * 3600 ? `${Math.round(missing / 3600)} hours` : `${Math.round(missing / 60)} minutes`;
  return `Data for ${Math.round(coverage * 100)} % of the period so far: about ${span} missing, shown as gaps, not as zeros.`;
}

/**
 * The stacked segments of electricity per bucket: each sub-meter, then each main meter less
 * the sub-meters it holds (carved from the main meters in order), so that a bar's height is
 * the power line's quantity. [{label, values}] over `slots`.
 */
export function stackOf(answer, slots) {
  const byStart = new Map(answer.buckets.map((b) => [b.start, b]));
  const power = answer.meters.filter((m) => m.medium === 'power');
  const subs = power.filter((m) => m.submeter);
  const mains = power.filter((m) => !m.submeter);
  const segments = [...subs, ...mains].map((m) => ({
    label: m.submeter ? `${m.title} (sub-meter)` : (subs.length ? `${m.title}, the rest` : m.title),
    stream: m.stream,
    values: [],
  }));
  for (const t of slots) {
    const b = byStart.get(t);
    if (!b || b.consumption.power === undefined) {
      for (const s of segments) s.values.push(null);
      continue;
    }
    let carve = 0;
    subs.forEach((m, i) => {
      const v = b.meters[m.stream] ?? 0;
      segments[i].values.push(v);
      carve += v;
    });
    mains.forEach((m, i) => {
      const v = b.meters[m.stream] ?? 0;
      const taken = Math.min(v, carve);
      carve -= taken;
      segments[subs.length + i].values.push(v - taken);
    });
  }
  return segments.filter((s) => s.values.some((v) => v));
}

function cumulative(segments) {
  const sums = [];
  let below = null;
  for (const s of segments) {
    const values = s.values.map((v, i) => (v === null ? null : v + (below?.[i] ?? 0)));
    sums.push(values);
    below = values;
  }
  return sums;
}

/** Destroys the charts (another feed, or signing out). */
export function clearOverview() {
  for (const p of plots) p.destroy();
  plots = [];
  $('#overview').hidden = true;
}

/** Fits the charts to their panels. */
export function resizeOverview() {
  for (const p of plots) p.setSize({ width: p.root.parentElement.clientWidth, height: p.height });
}

/**
 * Draws `answer` (the overview) into the first screen; `now` is the live state of "now"
 * (power_w, export_w, at), null to take the answer's. Resolves with the time it took to draw.
 */
export async function renderOverview(answer, zone, now = null) {
  const started = performance.now();
  $('#overview').hidden = false;
  const { currency } = answer;
  $('#ov-dates').textContent = answer.from === answer.to ? answer.from : `${answer.from} to ${answer.to}`;
  for (const b of document.querySelectorAll('[data-period]')) b.classList.toggle('active', b.dataset.period === answer.period);
  showOverviewNow(now ?? answer.now, answer, zone);
  // So far, money first; fixed charges as their own line.
  $('#ov-total').textContent = money(answer.so_far.total, currency);
  const lines = $('#ov-lines');
  lines.replaceChildren();
  for (const line of answer.so_far.lines) {
    const tr = row('td', [MEDIA[line.medium], money(line.money, currency), `${number(line.quantity, line.unit === 'kWh' ? 1 : 2)} ${line.unit}`]);
    tr.dataset.line = line.medium;
    lines.append(tr);
  }
  const fixed = row('td', ['Fixed charges', money(answer.so_far.standing, currency), '']);
  fixed.dataset.line = 'standing';
  lines.append(fixed);
  if (answer.so_far.vat) lines.append(row('td', ['of which VAT', money(answer.so_far.vat, currency), '']));
  const prices = [];
  if (answer.so_far.average_price !== null) prices.push(`You paid ${number(answer.so_far.average_price, 3)} ${currency}/kWh on average`);
  if (answer.so_far.market_average_price !== null) {
    prices.push(`a flat load would have paid ${number(answer.so_far.market_average_price, 3)}`);
  }
  $('#ov-average').textContent = prices.length ? `${prices.join('; ')}.` : '';
  const projected = answer.projection.total;
  $('#ov-projection').textContent = projected === null ? '–' : money(projected, currency);
  $('#ov-projection-note').textContent = projected === null
    ? 'Nothing to project: the period is over (or has not begun).'
    : 'At the pace so far, with the fixed charges of every day.';
  $('#ov-compare-total').textContent = answer.compare
    ? `${answer.compare.from === answer.compare.to ? answer.compare.from : `${answer.compare.from} to ${answer.compare.to}`}: ${money(answer.compare.total, currency)}`
    : '';
  // Baseload, coverage, warnings.
  $('#ov-baseload').textContent = answer.baseload_w === null
    ? 'Always on: not known (no night data).'
    : `Always on: ${number(answer.baseload_w, 0)} W, the quietest night hours' use (about ${number(answer.baseload_w * 8.76, 0)} kWh a year).`;
  const start = midnight(zone, answer.from);
  const end = midnight(zone, addDays(answer.to, 1));
  const elapsed = Math.min(Date.now() / 1000, end) - start;
  $('#ov-coverage').textContent = coverageWords(answer.coverage, elapsed);
  const warnings = $('#ov-warnings');
  warnings.replaceChildren(...answer.warnings.map((w) => Object.assign(document.createElement('li'), { textContent: w })));
  warnings.hidden = !answer.warnings.length;
  // The charts.
  for (const p of plots) p.destroy();
  plots = [];
  const slots = slotsOf(answer.period, answer.from, answer.to, zone);
  await drawElectricity(answer, slots, zone);
  await drawMedia(answer, slots, zone);
  return { drawMs: performance.now() - started };
}

/** "Now": live power, export and price. */
export function showOverviewNow(now, answer, zone) {
  $('#ov-now-power').textContent = now.power_w === null || now.power_w === undefined ? '–' : `${number(now.power_w, 0)} W`;
  const parts = [];
  if (now.export_w) parts.push(`feeding in ${number(now.export_w, 0)} W`);
  if (answer.now.price !== null) parts.push(`${number(answer.now.price, 3)} ${answer.currency}/kWh now`);
  if (now.at) parts.push(`at ${unixToWall(zone, now.at).slice(11, 16)}`);
  $('#ov-now-detail').textContent = parts.length ? parts.join(' · ') : 'Nothing measured in the last 15 minutes.';
}

function row(cell, texts) {
  const tr = document.createElement('tr');
  for (const text of texts) tr.append(Object.assign(document.createElement(cell), { textContent: text }));
  return tr;
}

/** A table behind the chart: a row per bucket, a column per series. */
function fillTable(table, period, zone, slots, columns) {
  table.replaceChildren(row('th', ['', ...columns.map((c) => c.label)]));
  slots.forEach((t, i) => {
    if (columns.every((c) => c.values[i] === null || c.values[i] === undefined)) return;
    table.append(row('td', [slotName(period, zone, t), ...columns.map((c) => (c.values[i] === null || c.values[i] === undefined ? '–' : number(c.values[i], c.digits ?? 2)))]));
  });
}

function ghostOf(answer, zone, medium) {
  if (!answer.compare) return null;
  const slots = slotsOf(answer.period, answer.compare.from, answer.compare.to, zone);
  const byStart = new Map(answer.compare.buckets.map((b) => [b.start, b]));
  return slots.map((t) => byStart.get(t)?.consumption[medium] ?? null);
}

async function drawElectricity(answer, slots, zone) {
  const element = $('#ov-chart');
  const byStart = new Map(answer.buckets.map((b) => [b.start, b]));
  const segments = stackOf(answer, slots);
  const sums = cumulative(segments);
  const exported = slots.map((t) => {
    const e = byStart.get(t)?.export;
    return e === null || e === undefined ? null : -e;
  });
  const cost = slots.map((t) => byStart.get(t)?.money ?? null);
  const ghost = ghostOf(answer, zone, 'power')?.slice(0, slots.length) ?? null;
  const width = element.clientWidth || 600;
  const bars = uPlot.paths.bars({ size: [0.8, 60], align: 0 });
  const series = [{ label: STEP[answer.period] }];
  const data = [slots];
  // Drawn from the top of the stack down, each bar over the one above it.
  for (let i = segments.length - 1; i >= 0; i--) {
    series.push({
      label: segments[i].label, scale: 'kWh', stroke: PALETTE[i % PALETTE.length],
      fill: PALETTE[i % PALETTE.length], paths: bars, points: { show: false }, width: 0,
      value: (u, v, si, di) => (di == null || segments[i].values[di] === null ? '–' : `${number(segments[i].values[di], 2)} kWh`),
    });
    data.push(sums[i]);
  }
  if (exported.some((v) => v !== null)) {
    series.push({ label: 'Fed in (below 0)', scale: 'kWh', stroke: EXPORT_COLOUR, fill: `${EXPORT_COLOUR}99`, paths: bars, points: { show: false }, width: 0 });
    data.push(exported);
  }
  if (ghost && ghost.some((v) => v !== null)) {
    series.push({ label: `Compared: ${answer.compare.from}…`, scale: 'kWh', stroke: GHOST_COLOUR, dash: [4, 3], width: 1.5, fill: 'transparent', paths: bars, points: { show: false } });
    data.push(slots.map((_, i) => ghost[i] ?? null));
  }
  series.push({ label: `Cost (${answer.currency})`, scale: 'money', stroke: COST_COLOUR, width: 2, points: { show: true, size: 5, fill: COST_COLOUR } });
  data.push(cost);
  const plot = await drawn(element, {
    width,
    height: HEIGHT,
    tzDate: (t) => uPlot.tzDate(new Date(t * 1000), zone),
    scales: {
      x: { time: true, range: () => [slots[0], slots.at(-1) + (slots.at(-1) - slots[0]) / Math.max(1, slots.length - 1)] },
      kWh: { range: (u, min, max) => [Math.min(0, min ?? 0) * 1.1, Math.max(0.001, max ?? 1) * 1.1] },
      money: { range: (u, min, max) => [Math.min(0, min ?? 0) * 1.1, Math.max(0.001, max ?? 1) * 1.1] },
    },
    series,
    axes: [{}, { scale: 'kWh', label: 'kWh', size: 50 }, { scale: 'money', side: 1, label: answer.currency, grid: { show: false }, size: 50 }],
    legend: { live: true },
  }, data);
  plots.push(plot);
  const columns = [
    ...segments.map((s) => ({ label: `${s.label} kWh`, values: s.values })),
    { label: 'Fed in kWh', values: exported.map((v) => (v === null ? null : -v)) },
    { label: `Cost ${answer.currency}`, values: cost },
  ];
  if (ghost) columns.push({ label: 'Compared kWh', values: ghost });
  fillTable($('#ov-chart-table'), answer.period, zone, slots, columns);
}

async function drawMedia(answer, slots, zone) {
  const panel = $('#ov-media');
  const media = ['gas', 'water', 'heat'].filter((m) => answer.meters.some((x) => x.medium === m)
    || answer.so_far.lines.some((l) => l.medium === m));
  panel.hidden = !media.length;
  if (!media.length) return;
  const byStart = new Map(answer.buckets.map((b) => [b.start, b]));
  const element = $('#ov-media-chart');
  const bars = uPlot.paths.bars({ size: [0.8, 60], align: 0 });
  const columns = media.map((m, i) => ({
    label: `${MEDIA[m]} ${UNITS[m]}`, medium: m, colour: [PALETTE[1], PALETTE[4], PALETTE[3]][i],
    values: slots.map((t) => byStart.get(t)?.consumption[m] ?? null),
  }));
  const plot = await drawn(element, {
    width: element.clientWidth || 600,
    height: 180,
    tzDate: (t) => uPlot.tzDate(new Date(t * 1000), zone),
    scales: { x: { time: true, range: () => [slots[0], slots.at(-1) + (slots.at(-1) - slots[0]) / Math.max(1, slots.length - 1)] } },
    series: [{ label: STEP[answer.period] }, ...columns.map((c) => ({
      label: c.label, stroke: c.colour, fill: c.colour, paths: bars, points: { show: false }, width: 0, scale: c.medium,
    }))],
    axes: [{}, ...columns.map((c, i) => ({ scale: c.medium, side: i === 0 ? 3 : 1, label: c.label, size: 50, grid: { show: i === 0 } }))],
  }, [slots, ...columns.map((c) => c.values)]);
  plots.push(plot);
  fillTable($('#ov-media-table'), answer.period, zone, slots, columns);
}

/** A uPlot chart, once its first frame is on the canvas. */
function drawn(element, options, data) {
  return new Promise((resolve) => {
    let done = false;
    options.hooks = { draw: [(u) => { if (!done) { done = true; resolve(u); } }] };
    element.replaceChildren();
    new uPlot(options, data, element); // eslint-disable-line no-new
  });
}

/** The feed's local today, and the period's dates around it. */
export function todayIn(zone) {
  return localDate(zone, Math.floor(Date.now() / 1000));
}


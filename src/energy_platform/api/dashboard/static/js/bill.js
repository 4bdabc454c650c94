// A feed's money: this month's bill so far with its projection, and what a kWh costs today and
// tomorrow, from the data API's bill and price endpoints (docs/billing.md#the-bill). Both are
// asked in the feed's local dates: its month and its days begin at midnight in its time zone,
// not in the reader's.

import { ApiError } from './api.js';
import { drawChart } from './chart.js';
import { addDays, localDate, midnight, monthOf, unixToWall } from './time.js';

const $ = (selector) => document.querySelector(selector);
const MEDIA = { power: 'Electricity', gas: 'Gas', water: 'Water', heat: 'Heat', export: 'Fed in' };
const UNITS = { power: 'kWh', export: 'kWh', heat: 'kWh', gas: 'm³', water: 'm³' };
const HEIGHT = 200;

let runs = 0; // the newest showMoney; an older one's answers arrive too late to be shown
let plot = null;
let curve = null; // the price chart's series and options as last drawn, for markPlan

const formats = new Map();

/** `value` with `digits` decimals, thousands grouped; a value that rounds to 0 has no sign. */
export function number(value, digits) {
  let format = formats.get(digits);
  if (!format) {
    format = new Intl.NumberFormat('en', {
      minimumFractionDigits: digits, maximumFractionDigits: digits, signDisplay: 'negative',
    });
    formats.set(digits, format);
  }
  return format.format(value);
}

/** An amount of money as the page shows it: `1,234.56 EUR`. */
export function money(value, currency) {
  return `${number(value, 2)} ${currency}`;
}

function quantity(value, unit) {
  return `${number(value, unit === 'kWh' ? 1 : 2)} ${unit}`;
}

/**
 * The bill of the feed's current month and its price curve of today and tomorrow, into the page's
 * money panels. Resolves with what it showed (for the page's tests), or null when a newer call
 * replaced this one. A 401 is thrown for the page to sign out; other failures show in the panel.
 */
export async function showMoney(api, feed, zone) {
  const run = ++runs;
  const now = Math.floor(Date.now() / 1000);
  // One clock reading for both: near midnight the month and the days must agree.
  const today = localDate(zone, now);
  const tomorrow = addDays(today, 1);
  const month = monthOf(today);
  const root = $('#money');
  if (root.dataset.feed !== feed.id) {
    // Another feed's figures must not stand under this one's name while its own are loading.
    hidePrices();
    clearBill();
  }
  root.hidden = false;
  root.dataset.feed = feed.id;
  root.dataset.state = 'loading';
  $('#bill-panel').dataset.state = 'loading';
  $('#price-panel').dataset.state = 'loading';
  $('#bill-note').textContent = 'Loading…';
  const [bill, prices] = await Promise.allSettled([
    api.bill(feed.id, month.first, month.last),
    api.prices(feed.id, today, tomorrow, 'power'),
  ]);
  if (run !== runs) return null;
  for (const result of [bill, prices]) {
    if (result.status === 'rejected' && result.reason instanceof ApiError && result.reason.status === 401) {
      throw result.reason;
    }
  }
  if (bill.status === 'fulfilled') renderBill(bill.value);
  else {
    clearBill();
    failed($('#bill-panel'), $('#bill-note'), `The bill could not be read: ${bill.reason.message}`);
  }
  let curve = null;
  if (prices.status === 'fulfilled') {
    curve = await renderPrices(prices.value, zone, today, now, run);
    if (run !== runs) return null;
  } else {
    hidePrices();
    const panel = $('#price-panel');
    panel.hidden = false;
    failed(panel, $('#price-note'), `The prices could not be read: ${prices.reason.message}`);
  }
  root.dataset.state = 'shown';
  return {
    feed: feed.id,
    now,
    bill: bill.status === 'fulfilled' ? bill.value : null,
    prices: prices.status === 'fulfilled' ? { answer: prices.value, ...curve } : null,
  };
}

/** Empties and hides the panels (signing out). */
export function clearMoney() {
  runs++;
  hidePrices();
  clearBill();
  $('#money').hidden = true;
  delete $('#money').dataset.feed;
}

/**
 * Draws the price curve again with `marks` ([[from, to], ...], Unix seconds) shaded instead of
 * the cheapest hours: a plan's blocks (plan.js).
 */
export async function markPlan(marks) {
  if (!curve || !plot) return;
  const run = runs;
  const element = $('#price-chart');
  plot.destroy();
  plot = null;
  const drawn = await drawChart(element, curve.series, {
    ...curve.options, width: element.clientWidth || 400, marks,
  });
  if (run !== runs) {
    drawn.plot.destroy();
    return;
  }
  plot = drawn.plot;
  $('#price-panel').dataset.plan = marks.map(([a, b]) => `${a}-${b}`).join(' ');
}

/** Fits the price chart to its panel's width. */
export function resizeMoney() {
  plot?.setSize({ width: $('#price-chart').clientWidth, height: HEIGHT });
}

function failed(panel, note, message) {
  panel.dataset.state = 'failed';
  note.textContent = message;
}

// --- the bill ---------------------------------------------------------------------------------

function clearBill() {
  for (const id of ['#bill-dates', '#bill-total', '#bill-projected']) $(id).textContent = '';
  $('#bill-projection').hidden = true;
  $('#bill-lines').replaceChildren();
  $('#bill-warnings').replaceChildren();
  $('#bill-warnings').hidden = true;
}

function renderBill(bill) {
  const { currency } = bill;
  const panel = $('#bill-panel');
  $('#bill-dates').textContent = `${bill.from} to ${bill.to}`;
  $('#bill-total').textContent = money(bill.total, currency);
  // A bill of nothing has nothing to project either.
  const projected = bill.lines.length ? bill.projected_total : null;
  $('#bill-projection').hidden = projected === null;
  $('#bill-projected').textContent = projected === null ? '' : money(projected, currency);
  const table = $('#bill-lines');
  table.replaceChildren();
  if (bill.lines.length) {
    table.append(row('th', ['', 'Used', 'Energy', 'Standing charges', 'Total']));
    for (const line of bill.lines) {
      const energy = line.medium === 'export'
        ? `${money(line.credit, currency)} earned` : money(line.energy, currency);
      const tr = row('td', [MEDIA[line.medium], quantity(line.quantity, line.unit), energy,
        money(line.standing, currency), money(line.total, currency)]);
      tr.dataset.line = line.medium;
      table.append(tr);
    }
  }
  if (bill.submeters.length) {
    const heading = row('th', ['Sub-meters (part of the lines above, not added again)']);
    heading.firstChild.colSpan = 5;
    table.append(heading);
    for (const meter of bill.submeters) {
      const tr = row('td', [meter.title, quantity(meter.quantity, meter.unit), money(meter.energy, currency), '', '']);
      tr.dataset.submeter = meter.stream;
      table.append(tr);
    }
  }
  // What may make the bill wrong (several meters added up, none marked main), as the API says it.
  const warnings = bill.warnings ?? [];
  $('#bill-warnings').replaceChildren(
    ...warnings.map((text) => Object.assign(document.createElement('li'), { textContent: text })));
  $('#bill-warnings').hidden = !warnings.length;
  const notes = [];
  if (!bill.lines.length) notes.push('Nothing metered or charged this month.');
  // `complete` is false all month long, and also for consumption a market price has not reached.
  else if (!bill.complete) {
    notes.push('Not final: the days still to come, and consumption whose price has not arrived'
      + ' yet, are not in it.');
  }
  if (projected !== null) notes.push('Projected: the days already over, averaged over the whole month.');
  if (bill.vat) notes.push(`The total includes ${money(bill.vat, currency)} VAT.`);
  $('#bill-note').textContent = notes.join(' ');
  panel.dataset.state = 'shown';
}

function row(cell, texts) {
  const tr = document.createElement('tr');
  for (const text of texts) tr.append(Object.assign(document.createElement(cell), { textContent: text }));
  return tr;
}

// --- the price curve --------------------------------------------------------------------------

function hidePrices() {
  plot?.destroy();
  plot = null;
  $('#price-chart').replaceChildren();
  for (const id of ['#price-kind', '#price-note']) $(id).textContent = '';
  $('#price-panel').hidden = true;
}

/**
 * Stretches of one price as points of a step line: each stretch starts a step; one that a gap
 * follows (or the last) ends with its own point, and a null after it breaks the line, so that a
 * time without a price shows as a gap rather than as the price before it.
 */
export function stepsOf(stretches) {
  const times = [];
  const values = [];
  stretches.forEach((s, i) => {
    times.push(s.start);
    values.push(s.price);
    const next = stretches[i + 1];
    if (next && next.start <= s.end) return;
    times.push(s.end);
    values.push(s.price);
    if (next && next.start > s.end + 1) {
      times.push(s.end + 1);
      values.push(null);
    }
  });
  return { times, values };
}

/** Seconds of [from, to) that some stretch prices. */
function covered(stretches, from, to) {
  return stretches.reduce((sum, s) => sum + Math.max(0, Math.min(s.end, to) - Math.max(s.start, from)), 0);
}

/**
 * What kind of curve this is: one price ('fixed'); bands that repeat each day ('bands'), which a
 * tariff of time-of-day prices gives; a few bands a day that differ from one day to the next
 * ('days': weekday and weekend or holiday bands); else prices that follow the market
 * ('market', a price a slot: 24 to 100 a day).
 */
function kindOf(stretches, zone, [from, split, to]) {
  if (new Set(stretches.map((s) => s.price)).size === 1) return 'fixed';
  const day = (a, b) => stretches.filter((s) => s.start >= a && s.start < b)
    .map((s) => `${unixToWall(zone, s.start).slice(11)}=${s.price}`).join(' ');
  const whole = covered(stretches, from, to) === to - from;
  if (whole && day(from, split) === day(split, to)) return 'bands';
  const few = (a, b) => stretches.filter((s) => s.start >= a && s.start < b).length <= 12;
  return whole && few(from, split) && few(split, to) ? 'days' : 'market';
}

async function renderPrices(answer, zone, today, now, run) {
  const panel = $('#price-panel');
  const { prices: stretches, currency } = answer;
  if (!stretches.length) {
    hidePrices();
    panel.dataset.state = 'none';
    return { kind: null, range: null };
  }
  const tomorrow = addDays(today, 1);
  const bounds = [midnight(zone, today), midnight(zone, tomorrow), midnight(zone, addDays(tomorrow, 1))];
  const range = [bounds[0], bounds[2]];
  const unit = `${currency}/${UNITS[answer.medium]}`;
  const kind = kindOf(stretches, zone, bounds);
  const shown = stretches.map((s) => s.price);
  const low = `${number(Math.min(...shown), 4)} ${unit}`;
  const high = `${number(Math.max(...shown), 4)} ${unit}`;
  $('#price-kind').textContent = {
    fixed: `A fixed price: ${low}, all day.`,
    bands: `Prices by time of day, the same each day: ${low} to ${high}.`,
    days: `Prices by time of day, by weekday and weekend (holidays count as weekend): ${low} to ${high}.`,
    market: `A dynamic tariff: the price follows the market, ${low} to ${high} over these two days.`,
  }[kind];
  const notes = [];
  if (covered(stretches, bounds[0], bounds[1]) < bounds[1] - bounds[0]) {
    notes.push('Part of today has no price (no tariff then): a gap in the curve.');
  }
  if (covered(stretches, bounds[1], bounds[2]) < bounds[2] - bounds[1]) {
    notes.push(kind === 'market'
      ? "Tomorrow's market prices are not all published yet (about 13:00 the day before): the"
        + ' curve has a gap until they are.'
      : 'Part of tomorrow has no price (no tariff then): a gap in the curve.');
  }
  const cheapest = [today, tomorrow].map((day, i) => ({
    day: i ? 'tomorrow' : 'today', hours: cheapestHours(stretches, bounds[i], bounds[i + 1]),
  }));
  const named = cheapest.filter((c) => c.hours.length)
    .map((c) => `${c.day} ${c.hours.map((h) => unixToWall(zone, h).slice(11, 13)).sort().map((h) => `${h}:00`).join(', ')}`);
  if (named.length) notes.push(`Cheapest hours (shaded): ${named.join('; ')}.`);
  notes.push('The dashed line is now.');
  $('#price-note').textContent = notes.join(' ');
  const { times, values } = stepsOf(stretches);
  panel.hidden = false; // before drawing: the chart takes the panel's width
  plot?.destroy();
  plot = null;
  const element = $('#price-chart');
  curve = {
    series: [{ label: 'Price', unit, steps: true, money: true, times, values }],
    options: { range, zone, height: HEIGHT, now },
  };
  const drawn = await drawChart(element, curve.series, {
    ...curve.options, width: element.clientWidth || 400,
    marks: cheapest.flatMap((c) => c.hours.map((h) => [h, h + 3600])),
  });
  if (run !== runs) {
    drawn.plot.destroy();
    return null;
  }
  plot = drawn.plot;
  panel.dataset.state = 'drawn';
  return { kind, range, times, values, cheapest };
}

/**
 * The `count` cheapest whole local hours of [from, to) by their time-weighted price, among the
 * hours priced throughout (an hour with a gap is not offered as cheap); their starts.
 */
export function cheapestHours(stretches, from, to, count = 3) {
  const hours = [];
  for (let t = from; t < to; t += 3600) {
    let paid = 0;
    let priced = 0;
    for (const s of stretches) {
      const overlap = Math.min(s.end, t + 3600) - Math.max(s.start, t);
      if (overlap > 0) { paid += s.price * overlap; priced += overlap; }
    }
    if (priced === 3600) hours.push({ t, price: paid / 3600 });
  }
  // Flat prices have no cheapest hours.
  if (new Set(hours.map((h) => h.price)).size < 2) return [];
  return hours.sort((a, b) => a.price - b.price || a.t - b.t).slice(0, count).map((h) => h.t);
}

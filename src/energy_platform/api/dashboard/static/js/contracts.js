// Which contract? The household's own months replayed through the catalogue's contracts beside
// its current one (POST /feeds/{id}/what-if, docs/api.md#what-if), over the default period: the
// last 12 whole local months. Totals ranked with their differences, monthly bars per contract,
// the market price achieved against the market average, and the months as a table behind a
// toggle. A year takes the server a few seconds: the panel says it is computing meanwhile, and
// a refusal (429 with Retry-After) or a failure is a message with a button to ask again.

import { ApiError } from './api.js';
import { money, number } from './bill.js';
import { PALETTE } from './overview.js';

const $ = (selector) => document.querySelector(selector);
// What one call may ask (billing/what_if.py MAX_CONTRACTS); the catalogue's first by name.
const MAX_CONTRACTS = 10;
const UNITS = { power: 'kWh', heat: 'kWh', gas: 'm³', water: 'm³' };
const BARS_HEIGHT = 140; // px
const CURRENT = 'current';

let runs = 0; // the newest comparison asked; an older answer arriving late is not shown
let context = null; // {api, feed}: what "Try again" asks for

/** The name the page gives a contract of the answer. */
function title(name) {
  return name === CURRENT ? 'Your contract' : name;
}

/**
 * Compares the feed's current contract with the catalogue's, unless the panel already shows (or
 * is computing) this feed's comparison: the money panels are read again when prices come in, and
 * past months do not change with them. Resolves with what it showed, or null when a newer call
 * replaced it. A 401 is thrown for the page to sign out; other failures show in the panel.
 */
export async function showContracts(api, feed) {
  const panel = $('#contracts-panel');
  if (panel.dataset.feed === feed.id && ['loading', 'shown', 'none'].includes(panel.dataset.state)) return null;
  context = { api, feed };
  return compare();
}

/** Hides and empties the panel (signing out). */
export function clearContracts() {
  runs++;
  context = null;
  const panel = $('#contracts-panel');
  delete panel.dataset.feed;
  panel.dataset.state = 'empty';
  panel.hidden = true;
  empty();
}

function empty() {
  for (const id of ['#contracts-dates', '#contracts-status', '#contracts-summary', '#contracts-market',
    '#contracts-note']) $(id).textContent = '';
  for (const id of ['#contracts-totals', '#contracts-bars', '#contracts-table']) $(id).replaceChildren();
  $('#contracts-retry').hidden = true;
  $('#contracts-status').classList.remove('error');
}

async function compare() {
  const run = ++runs;
  const { api, feed } = context;
  const panel = $('#contracts-panel');
  const stale = panel.dataset.feed !== feed.id;
  panel.hidden = false;
  panel.dataset.feed = feed.id;
  panel.dataset.state = 'loading';
  panel.setAttribute('aria-busy', 'true');
  if (stale) empty(); // another feed's figures must not stand under this one's name
  $('#contracts-retry').hidden = true;
  $('#contracts-status').classList.remove('error');
  $('#contracts-status').textContent = 'Reading the catalogue of contracts…';
  const started = performance.now();
  try {
    const catalogue = await api.contracts();
    if (run !== runs) return null;
    const offered = catalogue.filter((entry) => (entry.contract.medium ?? 'power') === 'power');
    if (!offered.length) {
      done(panel, 'none');
      empty();
      $('#contracts-status').textContent = 'The catalogue holds no electricity contracts to compare'
        + ' yours with yet (an operator adds them with admin contracts add).';
      return { feed: feed.id, asked: [], answer: null };
    }
    const asked = offered.slice(0, MAX_CONTRACTS).map((entry) => entry.name);
    $('#contracts-status').textContent = `Computing what your last 12 months would have cost on `
      + `${asked.length} contract${asked.length > 1 ? 's' : ''} of the catalogue, quarter hour by`
      + ' quarter hour: a year takes a few seconds…';
    const answer = await api.whatIf(feed.id, { contracts: asked.map((name) => ({ name })) });
    if (run !== runs) return null;
    render(answer, offered.length - asked.length);
    done(panel, 'shown');
    const shown = { feed: feed.id, asked, answer, ms: performance.now() - started };
    window.dashboard.whatIf = shown;
    return shown;
  } catch (error) {
    if (run !== runs) return null;
    if (error instanceof ApiError && error.status === 401) throw error;
    done(panel, 'failed');
    failed(error);
    return null;
  }
}

function done(panel, state) {
  panel.dataset.state = state;
  panel.removeAttribute('aria-busy');
}

/** A refusal or a failure, said in the panel (never a blank one), with a button to ask again. */
function failed(error) {
  const status = $('#contracts-status');
  status.classList.add('error');
  if (error instanceof ApiError && error.status === 429) {
    const wait = error.retryAfter === null ? 'in a moment' : `in ${error.retryAfter} s`;
    status.textContent = `The server is busy with other comparisons: try again ${wait}.`;
  } else {
    status.textContent = `The contracts could not be compared: ${error.message}`;
  }
  $('#contracts-retry').hidden = false;
}

// --- drawing ----------------------------------------------------------------------------------

function cells(tag, texts) {
  const tr = document.createElement('tr');
  for (const text of texts) tr.append(Object.assign(document.createElement(tag), { textContent: text }));
  return tr;
}

function signed(value, currency) {
  return `${value > 0.005 ? '+' : ''}${money(value, currency)}`;
}

function perUnit(value, currency, unit) {
  return value === null || value === undefined ? '–' : `${number(value, 4)} ${currency}/${unit}`;
}

/** Σ energy ÷ Σ quantity over the months: what a unit cost on average, VAT included. */
function averagePrice(contract) {
  const quantity = contract.months.reduce((sum, m) => sum + m.quantity, 0);
  const energy = contract.months.reduce((sum, m) => sum + m.energy, 0);
  return quantity > 0 ? energy / quantity : null;
}

/** "Nov 2025" of "2025-11". */
function monthName(month, long = false) {
  const date = new Date(`${month}-01T00:00:00Z`);
  return date.toLocaleString('en', { month: 'short', year: long ? 'numeric' : undefined, timeZone: 'UTC' });
}

function render(answer, leftOut) {
  const { currency, contracts } = answer;
  const unit = UNITS[answer.medium] ?? 'kWh';
  const colour = new Map(contracts.map((c, i) => [c.name, PALETTE[i % PALETTE.length]]));
  const months = contracts[0].months.map((m) => m.month);
  $('#contracts-dates').textContent = months.length
    ? `${monthName(months[0], true)} to ${monthName(months.at(-1), true)}` : `${answer.from} to ${answer.to}`;
  $('#contracts-status').textContent = '';
  $('#contracts-status').classList.remove('error');

  // Totals, cheapest first; the current contract stands among them by its rank.
  const ranked = contracts.map((c, i) => ({ c, i })).sort((a, b) => a.c.rank - b.c.rank || a.i - b.i).map((x) => x.c);
  const table = $('#contracts-totals');
  table.replaceChildren(cells('th', ['', 'Contract', 'Total', 'Difference', `Energy per ${unit}`]));
  for (const contract of ranked) {
    const tr = cells('td', [
      `${contract.rank}.`, title(contract.name), money(contract.total, currency),
      contract.name === CURRENT ? 'yours' : signed(contract.difference, currency),
      perUnit(averagePrice(contract), currency, unit),
    ]);
    tr.dataset.contract = contract.name;
    const swatch = Object.assign(document.createElement('span'), { className: 'swatch' });
    swatch.style.background = colour.get(contract.name);
    tr.cells[1].prepend(swatch);
    if (contract.name === CURRENT) tr.classList.add('current');
    table.append(tr);
  }

  // In words: which is cheapest, by how much, and up to what markup it stays so.
  const current = contracts.find((c) => c.name === CURRENT);
  const [cheapest] = ranked;
  const summary = [];
  if (cheapest.name === CURRENT || cheapest.difference > -0.005) {
    summary.push(`Your contract was the cheapest of these ${contracts.length} over these months.`);
  } else {
    summary.push(`${cheapest.name} would have cost ${money(-cheapest.difference, currency)} less than your `
      + `contract (${money(cheapest.total, currency)} instead of ${money(current.total, currency)}).`);
    if (cheapest.break_even !== undefined && cheapest.break_even !== null) {
      summary.push(`It stays cheaper unless its price rises by more than ${perUnit(cheapest.break_even, currency, unit)}`
        + ' before VAT.');
    }
  }
  $('#contracts-summary').textContent = summary.join(' ');

  drawBars(contracts, months, colour, currency);

  // The price the household's load achieved on the market against the market's average.
  const market = contracts.filter((c) => c.market_average_price !== undefined && c.market_average_price !== null);
  $('#contracts-market').replaceChildren(...market.map((c) => {
    const p = document.createElement('p');
    p.dataset.contract = c.name;
    const achieved = c.load_shape_factor === null || c.load_shape_factor === undefined
      ? null : c.load_shape_factor * c.market_average_price;
    p.textContent = achieved === null
      ? `${title(c.name)}: the market averaged ${perUnit(c.market_average_price, currency, unit)}; no consumption to`
        + ' weigh it by.'
      : `${title(c.name)}: your load bought the market at ${perUnit(achieved, currency, unit)} against its average`
        + ` of ${perUnit(c.market_average_price, currency, unit)} (× ${number(c.load_shape_factor, 2)}: `
        + `${c.load_shape_factor <= 1 ? 'you use more when the market is cheap' : 'you use more when the market is dear'}).`;
    return p;
  }));

  drawTable(contracts, currency, unit);

  const notes = [answer.note];
  if (current.months.some((m) => m.coverage < 0.995)) {
    notes.push('Months with gaps in the data (their coverage in the table) are priced as measured, never'
      + ' scaled up.');
  }
  const incomplete = contracts.filter((c) => !c.complete).map((c) => title(c.name));
  if (incomplete.length) {
    notes.push(`Not complete: ${incomplete.join(', ')} (a day not over yet, or quarter hours without a price,`
      + ' which are left out).');
  }
  if (leftOut > 0) notes.push(`The catalogue has ${leftOut} more contract(s); the first ${MAX_CONTRACTS} by name are compared.`);
  notes.push('Totals include VAT and standing charges, less what export earns.');
  $('#contracts-note').textContent = notes.join(' ');
}

/**
 * A group of bars per month, one bar per contract in its colour, heights to one scale; a month
 * whose export earned more than it cost goes below the line.
 */
function drawBars(contracts, months, colour, currency) {
  const root = $('#contracts-bars');
  const totals = contracts.flatMap((c) => c.months.map((m) => m.total));
  const high = Math.max(0, ...totals);
  const low = Math.max(0, ...totals.map((t) => -t));
  const scale = high + low > 0 ? BARS_HEIGHT / (high + low) : 0;
  const legend = document.createElement('p');
  legend.className = 'legend';
  for (const c of contracts) {
    const item = Object.assign(document.createElement('span'), { textContent: title(c.name) });
    const swatch = Object.assign(document.createElement('span'), { className: 'swatch' });
    swatch.style.background = colour.get(c.name);
    item.prepend(swatch);
    legend.append(item);
  }
  const grid = document.createElement('div');
  grid.className = 'month-bars';
  months.forEach((month, k) => {
    const column = document.createElement('div');
    column.className = 'month';
    column.dataset.month = month;
    const up = Object.assign(document.createElement('div'), { className: 'up' });
    const down = Object.assign(document.createElement('div'), { className: 'down' });
    up.style.height = `${high * scale}px`;
    down.style.height = `${low * scale}px`;
    for (const c of contracts) {
      const { total } = c.months[k];
      const bar = Object.assign(document.createElement('span'), { className: 'bar' });
      bar.dataset.contract = c.name;
      bar.style.background = colour.get(c.name);
      bar.style.height = `${Math.abs(total) * scale}px`;
      bar.title = `${monthName(month, true)}, ${title(c.name)}: ${money(total, currency)}`;
      const other = Object.assign(document.createElement('span'), { className: 'bar' });
      (total >= 0 ? up : down).append(bar);
      (total >= 0 ? down : up).append(other);
    }
    const label = Object.assign(document.createElement('span'), { className: 'label', textContent: monthName(month) });
    column.append(up, down, label);
    grid.append(column);
  });
  root.replaceChildren(legend, grid);
  root.setAttribute('aria-label', `the total of each month per contract, ${currency}; the numbers are in the table`);
}

/** The months behind the bars: a row per month and contract, the answer's figures. */
function drawTable(contracts, currency, unit) {
  const table = $('#contracts-table');
  table.replaceChildren(cells('th', ['Month', 'Contract', `Used ${unit}`, 'Fed in kWh', 'Energy', 'Standing',
    'Credit', 'VAT', 'Total', `Per ${unit}`, 'Market average', 'Coverage', '']));
  contracts[0].months.forEach((first, k) => {
    for (const c of contracts) {
      const m = c.months[k];
      const tr = cells('td', [
        monthName(m.month, true), title(c.name), number(m.quantity, 1), number(m.export, 1),
        money(m.energy, currency), money(m.standing, currency), money(m.credit, currency), money(m.vat, currency),
        money(m.total, currency), perUnit(m.average_price, currency, unit),
        perUnit(m.market_average_price, currency, unit), `${Math.round(m.coverage * 100)} %`,
        m.complete ? '' : 'not complete',
      ]);
      tr.dataset.month = m.month;
      tr.dataset.contract = c.name;
      table.append(tr);
    }
  });
}

/** "Try again" after a refusal or a failure: the same comparison asked again. */
export async function retryContracts() {
  return context ? compare() : null;
}

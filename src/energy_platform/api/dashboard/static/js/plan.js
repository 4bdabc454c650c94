// When to run it: the cheapest start from now for a load of a duration at a power, at the
// household's all-in price, up to the end of the prices known (GET /feeds/{id}/plan,
// docs/api.md#plan); the plan is drawn on the price curve and set against starting now.

import { markPlan, money } from './bill.js';
import { localDate } from './time.js';

const $ = (selector) => document.querySelector(selector);

let context = null; // the feed the panel plans for: {api, feed, zone}
let runs = 0; // the newest plan asked; an older answer arriving late is not shown
let planned = []; // the shown plan's blocks, [[from, to], ...] in Unix seconds
let asked = null; // the load of the newest plan asked: {duration, power_kw}

/** Shows the panel for a feed whose prices are drawn (`curve`: what the price panel drew). */
export function showPlan(api, feed, zone, curve) {
  const panel = $('#plan-panel');
  context = { api, feed, zone };
  panel.hidden = !curve?.kind;
  if (panel.dataset.feed === feed.id && panel.dataset.state === 'shown') {
    // The same feed's money read again: its curve was drawn anew, the plan still holds.
    markPlan(planned);
    return;
  }
  runs++;
  planned = [];
  asked = null;
  panel.dataset.feed = feed.id;
  panel.dataset.state = 'ready';
  $('#plan-answer').textContent = '';
  $('#plan-note').textContent = '';
}

/** Hides and empties the panel (another feed without prices, signing out). */
export function clearPlan() {
  runs++;
  context = null;
  planned = [];
  asked = null;
  delete $('#plan-panel').dataset.feed;
  $('#plan-panel').hidden = true;
  $('#plan-panel').dataset.state = 'empty';
  $('#plan-answer').textContent = '';
  $('#plan-note').textContent = '';
}

/** The day of a local ISO time, said as a person would from today in the feed's zone. */
function dayOf(local, zone) {
  const today = localDate(zone, Math.floor(Date.now() / 1000));
  const day = local.slice(0, 10);
  if (day === today) return 'today';
  const tomorrow = new Date(`${today}T00:00:00Z`);
  tomorrow.setUTCDate(tomorrow.getUTCDate() + 1);
  return day === tomorrow.toISOString().slice(0, 10) ? 'tomorrow' : day;
}

function render(answer, zone) {
  const notes = [];
  if (answer.status === 'infeasible') {
    $('#plan-answer').textContent = 'Not enough priced time ahead for this load: try a shorter one.';
  } else {
    const [first] = answer.blocks;
    const last = answer.blocks[answer.blocks.length - 1];
    const cost = money(answer.cost, answer.currency);
    let text = `Start ${dayOf(first.start, zone)} at ${first.start.slice(11, 16)}, until `
      + `${last.end.slice(11, 16)}: ${cost}`;
    if (answer.saving !== null && answer.saving > 0.005) {
      text += `, ${money(answer.saving, answer.currency)} less than starting now `
        + `(${money(answer.cost_if_started_now, answer.currency)})`;
    } else if (answer.saving !== null) {
      text += ', as cheap as starting now';
    }
    $('#plan-answer').textContent = `${text}.`;
    notes.push('The planned time is shaded on the price curve.');
  }
  if (answer.prices_known_until) {
    notes.push(`Prices are known until ${dayOf(answer.prices_known_until, zone)} `
      + `${answer.prices_known_until.slice(11, 16)}; the plan looks no further.`);
  }
  notes.push(answer.note);
  $('#plan-note').textContent = notes.join(' ');
}

/**
 * Asks the shown plan again: more prices are known (the live `prices` event), and its cheapest
 * start may now lie in them. A panel without a plan shown waits for its form.
 */
export async function replan() {
  if (context && asked && $('#plan-panel').dataset.state === 'shown') await ask(asked);
}

async function submit(event) {
  event.preventDefault();
  await ask({ duration: $('#plan-duration').value, power_kw: $('#plan-power').value });
}

/** Plans the load `params` (the form's when it was sent: a replan asks the same load). */
async function ask(params) {
  if (!context) return;
  const run = ++runs;
  const { api, feed, zone } = context;
  const panel = $('#plan-panel');
  panel.dataset.state = 'loading';
  asked = params;
  let answer;
  try {
    answer = await api.plan(feed.id, params);
  } catch (error) {
    if (run !== runs) return;
    panel.dataset.state = 'failed';
    $('#plan-answer').textContent = `No plan: ${error.message}`;
    return;
  }
  if (run !== runs) return;
  render(answer, zone);
  planned = answer.blocks.map((b) => [Date.parse(b.start_utc) / 1000, Date.parse(b.end_utc) / 1000]);
  await markPlan(planned);
  if (run !== runs) return;
  window.dashboard.plan = answer;
  panel.dataset.state = 'shown';
}

$('#plan-form').addEventListener('submit', submit);

// The page: sign in with a token, a user's feeds; a feed opens on its overview (overview.js:
// one call, kept live), then its streams by channel, charts of the chosen streams over a range,
// its bill and prices, and the notifications. The open feed is followed live: the overview's
// "now" and "so far", each stream's newest value, and charts that grow. Only the public data API
// is used.

import { Api, ApiError } from './api.js';
import { clearMoney, number, resizeMoney, showMoney } from './bill.js';
import { clearContracts, retryContracts, showContracts } from './contracts.js';
import { clearPlan, replan, showPlan } from './plan.js';
import { drawChart } from './chart.js';
import { LiveFeed } from './live.js';
import { renderNotifications } from './notifications.js';
import { clearOverview, renderOverview, resizeOverview, shifted, showOverviewNow } from './overview.js';
import { bucketed, bucketFor, dropBefore, merge, negated, withGaps } from './series.js';
import { TYPES, byChannel, currentConfig, describe, firstChoice } from './streams.js';
import { offsetsOf, unixToWall, wallToUnix } from './time.js';

const $ = (selector) => document.querySelector(selector);
const SPANS = { hour: 3600, day: 86_400, week: 604_800, month: 30 * 86_400 };
// Beyond 30 days the page asks the server for buckets (`resolution`): one request per stream.
const LONG = SPANS.month + 3600;
const CREDENTIALS = 'energy-platform.credentials';
// A view that ends this close to now (seconds) follows the live points: it keeps its span and
// moves on with them. One that ends earlier stays where it is.
const FOLLOW_SLACK = 120;
// Live points are drawn at most this often (ms): a batch of many streams is one redraw.
const REDRAW_MS = 250;

const state = {
  api: null, userId: null, feeds: [], feed: null, zone: 'UTC', streams: [], selected: new Set(),
  range: null, loaded: null, plot: null, chartRun: 0, notifications: [], opening: null,
  pinned: null, // a resolution the view fixes: 'month' in the Year view, 'day' in a month of it
  live: null, // the open feed's LiveFeed
  now: new Map(), // stream id -> [t, v]: its newest point or bucket, as the page last heard
  charted: null, // what the chart shows: its streams, their points as loaded and grown, its range
  backlog: null, // live points that came while the chart was loading: merged once it has loaded
  asked: new Set(), // streams the live events named that the page read the stream list for
  redraw: null, // the pending redraw of live points
  // The overview: what it shows, its newest answer, the live buckets of its meters
  // (stream id -> [t, value]) and its pending re-read.
  ov: { period: 'day', date: null, compare: 'previous', answer: null, run: 0, live: new Map(), reread: null },
};
// The overview is read again at most this often (ms) while live buckets come in.
const OVERVIEW_REREAD_MS = 2000;
// What the last chart took, for people and for the page's tests (read with execute_script);
// `money`: the bill and prices the money panels show; `live`: the LiveFeed of the open feed.
// `overview`: the overview's answer as drawn, with how long reading and drawing it took.
// `whatIf`: Which contract?'s names asked, its answer as drawn and how long it took.
window.dashboard = { last: null, money: null, live: null, overview: null, whatIf: null };

// --- credentials: in this browser only (sessionStorage, or localStorage when remembered) ------

function storedCredentials() {
  const text = sessionStorage.getItem(CREDENTIALS) ?? localStorage.getItem(CREDENTIALS);
  try { return text ? JSON.parse(text) : null; } catch { return null; }
}

function forget() {
  sessionStorage.removeItem(CREDENTIALS);
  localStorage.removeItem(CREDENTIALS);
}

async function signIn(userId, token, remember) {
  const api = new Api(token);
  const feeds = await api.feeds(userId);
  forget();
  (remember ? localStorage : sessionStorage).setItem(CREDENTIALS, JSON.stringify({ userId, token }));
  Object.assign(state, { api, userId, feeds });
  $('#sign-in-panel').hidden = true;
  $('#app').hidden = false;
  $('#sign-out').hidden = false;
  $('#who').textContent = `user ${userId}`;
  renderFeeds();
  await loadNotifications();
  if (feeds.length === 1) await openFeed(feeds[0]);
}

function signOut(message = '') {
  forget();
  location.hash = '';
  stopLive();
  state.plot?.destroy();
  clearMoney();
  clearPlan();
  clearContracts();
  clearOverview();
  Object.assign(state, {
    api: null, userId: null, feeds: [], feed: null, plot: null, opening: null, charted: null, backlog: null,
  });
  $('#app').hidden = true;
  $('#sign-out').hidden = true;
  $('#who').textContent = '';
  $('#sign-in-panel').hidden = false;
  $('#sign-in-error').textContent = message;
}

function explain(error) {
  if (error instanceof ApiError && error.status === 401) return 'The server does not know this token.';
  if (error instanceof ApiError && error.status === 404) return 'No such user for this token (check the user id).';
  return error.message;
}

/** Runs `work`, showing its error; a token the server no longer accepts signs out. */
async function guarded(work) {
  try {
    $('#error').textContent = '';
    await work();
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) signOut(explain(error));
    else $('#error').textContent = explain(error);
  }
}

// --- feeds and streams ------------------------------------------------------------------------

function feedTitle(feed) {
  return feed.configs.at(-1)?.title || `Feed ${feed.id}`;
}

function renderFeeds() {
  const list = $('#feeds');
  list.replaceChildren();
  if (!state.feeds.length) list.append(Object.assign(document.createElement('li'), { textContent: 'No feeds.', className: 'muted' }));
  for (const feed of state.feeds) {
    const item = document.createElement('li');
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.feed = feed.id;
    b.textContent = feedTitle(feed);
    b.addEventListener('click', () => guarded(() => openFeed(feed)));
    item.append(b);
    list.append(item);
  }
}

async function openFeed(feed) {
  if (state.opening === feed.id) return; // already open (or opening)
  state.opening = feed.id;
  let streams;
  try {
    streams = await state.api.streams(feed.id);
  } catch (error) {
    if (state.opening === feed.id) state.opening = state.feed?.id ?? null; // a click may retry
    throw error;
  }
  if (state.opening !== feed.id) return; // another feed was chosen meanwhile
  const config = feed.configs.at(-1);
  stopLive();
  Object.assign(state, {
    feed, streams, zone: config?.timezone || 'UTC', selected: new Set(), now: new Map(), asked: new Set(),
  });
  for (const b of document.querySelectorAll('[data-feed]')) b.classList.toggle('active', b.dataset.feed === feed.id);
  $('#feed-title').textContent = feedTitle(feed);
  $('#feed-details').textContent = `feed ${feed.id} · time zone ${state.zone} · subscription `
    + `${feed.subscription.from.slice(0, 10)} to ${feed.subscription.to.slice(0, 10)} · ${streams.length} streams`;
  $('#chart-tools').hidden = !streams.length;
  const first = firstChoice(streams);
  if (first) state.selected.add(first.id);
  renderStreams();
  setRange('day');
  state.ov = { ...state.ov, date: null, answer: null, live: new Map() };
  startLive(feed);
  await Promise.all([overview(), chart(), money(), contracts()]);
}

/** Which contract? the open feed's last 12 months on the catalogue's contracts (contracts.js). */
async function contracts() {
  const shown = await showContracts(state.api, state.feed);
  if (shown) window.dashboard.whatIf = shown;
}

/** Reads and draws the overview of the open feed, as state.ov says. */
async function overview() {
  const run = ++state.ov.run;
  const { period, date, compare } = state.ov;
  const feed = state.feed;
  $('#overview').dataset.state = 'loading';
  const started = performance.now();
  const answer = await state.api.overview(feed.id, { period, date, compare });
  const fetchMs = performance.now() - started;
  if (run !== state.ov.run || state.feed !== feed) return;
  state.ov.answer = answer;
  const { drawMs } = await renderOverview(answer, state.zone, liveNow());
  if (run !== state.ov.run) return;
  $('#overview').dataset.state = 'drawn';
  window.dashboard.overview = { answer, fetchMs, drawMs, totalMs: performance.now() - started };
}

/** The counted electricity meters and export of the overview: which live buckets are "now". */
function nowMeters() {
  const meters = state.ov.answer?.meters ?? [];
  return new Map(meters.filter((m) => !m.submeter && m.medium !== 'gas' && m.medium !== 'water')
    .map((m) => [m.stream, m.medium]));
}

/** "Now" from the live buckets heard since the overview was read, else null (the answer's). */
function liveNow() {
  const meters = nowMeters();
  let at = null;
  for (const [stream, [t]] of state.ov.live) if (meters.has(stream) && (at === null || t > at)) at = t;
  if (at === null || at < (state.ov.answer?.now.at ?? 0)) return null;
  const sum = (medium) => {
    let total = null;
    for (const [stream, [t, v]] of state.ov.live) {
      if (meters.get(stream) === medium && v !== null && at - t < 900) total = (total ?? 0) + v * 40;
    }
    return total;
  };
  return { power_w: sum('power'), export_w: sum('export'), at };
}

/** A live bucket of one of the overview's meters: "now" moves, and "so far" is read again. */
function overviewLive(stream, points) {
  const answer = state.ov.answer;
  if (!answer || !answer.meters.some((m) => m.stream === stream)) return;
  let newest = state.ov.live.get(stream) ?? null;
  for (const point of points) if (!newest || point[0] >= newest[0]) newest = point;
  if (newest) state.ov.live.set(stream, newest);
  const now = liveNow();
  if (now) {
    showOverviewNow(now, answer, state.zone);
    window.dashboard.overview.now = now;
  }
  // Only a period that holds now changes with live data.
  const today = Date.now() / 1000;
  if (!state.ov.reread && today >= wallToUnix(state.zone, `${answer.from}T00:00:00`)
      && today < wallToUnix(state.zone, `${answer.to}T00:00:00`) + 90_000) {
    state.ov.reread = setTimeout(() => {
      state.ov.reread = null;
      guarded(overview);
    }, OVERVIEW_REREAD_MS);
  }
}

async function money() {
  // Another feed's plan must not stand under this one's name while its money is loading.
  if ($('#plan-panel').dataset.feed !== state.feed.id) clearPlan();
  const shown = await showMoney(state.api, state.feed, state.zone);
  if (!shown) return;
  window.dashboard.money = shown;
  showPlan(state.api, state.feed, state.zone, shown.prices);
}

/**
 * `prices`: the next day's prices of the open feed's area are in. The price curve is read and
 * drawn again with them, and a plan shown is asked again: it may now start in them. No page
 * reload; the chart and the overview are left as they are.
 */
async function pricesIn() {
  const feed = state.feed;
  await money();
  if (state.feed === feed) await replan();
}

function renderStreams() {
  const root = $('#streams');
  root.replaceChildren();
  for (const [channel, groups] of byChannel(state.streams)) {
    const section = document.createElement('section');
    section.className = 'channel';
    section.dataset.channel = channel;
    section.append(Object.assign(document.createElement('h3'), { textContent: `Channel ${channel}` }));
    for (const type of TYPES) {
      if (!groups[type].length) continue;
      const table = document.createElement('table');
      table.className = 'streams';
      table.dataset.type = type;
      table.createCaption().textContent = type;
      for (const stream of groups[type]) table.append(streamRow(stream));
      section.append(table);
    }
    root.append(section);
  }
}

function streamRow(stream) {
  const d = describe(stream);
  const row = document.createElement('tr');
  const pick = Object.assign(document.createElement('input'), { type: 'checkbox', checked: state.selected.has(stream.id) });
  pick.dataset.stream = stream.id;
  pick.setAttribute('aria-label', `chart ${d.title}`);
  pick.addEventListener('change', () => {
    if (pick.checked) state.selected.add(stream.id); else state.selected.delete(stream.id);
    guarded(chart);
  });
  const name = Object.assign(document.createElement('button'), { type: 'button', className: 'link', textContent: d.title });
  name.title = 'chart only this stream';
  name.addEventListener('click', () => {
    state.selected = new Set([stream.id]);
    for (const box of document.querySelectorAll('#streams input[data-stream]')) box.checked = box.dataset.stream === stream.id;
    guarded(chart);
  });
  const cells = [document.createElement('td'), document.createElement('td'), document.createElement('td'),
    document.createElement('td')];
  cells[0].className = 'pick';
  cells[0].append(pick);
  const config = currentConfig(stream);
  cells[1].append(name, ' ', Object.assign(document.createElement('span'), {
    className: 'muted', textContent: [d.unit, d.detail].filter(Boolean).join(' · '),
  }));
  if (config) cells[1].title = `current configuration: ${JSON.stringify(config)}`;
  cells[2].className = 'now';
  cells[2].dataset.stream = stream.id;
  showNow(cells[2], stream);
  cells[3].className = 'id';
  cells[3].textContent = `#${stream.id}`;
  row.append(...cells);
  return row;
}

/** A stream's newest value into its cell: for power, what the household uses right now. */
function showNow(cell, stream) {
  const newest = state.now.get(stream.id);
  if (!newest) return;
  const [t, v] = newest;
  const { unit } = describe(stream);
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  cell.textContent = v === null ? '–' : `${number(v, digits)}${unit ? ` ${unit}` : ''}`;
  const at = unixToWall(state.zone, t).replace('T', ' ');
  cell.title = stream.type === 'processed' ? `the 90 s from ${at}` : `at ${at}`;
}

// --- range, zoom and pan ----------------------------------------------------------------------

function setRange(preset) {
  const to = Math.floor(Date.now() / 1000);
  state.pinned = null;
  if (preset === 'year') {
    // The feed's local calendar year so far, per month.
    const year = unixToWall(state.zone, to).slice(0, 4);
    state.range = { from: wallToUnix(state.zone, `${year}-01-01T00:00:00`), to };
    state.pinned = 'month';
  } else {
    state.range = { from: to - SPANS[preset], to };
  }
  for (const b of document.querySelectorAll('[data-range]')) b.classList.toggle('active', b.dataset.range === preset);
  showRange(state.range.from, state.range.to);
}

function showRange(from, to) {
  $('#range-from').value = unixToWall(state.zone, Math.floor(from));
  $('#range-to').value = unixToWall(state.zone, Math.ceil(to));
}

/** Shows [from, to]: a zoom within the loaded data redraws; anything else loads it. */
async function view(from, to) {
  const { loaded, plot } = state;
  if (plot && loaded && from >= loaded.from && to <= loaded.to) {
    plot.setScale('x', { min: from, max: to });
    return;
  }
  state.range = { from: Math.floor(from), to: Math.ceil(to) };
  state.pinned = null;
  for (const b of document.querySelectorAll('[data-range]')) b.classList.remove('active');
  showRange(from, to);
  await chart();
}

function visible() {
  const x = state.plot?.scales.x;
  return x && x.min != null ? { from: x.min, to: x.max } : state.range;
}

// --- the chart --------------------------------------------------------------------------------

/** The server-side resolution for a view, or null to fetch points (30 days or less). */
function resolutionFor(choice, from, to) {
  if (state.pinned) return state.pinned;
  if (choice === 'month') return 'month';
  if (to - from <= LONG) return null;
  if (choice === '3600') return 'hour';
  return to - from > 2 * 366 * 86_400 ? 'month' : 'day';
}

/** In the Year view a click on a month shows that month per day. */
function pickMonth(t) {
  if (state.pinned !== 'month' || !state.plot) return;
  const starts = state.plot.data[0];
  let i = starts.length - 1;
  while (i > 0 && starts[i] > t) i--;
  if (!starts.length || starts[i] > t) return;
  const [year, month] = unixToWall(state.zone, starts[i]).slice(0, 7).split('-').map(Number);
  const next = month === 12 ? `${year + 1}-01` : `${year}-${String(month + 1).padStart(2, '0')}`;
  const end = wallToUnix(state.zone, `${next}-01T00:00:00`) - 1;
  state.range = { from: starts[i], to: end };
  state.pinned = 'day';
  for (const b of document.querySelectorAll('[data-range]')) b.classList.remove('active');
  showRange(starts[i], end);
  guarded(chart);
}

async function chart() {
  const run = ++state.chartRun;
  const element = $('#chart');
  const status = $('#chart-status');
  const streams = state.streams.filter((s) => state.selected.has(s.id));
  const { from, to } = state.range;
  if (!streams.length) {
    state.plot?.destroy();
    Object.assign(state, { plot: null, charted: null, backlog: null });
    element.replaceChildren();
    element.dataset.state = 'empty';
    status.textContent = 'Tick streams to chart them.';
    return;
  }
  // The load reads a snapshot taken at some point after now: live points that come meanwhile
  // are kept and merged into it (merging is by time, so those already in it change nothing).
  state.backlog ??= [];
  element.dataset.state = 'loading';
  status.textContent = 'Loading…';
  const fetchStart = performance.now();
  const resolution = resolutionFor($('#bucket').value, from, to);
  let loaded;
  try {
    loaded = await Promise.all(streams.map((s) => (resolution
      ? state.api.buckets(state.feed.id, s.id, from, to, resolution)
      : state.api.points(state.feed.id, s.id, from, to))));
  } catch (error) {
    if (run === state.chartRun) state.backlog = null;
    throw error;
  }
  const fetchMs = performance.now() - fetchStart;
  if (run !== state.chartRun) return; // a newer request replaced this one
  const charted = {
    streams, from, to, resolution, fetchMs,
    bucket: resolution ? 0 : bucketFor($('#bucket').value, from, to),
    points: loaded.map((l) => l.times.length),
    requests: loaded.reduce((n, l) => n + l.requests, 0),
    sources: loaded.map(({ times, values }) => ({ times, values })),
    // The server's hour, day and month buckets are not grown from 90 s ones: those views only
    // read again when told to (reload).
    follow: !resolution && to >= Date.now() / 1000 - FOLLOW_SLACK,
  };
  state.plot?.destroy();
  Object.assign(state, { plot: null, charted, loaded: { from, to } });
  const backlog = state.backlog;
  state.backlog = null;
  for (const [stream, points] of backlog) grow(stream, points);
  charted.grown = false; // drawn below as they are now
  if (charted.follow) {
    charted.streams.forEach((stream, i) => {
      const { times, values } = charted.sources[i];
      if (times.length) noteNow(stream.id, [[times.at(-1), values.at(-1)]]);
    });
  }
  await draw(charted, run);
}

/** The points of `charted` as the chart draws them: summed, with gaps, negated. */
function shaped(charted) {
  const offsetOf = offsetsOf(state.zone);
  const { resolution, bucket } = charted;
  return charted.streams.map((stream, i) => {
    const d = describe(stream);
    const { times, values } = charted.sources[i];
    let drawn = { times, values };
    if (resolution) drawn = { times, values }; // the server's buckets, as they are
    else if (stream.type === 'processed' && bucket > 90) drawn = bucketed(times, values, bucket, offsetOf, d.sum);
    else if (!d.bars) drawn = withGaps(times, values);
    // Live points are merged into the sources in place: the chart's data is its own, changed
    // only by update().
    if (drawn.times === times) drawn = { times: times.slice(), values: values.slice() };
    if (d.below) drawn = negated(drawn);
    const label = `${d.title} #${stream.id}${d.below ? ', below 0' : ''}`;
    return { label, unit: d.unit, bars: d.bars, money: d.money, ...drawn };
  });
}

async function draw(charted, run) {
  const element = $('#chart');
  const status = $('#chart-status');
  const { streams, from, to, points, fetchMs, resolution, bucket, requests } = charted;
  if (!charted.sources.some((s) => s.times.length)) {
    element.replaceChildren();
    element.dataset.state = 'no-data';
    status.textContent = 'No points in this range.';
    window.dashboard.last = { streams: streams.map((s) => s.id), range: [from, to], points, fetchMs, resolution };
    return;
  }
  charted.drawing = true;
  const shapeStart = performance.now();
  const drawn = await drawChart(element, shaped(charted), {
    range: [from, to],
    zone: state.zone,
    width: element.clientWidth || 800,
    started: shapeStart,
    onZoom: (min, max) => showRange(min, max),
    onPick: pickMonth,
  });
  charted.drawing = false;
  if (run !== state.chartRun) { drawn.plot.destroy(); return; }
  state.plot = drawn.plot;
  charted.update = drawn.update;
  window.dashboard.plot = drawn.plot;
  window.dashboard.last = {
    streams: streams.map((s) => s.id), range: [from, to], points, drawnPoints: drawn.points, requests,
    fetchMs, prepareMs: drawn.prepareMs, drawMs: drawn.drawMs, bucket, resolution,
  };
  element.dataset.state = 'drawn';
  const total = points.reduce((a, b) => a + b, 0);
  status.textContent = `${total.toLocaleString('en')} ${resolution ? `buckets per ${resolution}` : 'points'} `
    + `of ${streams.length} stream(s) in `
    + `${requests} request(s), fetched in ${Math.round(fetchMs)} ms, drawn in ${Math.round(drawn.drawMs)} ms`
    + (bucket > 90 ? `; processed summed per ${bucket === 3600 ? 'hour' : 'day'}` : '')
    + (resolution ? '; energy and cost summed, the rest averaged' : '')
    + (charted.follow ? '; live' : '')
    + (state.pinned === 'month' ? '. Click a month for its days.' : '. Drag to zoom, wheel zooms, double-click resets, ◀ ▶ pan.');
  if (charted.grown) scheduleRedraw(); // live points that came while it was drawn
}

// --- live ---------------------------------------------------------------------------------------

function startLive(feed) {
  const live = new LiveFeed(state.api, feed.id, { onEvent: onLive, onStatus: showLive });
  state.live = live.start();
  window.dashboard.live = live;
}

function stopLive() {
  state.live?.stop();
  state.live = null;
  clearTimeout(state.ov.reread);
  state.ov.reread = null;
  clearTimeout(state.redraw);
  state.redraw = null;
  $('#live').hidden = true;
}

const LIVE_TEXT = {
  connecting: () => 'connecting…',
  live: () => '● live',
  reconnecting: (reason) => `reconnecting… (${reason})`,
  stopped: (reason) => `not live: ${reason}`,
};

/** The connection's state beside the feed's title: a wall display never goes stale unsaid. */
function showLive({ state: now, reason }) {
  const element = $('#live');
  element.hidden = false;
  element.dataset.state = now;
  element.textContent = LIVE_TEXT[now](reason);
  element.title = `${now} since ${new Date().toLocaleTimeString()}${reason ? `: ${reason}` : ''}`;
}

/**
 * One live event: `points` and `buckets` grow the chart and the newest values, `reload` reads
 * again, `prices` (tomorrow's prices are in) reads the money panels again.
 */
function onLive({ event, data }) {
  const body = JSON.parse(data);
  if (event === 'reload') { reload(body); return; }
  if (event === 'prices') { guarded(pricesIn); return; }
  if (event !== 'points' && event !== 'buckets') return;
  const { stream, points } = body;
  if (event === 'buckets') overviewLive(stream, points);
  noteNow(stream, points);
  if (!state.streams.some((s) => s.id === stream)) { discover(stream); return; }
  if (state.backlog) state.backlog.push([stream, points]);
  else if (grow(stream, points)) scheduleRedraw();
}

/** The newest of `points`, if newer than what the stream's cell shows (a revision is older). */
function noteNow(streamId, points) {
  let newest = null;
  for (const point of points) if (!newest || point[0] >= newest[0]) newest = point;
  const known = state.now.get(streamId);
  if (!newest || (known && known[0] > newest[0])) return;
  state.now.set(streamId, newest);
  const cell = document.querySelector(`#streams td.now[data-stream="${streamId}"]`);
  const stream = state.streams.find((s) => s.id === streamId);
  if (cell && stream) showNow(cell, stream);
}

/**
 * Live points into the charted stream's points. A view that follows now moves on to keep its
 * span (older points leave it); a past view takes only points within it (revised buckets).
 * Whether the chart changed.
 */
function grow(streamId, points) {
  const charted = state.charted;
  const i = charted?.streams.findIndex((s) => s.id === streamId) ?? -1;
  if (i < 0 || charted.resolution) return false;
  if (charted.follow) {
    let newest = Math.floor(Date.now() / 1000);
    for (const [t] of points) newest = Math.max(newest, t);
    if (newest > charted.to) {
      charted.from += newest - charted.to;
      charted.to = newest;
      for (const { times, values } of charted.sources) dropBefore(times, values, charted.from);
      state.range = { from: charted.from, to: charted.to };
      state.loaded = { ...state.range };
    }
  }
  const inside = points.filter(([t]) => t >= charted.from && t <= charted.to);
  const { times, values } = charted.sources[i];
  charted.grown = merge(times, values, inside) || charted.grown;
  return charted.grown;
}

function scheduleRedraw() {
  state.redraw ??= setTimeout(() => {
    state.redraw = null;
    const charted = state.charted;
    if (!charted?.grown || charted.drawing || state.backlog) return; // a load or a draw takes them
    charted.grown = false;
    if (!charted.update) { guarded(() => draw(charted, state.chartRun)); return; } // the first points
    const drawnPoints = charted.update(shaped(charted), [charted.from, charted.to]);
    Object.assign(window.dashboard.last, { range: [charted.from, charted.to], drawnPoints });
  }, REDRAW_MS);
}

/**
 * `reload`: the live log could not say what changed. `expired` (the page was away longer than
 * the server keeps events): the whole view is read again; `revised`: so is a view that charts
 * the stream over its stretch. A view that follows now is read up to now.
 */
function reload({ reason, stream, time_from: from, time_to: to }) {
  const charted = state.charted;
  if (!charted) return;
  if (reason === 'revised'
    && (!charted.streams.some((s) => s.id === stream) || to < charted.from || from > charted.to)) return;
  if (charted.follow) {
    const end = Math.max(charted.to, Math.floor(Date.now() / 1000));
    state.range = { from: end - (charted.to - charted.from), to: end };
    showRange(state.range.from, state.range.to);
  }
  guarded(chart);
}

/** A stream the page has not listed (the homebase began to send it): the list is read again. */
async function discover(streamId) {
  if (state.asked.has(streamId)) return;
  state.asked.add(streamId);
  const feed = state.feed;
  await guarded(async () => {
    const streams = await state.api.streams(feed.id);
    if (state.feed !== feed) return;
    state.streams = streams;
    $('#chart-tools').hidden = !streams.length;
    if (!state.selected.size) {
      const first = firstChoice(streams);
      if (first) state.selected.add(first.id);
    }
    renderStreams();
    await chart();
  });
}

// --- notifications ----------------------------------------------------------------------------

async function loadNotifications() {
  const [items, count] = await Promise.all([
    state.api.notifications(state.userId), state.api.notificationCount(state.userId),
  ]);
  state.notifications = items;
  $('#notification-count').textContent = count.unread ? `${count.unread} unread` : '';
  renderNotifications($('#notifications'), items, {
    showArchived: $('#show-archived').checked,
    zone: undefined, // the reader's own time zone: a notification may concern any feed
    act: (id, flags) => guarded(async () => {
      await state.api.setNotification(state.userId, id, flags);
      await loadNotifications();
    }),
  });
}

// --- wiring -----------------------------------------------------------------------------------

$('#sign-in').addEventListener('submit', (event) => {
  event.preventDefault();
  const userId = $('#user-id').value.trim();
  const token = $('#token').value.trim();
  signIn(userId, token, $('#remember').checked).catch((error) => {
    $('#sign-in-error').textContent = explain(error);
  });
});
// Enabled once the form is handled here: the module loads after the page, and a form sent
// before that would go to the server as a plain submission, which the page's CSP refuses.
$('#sign-in button[type=submit]').disabled = false;
$('#sign-out').addEventListener('click', () => signOut());
for (const b of document.querySelectorAll('[data-range]')) {
  b.addEventListener('click', () => guarded(async () => { setRange(b.dataset.range); await chart(); }));
}
$('#range-apply').addEventListener('click', () => guarded(async () => {
  const from = wallToUnix(state.zone, $('#range-from').value);
  const to = wallToUnix(state.zone, $('#range-to').value);
  if (from === null || to === null || from >= to) throw new Error('Give a start before the end.');
  state.loaded = null; // a typed range is loaded as asked, even inside the loaded one
  await view(from, to);
}));
$('#pan-back').addEventListener('click', () => guarded(() => {
  const { from, to } = visible();
  return view(from - (to - from) / 2, to - (to - from) / 2);
}));
$('#pan-forward').addEventListener('click', () => guarded(() => {
  const { from, to } = visible();
  return view(from + (to - from) / 2, to + (to - from) / 2);
}));
$('#zoom-out').addEventListener('click', () => guarded(() => {
  const { from, to } = visible();
  return view(from - (to - from) / 2, to + (to - from) / 2);
}));
$('#bucket').addEventListener('change', () => guarded(chart));
for (const b of document.querySelectorAll('[data-period]')) {
  b.addEventListener('click', () => guarded(() => {
    Object.assign(state.ov, { period: b.dataset.period, date: state.ov.answer?.from ?? null });
    return overview();
  }));
}
for (const [id, step] of [['#ov-back', -1], ['#ov-forward', 1]]) {
  $(id).addEventListener('click', () => guarded(() => {
    const answer = state.ov.answer;
    if (!answer) return null;
    state.ov.date = shifted(answer.period, answer.from, step);
    return overview();
  }));
}
$('#ov-browse').addEventListener('click', () => $('#browser').scrollIntoView());
$('#ov-today').addEventListener('click', () => guarded(() => { state.ov.date = null; return overview(); }));
$('#ov-compare').addEventListener('change', () => guarded(() => { state.ov.compare = $('#ov-compare').value; return overview(); }));
for (const b of document.querySelectorAll('button.toggle[data-table]')) {
  b.addEventListener('click', () => {
    const table = document.getElementById(b.dataset.table);
    table.hidden = !table.hidden;
    b.textContent = table.hidden ? 'table' : 'hide table';
    b.setAttribute('aria-expanded', String(!table.hidden));
  });
}
$('#all-read').addEventListener('click', () => guarded(async () => {
  await state.api.setAllNotifications(state.userId, { read: true });
  await loadNotifications();
}));
$('#show-archived').addEventListener('change', () => guarded(loadNotifications));
$('#contracts-retry').addEventListener('click', () => guarded(retryContracts));
window.addEventListener('resize', () => {
  state.plot?.setSize({ width: $('#chart').clientWidth, height: 360 });
  resizeMoney();
  resizeOverview();
});

const saved = storedCredentials();
if (saved) {
  signIn(saved.userId, saved.token, localStorage.getItem(CREDENTIALS) !== null).catch((error) => signOut(explain(error)));
}

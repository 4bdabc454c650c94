// The page: sign in with a token, a user's feeds, a feed's streams by channel, charts of the
// chosen streams over a range, the feed's bill and prices, and the notifications. Only the
// public data API is used.

import { Api, ApiError } from './api.js';
import { clearMoney, resizeMoney, showMoney } from './bill.js';
import { drawChart } from './chart.js';
import { renderNotifications } from './notifications.js';
import { bucketed, bucketFor, negated, withGaps } from './series.js';
import { TYPES, byChannel, currentConfig, describe, firstChoice } from './streams.js';
import { offsetsOf, unixToWall, wallToUnix } from './time.js';

const $ = (selector) => document.querySelector(selector);
const SPANS = { hour: 3600, day: 86_400, week: 604_800, month: 30 * 86_400 };
// Beyond 30 days the page asks the server for buckets (`resolution`): one request per stream.
const LONG = SPANS.month + 3600;
const CREDENTIALS = 'energy-platform.credentials';

const state = {
  api: null, userId: null, feeds: [], feed: null, zone: 'UTC', streams: [], selected: new Set(),
  range: null, loaded: null, plot: null, chartRun: 0, notifications: [], opening: null,
  pinned: null, // a resolution the view fixes: 'month' in the Year view, 'day' in a month of it
};
// What the last chart took, for people and for the page's tests (read with execute_script);
// `money`: the bill and prices the money panels show.
window.dashboard = { last: null, money: null };

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
  state.plot?.destroy();
  clearMoney();
  Object.assign(state, { api: null, userId: null, feeds: [], feed: null, plot: null, opening: null });
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
  Object.assign(state, { feed, streams, zone: config?.timezone || 'UTC', selected: new Set() });
  for (const b of document.querySelectorAll('[data-feed]')) b.classList.toggle('active', b.dataset.feed === feed.id);
  $('#feed-title').textContent = feedTitle(feed);
  $('#feed-details').textContent = `feed ${feed.id} · time zone ${state.zone} · subscription `
    + `${feed.subscription.from.slice(0, 10)} to ${feed.subscription.to.slice(0, 10)} · ${streams.length} streams`;
  $('#chart-tools').hidden = !streams.length;
  const first = firstChoice(streams);
  if (first) state.selected.add(first.id);
  renderStreams();
  setRange('day');
  await Promise.all([chart(), money()]);
}

async function money() {
  const shown = await showMoney(state.api, state.feed, state.zone);
  if (shown) window.dashboard.money = shown;
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
  const cells = [document.createElement('td'), document.createElement('td'), document.createElement('td')];
  cells[0].className = 'pick';
  cells[0].append(pick);
  const config = currentConfig(stream);
  cells[1].append(name, ' ', Object.assign(document.createElement('span'), {
    className: 'muted', textContent: [d.unit, d.detail].filter(Boolean).join(' · '),
  }));
  if (config) cells[1].title = `current configuration: ${JSON.stringify(config)}`;
  cells[2].className = 'id';
  cells[2].textContent = `#${stream.id}`;
  row.append(...cells);
  return row;
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
    state.plot = null;
    element.replaceChildren();
    element.dataset.state = 'empty';
    status.textContent = 'Tick streams to chart them.';
    return;
  }
  element.dataset.state = 'loading';
  status.textContent = 'Loading…';
  const fetchStart = performance.now();
  const resolution = resolutionFor($('#bucket').value, from, to);
  const loaded = await Promise.all(streams.map((s) => (resolution
    ? state.api.buckets(state.feed.id, s.id, from, to, resolution)
    : state.api.points(state.feed.id, s.id, from, to))));
  const fetchMs = performance.now() - fetchStart;
  if (run !== state.chartRun) return; // a newer request replaced this one
  const points = loaded.map((l) => l.times.length);
  const shapeStart = performance.now();
  const bucket = resolution ? 0 : bucketFor($('#bucket').value, from, to);
  const offsetOf = offsetsOf(state.zone);
  const series = streams.map((stream, i) => {
    const d = describe(stream);
    const { times, values } = loaded[i];
    let shaped = { times, values };
    if (resolution) shaped = { times, values }; // the server's buckets, as they are
    else if (stream.type === 'processed' && bucket > 90) shaped = bucketed(times, values, bucket, offsetOf, d.sum);
    else if (!d.bars) shaped = withGaps(times, values);
    if (d.below) shaped = negated(shaped);
    const label = `${d.title} #${stream.id}${d.below ? ', below 0' : ''}`;
    return { label, unit: d.unit, bars: d.bars, money: d.money, ...shaped };
  });
  state.plot?.destroy();
  state.plot = null;
  state.loaded = { from, to };
  if (!points.some(Boolean)) {
    element.replaceChildren();
    element.dataset.state = 'no-data';
    status.textContent = 'No points in this range.';
    window.dashboard.last = { streams: streams.map((s) => s.id), range: [from, to], points, fetchMs, resolution };
    return;
  }
  const drawn = await drawChart(element, series, {
    range: [from, to],
    zone: state.zone,
    width: element.clientWidth || 800,
    started: shapeStart,
    onZoom: (min, max) => showRange(min, max),
    onPick: pickMonth,
  });
  if (run !== state.chartRun) { drawn.plot.destroy(); return; }
  state.plot = drawn.plot;
  window.dashboard.plot = drawn.plot;
  const requests = loaded.reduce((n, l) => n + l.requests, 0);
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
    + (state.pinned === 'month' ? '. Click a month for its days.' : '. Drag to zoom, wheel zooms, double-click resets, ◀ ▶ pan.');
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
$('#all-read').addEventListener('click', () => guarded(async () => {
  await state.api.setAllNotifications(state.userId, { read: true });
  await loadNotifications();
}));
$('#show-archived').addEventListener('change', () => guarded(loadNotifications));
window.addEventListener('resize', () => {
  state.plot?.setSize({ width: $('#chart').clientWidth, height: 360 });
  resizeMoney();
});

const saved = storedCredentials();
if (saved) {
  signIn(saved.userId, saved.token, localStorage.getItem(CREDENTIALS) !== null).catch((error) => signOut(explain(error)));
}

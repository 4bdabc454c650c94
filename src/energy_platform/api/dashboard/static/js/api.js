// A client of the platform's public data API: the spec's endpoints, a bearer token, problem
// JSON (RFC 9457) turned into errors. Nothing here is private to this page.

export class ApiError extends Error {
  constructor(status, problem, retryAfter = null) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.field = problem?.field ?? null;
    // Seconds to wait before asking again (a 429's or 503's Retry-After), else null.
    this.retryAfter = retryAfter;
  }
}

// The stream-data endpoint returns the newest `limit` points of a range, at most 100,000 (the
// page is served by the same release, so it knows that bound); a week of 5 s points, 120,960,
// takes two requests.
const PAGE = 100_000;

export class Api {
  constructor(token, base = '') {
    this.token = token;
    this.base = base;
  }

  url(path, params) {
    const url = new URL(this.base + path, location.origin);
    for (const [key, value] of Object.entries(params ?? {})) {
      for (const one of [value].flat()) if (one !== undefined && one !== null) url.searchParams.append(key, one);
    }
    return url;
  }

  async request(method, path, { params, body } = {}) {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(this.url(path, params), {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw await failure(response);
    return response.status === 205 || response.status === 204 ? null : response.json();
  }

  /**
   * GET /feeds/{id}/live: the open answer, its body a text/event-stream for the caller to read
   * (live.js). With `lastId` it starts after that event; `signal` ends it.
   */
  async live(feedId, { lastId, signal, params } = {}) {
    const headers = { Authorization: `Bearer ${this.token}`, Accept: 'text/event-stream' };
    if (lastId) headers['Last-Event-ID'] = lastId;
    const response = await fetch(this.url(`/feeds/${enc(feedId)}/live`, params), {
      headers, signal, cache: 'no-store',
    });
    if (!response.ok) throw await failure(response);
    return response;
  }

  feeds(userId) { return this.request('GET', `/users/${enc(userId)}/feeds`); }
  streams(feedId) { return this.request('GET', `/feeds/${enc(feedId)}/streams`); }
  notifications(userId) { return this.request('GET', `/users/${enc(userId)}/notifications`); }
  notificationCount(userId) { return this.request('GET', `/users/${enc(userId)}/notification_count`); }

  /** What a feed's household pays over local dates [from, to] (YYYY-MM-DD, both inclusive). */
  bill(feedId, from, to) { return this.request('GET', `/feeds/${enc(feedId)}/bill`, { params: { from, to } }); }

  /**
   * A feed's day, week, month or year at a glance (docs/api.md#overview): `period`, `date` (any
   * local date of it, YYYY-MM-DD; null: the feed's today) and `compare`.
   */
  overview(feedId, { period = 'day', date = null, compare = 'previous' } = {}) {
    return this.request('GET', `/feeds/${enc(feedId)}/overview`, { params: { period, date, compare } });
  }

  /** The feed's price per unit of `medium` over local dates [from, to]: stretches of one price. */
  prices(feedId, from, to, medium = 'power') {
    return this.request('GET', `/feeds/${enc(feedId)}/prices`, { params: { from, to, medium } });
  }

  /**
   * When to run a load (docs/api.md#plan): `params` such as {duration: 'PT2H', power_kw: 2};
   * the cheapest quarter hours from now to the end of the known prices.
   */
  plan(feedId, params) {
    return this.request('GET', `/feeds/${enc(feedId)}/plan`, { params });
  }

  /** The cluster's catalogue of contracts by name: [{name, contract, added_at}]. */
  contracts() { return this.request('GET', '/contracts'); }

  /**
   * The household's own months replayed through contracts (docs/api.md#what-if): `body` is
   * {from?, to?, contracts: [{name} | {contract}]}; without dates the last 12 whole local months.
   */
  whatIf(feedId, body) { return this.request('POST', `/feeds/${enc(feedId)}/what-if`, { body }); }

  /** PATCH one notification with {read?, archived?}; the updated notification. */
  setNotification(userId, id, flags) {
    return this.request('PATCH', `/users/${enc(userId)}/notifications/${enc(id)}`, { body: flags });
  }

  /** PATCH every notification the query selects (no `since`, no `id`: all of them); 205. */
  setAllNotifications(userId, flags) {
    return this.request('PATCH', `/users/${enc(userId)}/notifications`, { body: flags });
  }

  /**
   * Every point of a stream in [from, to] (Unix seconds, both inclusive) as two arrays, oldest
   * first. The endpoint answers the newest `limit` points of a range, so pages are read from the
   * newest back: each next page ends a second before the oldest point of the last.
   */
  async points(feedId, streamId, from, to) {
    const pages = [];
    let upper = to;
    let count = 0;
    while (upper >= from) {
      const page = await this.request('GET', `/feeds/${enc(feedId)}/streams/${enc(streamId)}/data`, {
        params: { time_from: from, time_to: upper, limit: PAGE },
      });
      pages.push(page);
      count += page.length;
      if (page.length < PAGE) break;
      upper = page[0][0] - 1;
    }
    const times = new Array(count);
    const values = new Array(count);
    let i = 0;
    for (let p = pages.length - 1; p >= 0; p--) {
      for (const [t, v] of pages[p]) { times[i] = t; values[i] = v; i++; }
    }
    return { times, values, requests: pages.length };
  }

  /**
   * A stream per local hour, day or month (`resolution`) over [from, to], in one request: the
   * server sums energy and cost per bucket and averages the rest (docs/api.md).
   */
  async buckets(feedId, streamId, from, to, resolution) {
    const answer = await this.request('GET', `/feeds/${enc(feedId)}/streams/${enc(streamId)}/data`, {
      params: { time_from: from, time_to: to, limit: PAGE, resolution },
    });
    return { times: answer.map((b) => b[0]), values: answer.map((b) => b[1]), requests: 1 };
  }
}

const enc = encodeURIComponent;

/** The error of an answer that is not 2xx, from its problem JSON when it has one. */
async function failure(response) {
  const problem = await response.json().catch(() => null);
  const seconds = Number.parseInt(response.headers.get('Retry-After') ?? '', 10);
  return new ApiError(response.status, problem, Number.isFinite(seconds) ? seconds : null);
}

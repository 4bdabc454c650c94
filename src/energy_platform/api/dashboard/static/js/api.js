// A client of the platform's public data API: the spec's endpoints, a bearer token, problem
// JSON (RFC 9457) turned into errors. Nothing here is private to this page.

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.field = problem?.field ?? null;
  }
}

// The stream-data endpoint returns the newest `limit` points of a range; a week of 5 s points is
// 120,960. Servers that accept at most 10,000 (older releases) answer 400 on `limit`: then the
// client asks again in pages of that size.
const LARGE_PAGE = 100_000;
const SMALL_PAGE = 10_000;

export class Api {
  constructor(token, base = '') {
    this.token = token;
    this.base = base;
    this.pageLimit = LARGE_PAGE;
  }

  async request(method, path, { params, body } = {}) {
    const url = new URL(this.base + path, location.origin);
    for (const [key, value] of Object.entries(params ?? {})) {
      for (const one of [value].flat()) if (one !== undefined && one !== null) url.searchParams.append(key, one);
    }
    const headers = { Authorization: `Bearer ${this.token}`, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) {
      const problem = await response.json().catch(() => null);
      throw new ApiError(response.status, problem);
    }
    return response.status === 205 || response.status === 204 ? null : response.json();
  }

  feeds(userId) { return this.request('GET', `/users/${enc(userId)}/feeds`); }
  streams(feedId) { return this.request('GET', `/feeds/${enc(feedId)}/streams`); }
  notifications(userId) { return this.request('GET', `/users/${enc(userId)}/notifications`); }
  notificationCount(userId) { return this.request('GET', `/users/${enc(userId)}/notification_count`); }

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
      let page;
      try {
        page = await this.request('GET', `/feeds/${enc(feedId)}/streams/${enc(streamId)}/data`, {
          params: { time_from: from, time_to: upper, limit: this.pageLimit },
        });
      } catch (error) {
        const aboutLimit = /limit/.test(`${error.field ?? ''} ${error.message}`);
        if (error.status === 400 && aboutLimit && this.pageLimit > SMALL_PAGE) {
          this.pageLimit = SMALL_PAGE;
          continue;
        }
        throw error;
      }
      pages.push(page);
      count += page.length;
      if (page.length < this.pageLimit) break;
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
}

const enc = encodeURIComponent;

// Following a feed as it happens: GET /feeds/{id}/live, Server-Sent Events
// (docs/api.md#live), read with fetch: EventSource cannot send the bearer token. The parser
// is a pure function of the text so far (any chunking, any of the three line endings); the
// connection resumes after a disconnect with the last id it saw (Last-Event-ID), waits a
// jittered, capped backoff between attempts, and takes a stream silent for longer than 2.5
// keepalives for dead: a wall display must not go stale without saying so.

// The server sends a comment after 15 s of silence (EP_LIVE_KEEPALIVE_S): no byte for 40 s
// means the connection is gone, however open it looks (a proxy, a sleeping laptop, a dead NAT).
export const STALE_MS = 40_000;
const FIRST_MS = 1000;
const CAP_MS = 60_000;
// Answers that another attempt cannot change: the page stops and says why.
const FINAL = {
  401: 'the server no longer accepts this token; sign in again',
  403: 'this token may not follow the feed',
  404: 'the feed is gone (or moved to another platform)',
};

/** The parser's state before the first byte. */
export const START = Object.freeze({ rest: '', cr: false, id: '', event: '', data: null, sawId: false });

/**
 * Reads `text`, the next piece of a text/event-stream, after `state` (START before the first):
 * `{ state, messages }`, the state for the next piece and, in order, what its complete lines
 * dispatch: `{ type: 'event', id, event, data }` (data lines joined by \n), `{ type: 'id', id }`
 * for a block with an id and no data (the spec dispatches nothing but moves the last id), and
 * `{ type: 'comment', text }`. As the spec says, an id holds for the events after it until
 * another one comes; `retry` and unknown fields are ignored (the page has its own backoff).
 */
export function parse(state, text) {
  let { rest, cr, id, event, data, sawId } = state;
  const messages = [];
  const buffer = rest + text;
  // A \r that ended the last piece may be the first half of \r\n.
  let at = cr && buffer.startsWith('\n') ? 1 : 0;
  if (buffer.length) cr = false;
  for (;;) {
    const lf = buffer.indexOf('\n', at);
    const crAt = buffer.indexOf('\r', at);
    const end = crAt !== -1 && (lf === -1 || crAt < lf) ? crAt : lf;
    if (end === -1) break;
    const line = buffer.slice(at, end);
    if (buffer[end] === '\r') {
      if (end + 1 === buffer.length) cr = true;
      at = buffer[end + 1] === '\n' ? end + 2 : end + 1;
    } else {
      at = end + 1;
    }
    if (line === '') {
      if (data !== null) messages.push({ type: 'event', id, event: event || 'message', data });
      else if (sawId) messages.push({ type: 'id', id });
      event = '';
      data = null;
      sawId = false;
    } else if (line[0] === ':') {
      messages.push({ type: 'comment', text: line.slice(1).replace(/^ /, '') });
    } else {
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data = data === null ? value : `${data}\n${value}`;
      else if (field === 'id' && !value.includes('\0')) { id = value; sawId = true; }
    }
  }
  return { state: { rest: buffer.slice(at), cr, id, event, data, sawId }, messages };
}

/**
 * How long to wait before attempt `failures` + 1 after `failures` attempts in a row that got no
 * stream: 1 s doubling up to a minute, each drawn between half and all of it, so that the
 * clients of a restarted server do not all come back in the same second.
 */
export function backoff(failures, random = Math.random) {
  const full = Math.min(CAP_MS, FIRST_MS * 2 ** failures);
  return Math.round(full * (0.5 + random() / 2));
}

/**
 * One feed followed live until `stop()`: `onEvent({ id, event, data })` gets each event in
 * order (`data` still text), `onStatus({ state, reason })` each change of the connection:
 * `connecting`, `live`, `reconnecting` (with why), `stopped` (with why, for good).
 * `connections` counts the streams the server opened, `lastId` is where the next one resumes.
 */
export class LiveFeed {
  constructor(api, feedId, { onEvent, onStatus, staleMs = STALE_MS }) {
    Object.assign(this, { api, feedId, onEvent, onStatus, staleMs });
    this.lastId = null;
    this.connections = 0;
    this.stopped = false;
    this.abort = null;
    this.wake = null; // ends the wait before the next attempt
    this.online = () => this.wake?.();
  }

  start() {
    window.addEventListener('online', this.online);
    this.run();
    return this;
  }

  stop() {
    this.stopped = true;
    window.removeEventListener('online', this.online);
    this.abort?.abort();
    this.wake?.();
  }

  async run() {
    let failures = 0;
    this.onStatus({ state: 'connecting' });
    while (!this.stopped) {
      let reason;
      let opened = false;
      try {
        opened = await this.follow();
        reason = 'the server ended the stream';
      } catch (error) {
        if (this.stopped) return;
        if (FINAL[error.status]) {
          this.stopped = true;
          this.onStatus({ state: 'stopped', reason: `${FINAL[error.status]} (HTTP ${error.status})` });
          return;
        }
        opened = error.opened ?? false;
        reason = error.stale ? `nothing heard for ${Math.round(this.staleMs / 1000)} s` : error.message;
      }
      if (this.stopped) return;
      failures = opened ? 0 : failures + 1;
      this.onStatus({ state: 'reconnecting', reason });
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, backoff(failures));
        this.wake = () => { clearTimeout(timer); resolve(); };
      });
      this.wake = null;
    }
  }

  /** One connection, read to its end; whether the server opened the stream. */
  async follow() {
    const abort = new AbortController();
    this.abort = abort;
    let stale = false;
    let opened = false;
    let timer;
    const watch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => { stale = true; abort.abort(); }, this.staleMs);
    };
    watch(); // the answer's head must come in time too
    try {
      const response = await this.api.live(this.feedId, { lastId: this.lastId, signal: abort.signal });
      opened = true;
      this.connections += 1;
      this.onStatus({ state: 'live' });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let state = START;
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return true;
        watch();
        let messages;
        ({ state, messages } = parse(state, value));
        for (const message of messages) {
          if (message.type === 'comment') continue;
          if (message.type === 'event') this.dispatch(message);
          this.lastId = message.id;
        }
      }
    } catch (error) {
      throw Object.assign(error, { stale, opened });
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }

  dispatch(message) {
    try {
      this.onEvent(message);
    } catch (error) {
      console.error('live event not handled', message, error); // the next events still come
    }
  }
}

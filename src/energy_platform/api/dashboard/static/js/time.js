// Times in a feed's time zone (IANA name) without a date library: the zone's UTC offset at an
// instant comes from Intl, and offsets change only on 15-minute boundaries, so they are cached
// per 15-minute slot.

const formatters = new Map();

function formatter(zone) {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit',
    });
    formatters.set(zone, format);
  }
  return format;
}

/** Seconds east of UTC in `zone` at Unix time `t`. */
export function offsetAt(zone, t) {
  const parts = {};
  for (const { type, value } of formatter(zone).formatToParts(new Date(t * 1000))) parts[type] = +value;
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour % 24, parts.minute, parts.second) / 1000;
  return wall - Math.floor(t);
}

/** A fast `t -> offset` for many instants of one zone. */
export function offsetsOf(zone) {
  const slots = new Map();
  return (t) => {
    const slot = Math.floor(t / 900);
    let offset = slots.get(slot);
    if (offset === undefined) {
      offset = offsetAt(zone, slot * 900);
      slots.set(slot, offset);
    }
    return offset;
  };
}

/**
 * `YYYY-MM-DDTHH:MM[:SS]` as wall time in `zone` -> Unix seconds. A time the clocks skip reads
 * with the offset before the change (02:30 becomes 03:30); one that happens twice is the later.
 */
export function wallToUnix(zone, text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(text);
  if (!m) return null;
  const wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] ?? 0)) / 1000;
  // The offsets a day either side bracket the instant (no offset exceeds 14 hours). Each that
  // reads back as itself gives the wall time; none does for a skipped time. Iterating from the
  // wall time's own offset instead lands before the gap in zones west of UTC (Santiago's
  // skipped midnight became 23:00 of the day before).
  const before = offsetAt(zone, wall - 86_400);
  const after = offsetAt(zone, wall + 86_400);
  const valid = [before, after].map((o) => wall - o).filter((t) => wall - offsetAt(zone, t) === t);
  return valid.length ? Math.max(...valid) : wall - before;
}

/** Unix seconds -> `YYYY-MM-DDTHH:MM:SS` wall time in `zone`, for datetime-local inputs. */
export function unixToWall(zone, t) {
  return new Date((t + offsetAt(zone, t)) * 1000).toISOString().slice(0, 19);
}

/** A readable local time in `zone`. */
export function formatTime(zone, iso) {
  return new Date(iso).toLocaleString('en-GB', { timeZone: zone, dateStyle: 'medium', timeStyle: 'short' });
}

// Local dates are `YYYY-MM-DD` strings, as the bill and price endpoints take them; calendar
// arithmetic on them runs in UTC, where every day has 24 hours.

/** The date in `zone` at Unix time `t`. */
export function localDate(zone, t) {
  return unixToWall(zone, t).slice(0, 10);
}

/** `date` moved by `days` calendar days. */
export function addDays(date, days) {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(Date.UTC(y, m - 1, d + days)).toISOString().slice(0, 10);
}

/** The first and last date of the calendar month that holds `date`. */
export function monthOf(date) {
  const [y, m] = date.split('-').map(Number);
  const days = new Date(Date.UTC(y, m, 0)).getUTCDate(); // day 0 of the next month: this one's last
  return { first: `${date.slice(0, 7)}-01`, last: `${date.slice(0, 7)}-${String(days).padStart(2, '0')}` };
}

/** The instant `date` starts in `zone` (a midnight the clocks skip: the day's first instant). */
export function midnight(zone, date) {
  return wallToUnix(zone, `${date}T00:00:00`);
}

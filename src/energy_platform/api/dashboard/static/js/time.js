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
  let t = wall - offsetAt(zone, wall);
  t = wall - offsetAt(zone, t);
  return t;
}

/** Unix seconds -> `YYYY-MM-DDTHH:MM:SS` wall time in `zone`, for datetime-local inputs. */
export function unixToWall(zone, t) {
  return new Date((t + offsetAt(zone, t)) * 1000).toISOString().slice(0, 19);
}

/** A readable local time in `zone`. */
export function formatTime(zone, iso) {
  return new Date(iso).toLocaleString('en-GB', { timeZone: zone, dateStyle: 'medium', timeStyle: 'short' });
}

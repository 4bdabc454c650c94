// Point arrays prepared for the chart: longer buckets for processed streams, gaps made visible,
// live points merged in.

/**
 * Points summed (or averaged) into buckets of `size` seconds of local time: `offsetOf(t)` gives
 * the zone's offset, so hour and day buckets start at local hours and midnights. Each bucket is
 * placed at its start.
 */
export function bucketed(times, values, size, offsetOf, sum) {
  const outTimes = [];
  const outValues = [];
  let key = null;
  let start = 0;
  let total = 0;
  let count = 0;
  for (let i = 0; i < times.length; i++) {
    const offset = offsetOf(times[i]);
    const k = Math.floor((times[i] + offset) / size);
    if (k !== key) {
      if (key !== null) { outTimes.push(start); outValues.push(sum ? total : total / count); }
      key = k;
      start = k * size - offset;
      total = 0;
      count = 0;
    }
    total += values[i];
    count += 1;
  }
  if (key !== null) { outTimes.push(start); outValues.push(sum ? total : total / count); }
  return { times: outTimes, values: outValues };
}

/**
 * A null between two points further apart than three typical steps, so that a line breaks where
 * a sensor was silent instead of bridging the silence.
 */
export function withGaps(times, values) {
  if (times.length < 3) return { times, values };
  const steps = [];
  for (let i = 1; i < Math.min(times.length, 1001); i++) steps.push(times[i] - times[i - 1]);
  steps.sort((a, b) => a - b);
  const gap = Math.max(3 * steps[steps.length >> 1], 30);
  const outTimes = [times[0]];
  const outValues = [values[0]];
  for (let i = 1; i < times.length; i++) {
    if (times[i] - times[i - 1] > gap) { outTimes.push(times[i - 1] + 1); outValues.push(null); }
    outTimes.push(times[i]);
    outValues.push(values[i]);
  }
  return { times: outTimes, values: outValues };
}

/** The bucket size for processed streams: the user's choice, or one that suits the range. */
export function bucketFor(choice, from, to) {
  if (choice !== 'auto') return Number(choice);
  const span = to - from;
  if (span <= 2 * 86_400) return 90;
  if (span <= 14 * 86_400) return 3600;
  return 86_400;
}

/** Values drawn below the axis (energy fed in, money earned): each negated, gaps kept. */
export function negated({ times, values }) {
  return { times, values: values.map((v) => (v == null ? v : -v)) };
}

/**
 * Live points (`[[t, v], ...]`, as GET /feeds/{id}/live sends them) merged into `times` and
 * `values` (oldest first) in place, by time: a time already there takes the new value (a revised
 * bucket), a null value removes it (the bucket has none any more), a new time goes where it
 * belongs, so a point sent twice (a replay) is still drawn once. Whether anything changed.
 */
export function merge(times, values, points) {
  let changed = false;
  for (const [t, v] of points) {
    let i = times.length;
    if (i && times[i - 1] >= t) i = firstAtOrAfter(times, t);
    if (times[i] === t) {
      if (v === null) { times.splice(i, 1); values.splice(i, 1); changed = true; }
      else if (values[i] !== v) { values[i] = v; changed = true; }
    } else if (v !== null) {
      times.splice(i, 0, t);
      values.splice(i, 0, v);
      changed = true;
    }
  }
  return changed;
}

/** Points before `from` dropped, in place (a view that follows now keeps its span). */
export function dropBefore(times, values, from) {
  const n = firstAtOrAfter(times, from);
  if (n) { times.splice(0, n); values.splice(0, n); }
}

function firstAtOrAfter(times, t) {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid] < t) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// Point arrays prepared for the chart: longer buckets for processed streams, gaps made visible.

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

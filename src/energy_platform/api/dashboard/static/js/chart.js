// One uPlot chart of several series that share the time axis: bars for amounts per bucket,
// lines for everything else, one y scale per unit, money (cost, credit) on scales of its own.
// The left axis is the first scale that is not money; the right one money when it is charted,
// else the next scale.

import uPlot from '../vendor/uplot/uPlot.esm.js';

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

/**
 * Draws `series` ([{label, unit, bars, steps, money, times, values}]) over `range` ([from, to],
 * Unix seconds) into `element`, times shown in `zone`. Resolves once the first frame is on the
 * canvas, with the chart and the time it took. `onZoom(min, max)` follows the user's zooms;
 * `onPick(t)`, when given, gets the time under a click that is not a drag. A series with `steps`
 * holds each value until the next time (a price); `now`, when given, is marked by a line.
 * `marks` ([[from, to], ...]) are shaded behind the series (the cheapest hours).
 * `update(series, range)`, also resolved, puts new data of the same series into the chart (live
 * points): the time axis shows the new range unless the user has zoomed in.
 */
export function drawChart(element, series, {
  range, zone, width, height = 360, now, marks = [], onZoom, onPick, started = performance.now(),
}) {
  let done = false; // the first frame is drawn
  const shown = { range }; // what the time axis shows when not zoomed in; moved by update()
  // A scale's key names its unit, so that money never shares one with energy.
  const keyOf = (s) => `${s.money ? 'money' : 'unit'} ${s.unit}`;
  const unitOf = (key) => key.slice(key.indexOf(' ') + 1);
  const keys = [...new Set(series.map(keyOf))];
  const left = keys.find((k) => !k.startsWith('money')) ?? keys[0];
  const right = keys.find((k) => k !== left && k.startsWith('money')) ?? keys.find((k) => k !== left);
  const bars = uPlot.paths.bars({ size: [0.85, 80], align: 1 });
  const steps = uPlot.paths.stepped({ align: 1 });
  const below = shareBelow(series, keyOf);

  const options = {
    width,
    height,
    tzDate: (t) => uPlot.tzDate(new Date(t * 1000), zone),
    cursor: { drag: { x: true, y: false } },
    // uPlot fits the x axis to the data (and to a day around a single point); the range asked
    // for is shown instead, so a day with one hour of data looks like one. Zooms pass through.
    scales: { x: { time: true, range: (u, min, max) => (isDataExtent(u, min, max) ? shown.range : [min, max]) } },
    series: [
      { label: 'time' },
      ...series.map((s, i) => ({
        label: s.unit ? `${s.label} (${s.unit})` : s.label,
        scale: keyOf(s),
        stroke: COLOURS[i % COLOURS.length],
        fill: s.bars ? `${COLOURS[i % COLOURS.length]}55` : undefined,
        width: s.bars ? 0 : 1.25,
        paths: (s.bars && bars) || (s.steps && steps) || undefined,
        points: { show: false },
      })),
    ],
    axes: [
      {},
      ...[left, right].filter(Boolean).map((key, i) => ({
        scale: key, side: i === 0 ? 3 : 1, label: unitOf(key), grid: { show: i === 0 }, size: 60,
      })),
    ],
    hooks: { setScale: [(u, key) => { if (done && key === 'x' && onZoom) onZoom(u.scales.x.min, u.scales.x.max); }] },
    plugins: [wheelZoom(shown), ...(onPick ? [clickPick(onPick)] : []), ...(now ? [marker(now)] : []),
      ...(marks.length ? [shaded(marks)] : [])],
  };
  for (const key of keys) {
    options.scales[key] = {
      range: (u, min, max) => {
        if (min == null || !Number.isFinite(min)) return [0, 1]; // nothing of this unit in view
        return series.some((s) => keyOf(s) === key && s.bars)
          ? barRange(min, max, below) : uPlot.rangeNum(min, max, 0.1, true);
      },
    };
  }

  const prepared = performance.now();
  return new Promise((resolve) => {
    let plot;
    const update = (newSeries, newRange) => {
      const { min, max } = plot.scales.x;
      const zoomed = min > shown.range[0] || max < shown.range[1];
      shown.range = newRange;
      plot.setData(joined(newSeries), !zoomed);
      return pointsOf(plot);
    };
    options.hooks.draw = [(u) => {
      if (done) return;
      done = true;
      u.ctx.getImageData(0, 0, 1, 1); // waits until the canvas really holds the frame
      const drawn = performance.now();
      resolve({
        plot: u, prepareMs: prepared - started, drawMs: drawn - prepared, points: pointsOf(u), update,
      });
    }];
    element.replaceChildren();
    plot = new uPlot(options, joined(series), element);
  });
}

/** The series' tables on one time axis, as uPlot takes them. */
function joined(series) {
  const tables = series.map((s) => [s.times, s.values]);
  return tables.length === 1 ? tables[0] : uPlot.join(tables);
}

/**
 * Bars stand on 0: from 0 to the furthest bar on either side (export and credit are below).
 * With `below`, the share of the height under 0 that every scale of bars keeps, all of them
 * stand on one zero line (a cost beside energy fed in).
 */
function barRange(min, max, below) {
  const low = Math.min(0, min);
  const high = Math.max(0, max);
  if (below > 0) {
    const ratio = below / (1 - below);
    const top = Math.max(high, -low / ratio);
    return [-top * ratio * 1.05, top * 1.05];
  }
  return low === high ? [0, 1] : [low * 1.05, high * 1.05];
}

/**
 * The share of the height under 0 for bars on several scales: what the scale furthest below 0
 * needs over the loaded data, at most half; 0 for bars on one scale (it ranges on its own).
 */
function shareBelow(series, keyOf) {
  const extents = new Map();
  for (const s of series.filter((x) => x.bars)) {
    let [low, high] = extents.get(keyOf(s)) ?? [0, 0];
    for (const v of s.values) {
      if (v < low) low = v;
      else if (v > high) high = v;
    }
    extents.set(keyOf(s), [low, high]);
  }
  if (extents.size < 2) return 0;
  const shares = [...extents.values()].map(([low, high]) => (low < 0 ? -low / (high - low) : 0));
  return Math.min(0.5, Math.max(...shares));
}

function isDataExtent(u, min, max) {
  const xs = u.data[0];
  return !xs.length || (min === xs[0] && (xs.length === 1 || max === xs[xs.length - 1]));
}

/** How many points each series holds (nulls that mark gaps are not points). */
function pointsOf(u) {
  return u.data.slice(1).map((ys) => { let n = 0; for (const y of ys) if (y != null) n++; return n; });
}

/** The mouse wheel zooms the time axis around the cursor, within the loaded range. */
function wheelZoom(shown, factor = 0.75) {
  return {
    hooks: {
      ready: (u) => {
        u.over.addEventListener('wheel', (event) => {
          event.preventDefault();
          const { min, max } = u.scales.x;
          const [lo, hi] = shown.range;
          const at = u.posToVal(event.offsetX, 'x');
          const scaleBy = event.deltaY < 0 ? factor : 1 / factor;
          let newMin = at - (at - min) * scaleBy;
          let newMax = at + (max - at) * scaleBy;
          if (newMax - newMin >= hi - lo) [newMin, newMax] = [lo, hi];
          u.setScale('x', { min: Math.max(lo, newMin), max: Math.min(hi, newMax) });
        }, { passive: false });
      },
    },
  };
}

/** A dashed vertical line at time `t` (now), over the series. */
function marker(t) {
  return {
    hooks: {
      draw: (u) => {
        const x = Math.round(u.valToPos(t, 'x', true));
        const { top, left, width, height } = u.bbox;
        if (x < left || x > left + width) return;
        const { ctx } = u;
        ctx.save();
        ctx.strokeStyle = '#b42318';
        ctx.lineWidth = 1;
        ctx.setLineDash([4, 4]);
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + height);
        ctx.stroke();
        ctx.restore();
      },
    },
  };
}

/** Stretches of time [from, to) shaded behind the series. */
function shaded(marks) {
  return {
    hooks: {
      drawClear: (u) => {
        const { top, height } = u.bbox;
        const { ctx } = u;
        ctx.save();
        ctx.fillStyle = 'rgba(0, 158, 115, 0.18)'; // Okabe and Ito's bluish green, light
        for (const [from, to] of marks) {
          const x0 = u.valToPos(from, 'x', true);
          const x1 = u.valToPos(to, 'x', true);
          ctx.fillRect(x0, top, x1 - x0, height);
        }
        ctx.restore();
      },
    },
  };
}

/** A click (a press and release within a few pixels: not a drag to zoom) picks a time. */
function clickPick(onPick) {
  return {
    hooks: {
      ready: (u) => {
        let down = null;
        u.over.addEventListener('mousedown', (event) => { down = event.clientX; }, true);
        u.over.addEventListener('click', (event) => {
          if (down === null || Math.abs(event.clientX - down) < 4) {
            onPick(u.posToVal(event.clientX - u.over.getBoundingClientRect().left, 'x'));
          }
          down = null;
        });
      },
    },
  };
}

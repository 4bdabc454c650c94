// One uPlot chart of several series that share the time axis: bars for amounts per bucket,
// lines for everything else, one y scale per unit (the first two get an axis each).

import uPlot from '../vendor/uplot/uPlot.esm.js';

const COLOURS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563'];

/**
 * Draws `series` ([{label, unit, bars, times, values}]) into `element`, times shown in `zone`.
 * Resolves once the first frame is on the canvas, with the chart and the time it took.
 */
export function drawChart(element, series, { zone, width, onZoom, started = performance.now() }) {
  const tables = series.map((s) => [s.times, s.values]);
  const data = tables.length === 1 ? tables[0] : uPlot.join(tables);
  const units = [...new Set(series.map((s) => s.unit))];
  const scale = (unit) => `u${units.indexOf(unit)}`;
  const bars = uPlot.paths.bars({ size: [0.85, 80], align: 1 });

  const options = {
    width,
    height: 360,
    tzDate: (t) => uPlot.tzDate(new Date(t * 1000), zone),
    cursor: { drag: { x: true, y: false } },
    scales: { x: { time: true } },
    series: [
      { label: 'time' },
      ...series.map((s, i) => ({
        label: s.unit ? `${s.label} (${s.unit})` : s.label,
        scale: scale(s.unit),
        stroke: COLOURS[i % COLOURS.length],
        fill: s.bars ? `${COLOURS[i % COLOURS.length]}55` : undefined,
        width: s.bars ? 0 : 1.25,
        paths: s.bars ? bars : undefined,
        points: { show: false },
      })),
    ],
    axes: [
      {},
      ...units.slice(0, 2).map((unit, i) => ({
        scale: scale(unit), side: i === 0 ? 3 : 1, label: unit, grid: { show: i === 0 }, size: 60,
      })),
    ],
    hooks: { setScale: [(u, key) => { if (key === 'x' && onZoom) onZoom(u.scales.x.min, u.scales.x.max); }] },
    plugins: [wheelZoom()],
  };
  for (const unit of units) {
    options.scales[scale(unit)] = {
      range: (u, min, max) => (series.some((s) => s.unit === unit && s.bars)
        ? [Math.min(0, min), max > 0 ? max * 1.05 : 1] : uPlot.rangeNum(min, max, 0.1, true)),
    };
  }

  const prepared = performance.now();
  return new Promise((resolve) => {
    let done = false;
    options.hooks.draw = [(u) => {
      if (done) return;
      done = true;
      u.ctx.getImageData(0, 0, 1, 1); // waits until the canvas really holds the frame
      const drawn = performance.now();
      resolve({ plot: u, prepareMs: prepared - started, drawMs: drawn - prepared, points: pointsOf(u) });
    }];
    element.replaceChildren();
    new uPlot(options, data, element);
  });
}

/** How many points each series holds (nulls that mark gaps are not points). */
function pointsOf(u) {
  return u.data.slice(1).map((ys) => { let n = 0; for (const y of ys) if (y != null) n++; return n; });
}

/** The mouse wheel zooms the time axis around the cursor, within the loaded data. */
function wheelZoom(factor = 0.75) {
  return {
    hooks: {
      ready: (u) => {
        const xs = u.data[0];
        const [lo, hi] = [xs[0], xs[xs.length - 1]];
        u.over.addEventListener('wheel', (event) => {
          event.preventDefault();
          const { min, max } = u.scales.x;
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

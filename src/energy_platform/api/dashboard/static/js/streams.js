// What a stream is, for people: names of the medium and device IDs (docs/devices.md), the
// current configuration, how to chart it, and the channel groups of a feed.

const MEDIA = {
  1: ['Active power', 'W'], 2: ['Voltage', 'V'], 3: ['Current', 'A'], 4: ['Frequency', 'Hz'],
  5: ['Temperature', '°C'], 6: ['Relative humidity', '%'], 7: ['Gas meter', 'm³'],
  8: ['Water meter', 'm³'], 9: ['Heat meter', 'kWh'], 12: ['Active power import', 'W'],
  13: ['Active power export', 'W'], 14: ['Reactive power', 'var'], 18: ['Apparent power', 'VA'],
  22: ['Active energy import', 'Wh'], 23: ['Active energy export', 'Wh'],
  24: ['Reactive energy', 'varh'], 28: ['Apparent energy', 'VAh'],
  40: ['Signal strength', 'dBm'], 41: ['Battery', '%'],
};

const DEVICES = {
  1: 'clamp meter, 1 phase', 3: 'clamp meter, 3 phases', 5: 'gas pulse counter',
  6: 'water pulse counter', 7: 'meter reader', 8: 'thermometer / hygrometer', 9: 'CoAP meter',
};

export const TYPES = ['raw', 'processed', 'system'];

/** The configuration in force: the spec orders configs by validity, the current one last. */
export function currentConfig(stream) {
  const configs = stream.configs ?? [];
  return configs.length ? configs[configs.length - 1] : null;
}

// Raw and system streams: lines of their points, whatever they measure.
const LINE = { bars: false, sum: false, below: false, money: false };

/**
 * How a stream is shown: title, unit, a line of detail, and its chart form. A processed stream
 * is charted by what it is (`quantity`, docs/api.md): consumption, export, cost and credit
 * are amounts per 90 s bucket: bars, summed into longer buckets; export and credit (energy fed
 * in, money earned) are drawn below the axis; cost and credit are money, on a scale of their
 * own. A mean (temperature) is a line, averaged; raw and system streams are lines.
 */
export function describe(stream) {
  if (stream.type === 'raw') {
    const [name, unit] = MEDIA[stream.medium] ?? [`Medium ${stream.medium}`, ''];
    const device = DEVICES[stream.device] ?? `device ${stream.device}`;
    return { title: name, unit, detail: `${device}; medium ${stream.medium}`, ...LINE };
  }
  if (stream.type === 'processed') {
    const config = currentConfig(stream);
    const medium = config?.medium ?? null;
    const { quantity } = stream;
    const parts = [
      medium ?? 'not processed (medium null)',
      quantity,
      stream.combined ? 'combined' : null,
      stream.index !== undefined ? `index ${stream.index}` : null,
      // A meter's register n counts its tariff n (1-0:1.8.n), as the stream's title says.
      stream.register !== undefined ? `tariff ${stream.register}` : null,
      config?.valid_from ? `since ${config.valid_from}` : null,
    ];
    return {
      title: config?.title || `Processed stream ${stream.id}`,
      unit: config?.unit ?? '',
      detail: parts.filter(Boolean).join('; '),
      bars: quantity !== 'mean',
      sum: quantity !== 'mean',
      below: quantity === 'export' || quantity === 'credit',
      money: quantity === 'cost' || quantity === 'credit',
    };
  }
  return { title: `System stream ${stream.id}`, unit: '', detail: 'system', ...LINE };
}

/** Streams grouped by channel (ascending), then by type in the order raw, processed, system. */
export function byChannel(streams) {
  const channels = new Map();
  for (const stream of streams) {
    if (!channels.has(stream.channel)) {
      channels.set(stream.channel, Object.fromEntries(TYPES.map((type) => [type, []])));
    }
    channels.get(stream.channel)[stream.type]?.push(stream);
  }
  return [...channels.entries()].sort(([a], [b]) => a - b);
}

/**
 * What to chart first on a newly opened feed: a channel's total electricity consumption (its
 * combined stream, else one without index or register), else any, else raw power.
 */
export function firstChoice(streams) {
  const energy = streams.filter((s) => s.type === 'processed' && s.quantity === 'consumption'
    && currentConfig(s)?.medium === 'power');
  return energy.find((s) => s.combined)
    ?? energy.find((s) => s.index === undefined && s.register === undefined) ?? energy[0]
    ?? streams.find((s) => s.type === 'raw' && [1, 12].includes(s.medium)) ?? null;
}

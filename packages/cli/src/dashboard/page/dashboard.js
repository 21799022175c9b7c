// The dashboard's script, run in the browser: polls /api/state every second (one request at a time) and updates each
// limiter's card in place, so a form being filled in is never redrawn; actions POST to /api/action with the secret
// in X-Sluice-Token. Every value from the store reaches the DOM as text (textContent), never as markup. The
// 15-minute chart carries its numbers in data-seconds (JSON rows [second, allowed, limited, shadowLimited, shed,
// degraded]), for tests and for anyone who wants the numbers behind a line. Served inline by page.ts (built in
// by build/page.mjs); linted with browser globals.
'use strict';
const SETTINGS = JSON.parse(document.getElementById('settings').textContent);
const OUTCOMES = ['allowed', 'limited', 'shadowLimited', 'shed', 'degraded'];
const COLORS = { allowed: '#2e7d32', limited: '#c62828', shadowLimited: '#ef6c00', shed: '#6a1b9a', degraded: '#546e7a' };
const LABELS = { allowed: 'allowed', limited: 'limited', shadowLimited: 'shadow-limited', shed: 'shed', degraded: 'degraded' };
const SVG = 'http://www.w3.org/2000/svg';
const added = new Set(JSON.parse(localStorage.getItem('sluice-dashboard-names') || '[]'));
const cards = new Map();
const params = new URLSearchParams(location.search);
const headers = { 'x-sluice-token': SETTINGS.secret };
// The token is in the page now: keep it out of the address bar and the history.
if (params.has('token')) history.replaceState(null, '', location.pathname);

document.getElementById('where').textContent = SETTINGS.where;

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
  for (const child of children) node.append(child);
  return node;
}
function svg(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, String(value));
  return node;
}
function banner(message) {
  const node = document.getElementById('banner');
  node.hidden = message === undefined;
  node.textContent = message || '';
}

const ACTION_LABELS = {
  mode: 'mode',
  denyMode: 'deny list mode',
  setQuota: 'set quota',
  removeQuota: 'remove quota',
  addDeny: 'deny',
  removeDeny: 'remove deny entry',
  restore: 'restore',
};

async function act(card, body, done) {
  const what =
    ACTION_LABELS[body.action] + (body.mode || body.identity || body.match ? ' ' + (body.mode || body.identity || body.match) : '') + ': ';
  card.message.className = '';
  card.message.textContent = what + 'writing…';
  try {
    const response = await fetch('/api/action', {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ name: card.name, ...body }),
    });
    const answer = await response.json();
    if (!response.ok) {
      card.message.className = 'error';
      card.message.textContent = what + answer.error;
      return;
    }
    card.message.className = 'ok';
    card.message.textContent =
      what + (answer.config ? 'written, revision ' + answer.config.revision + '; every instance running watchConfig picks it up' : 'done');
    if (done) done();
    if (answer.config !== undefined) renderConfig(card, answer.config, undefined);
  } catch (error) {
    card.message.className = 'error';
    card.message.textContent = what + 'the dashboard did not answer: ' + error.message;
  }
}

function card(name) {
  if (cards.has(name)) return cards.get(name);
  const c = { name };
  c.root = el('section', { class: 'limiter', 'data-name': name });
  c.chart = svg('svg', { class: 'chart', viewBox: '0 0 960 180', role: 'img', 'aria-label': 'decisions per second, last 15 minutes' });
  c.minute = svg('svg', { class: 'minute', viewBox: '0 0 960 180', role: 'img', 'aria-label': 'decisions per second, last minute' });
  c.now = el('span', { class: 'note' });
  const legend = el(
    'div',
    { class: 'legend' },
    ...OUTCOMES.map((o) =>
      el('span', { 'data-outcome': o }, el('b', { class: 'k-' + o }), LABELS[o] + ' ', el('span', { class: 'last' }, '0')),
    ),
  );
  c.legend = legend;
  c.top = el('tbody');
  c.mode = el(
    'div',
    { class: 'modes' },
    ...['enforce', 'shadow', 'off'].map((mode) => {
      const button = el('button', { type: 'button', 'data-mode': mode }, mode);
      button.addEventListener('click', () => act(c, { action: 'mode', mode }));
      return button;
    }),
  );
  c.modeNote = el('span', { class: 'note' });
  // The deny list's own switch: the mode above (the kill switch) does not lift the list.
  c.denyMode = el(
    'div',
    { class: 'modes deny-modes' },
    ...['enforce', 'shadow', 'off'].map((mode) => {
      const button = el('button', { type: 'button', 'data-deny-mode': mode }, mode);
      button.addEventListener('click', () => act(c, { action: 'denyMode', mode }));
      return button;
    }),
  );
  c.denyModeNote = el('span', { class: 'note' });
  c.rules = el('pre');
  c.quotas = el('tbody');
  c.deny = el('tbody');
  c.configError = el('div', { class: 'error' });
  c.lost = el('div', { class: 'error lost', hidden: '' });
  c.message = el('div', { role: 'status' });
  const quotaForm = el(
    'form',
    { class: 'inline quota-form' },
    el('input', { name: 'identity', placeholder: 'identity', required: '' }),
    el('input', { name: 'rules', placeholder: '[{"algorithm":"gcra","limit":100,"period":"1s"}]', size: '40', required: '' }),
    el('button', { type: 'submit' }, 'set quota'),
  );
  quotaForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const form = new FormData(quotaForm);
    act(c, { action: 'setQuota', identity: form.get('identity'), rules: form.get('rules') }, () => quotaForm.reset());
  });
  const denyForm = el(
    'form',
    { class: 'inline deny-form' },
    el('input', { name: 'match', placeholder: 'address, CIDR or user:42', required: '' }),
    el('label', { class: 'note' }, el('input', { type: 'checkbox', name: 'identity' }), ' identity as it is'),
    el('input', { name: 'for', placeholder: 'for (1h; empty: until removed)', size: '14' }),
    el('input', { name: 'reason', placeholder: 'reason', size: '20' }),
    el('button', { type: 'submit' }, 'deny'),
  );
  denyForm.addEventListener('submit', (event) => {
    event.preventDefault();
    const form = new FormData(denyForm);
    const kind = form.get('identity') ? 'identity' : 'auto';
    act(c, { action: 'addDeny', match: form.get('match'), for: form.get('for'), reason: form.get('reason'), kind }, () => denyForm.reset());
  });
  c.root.append(
    el('h2', {}, name),
    c.lost,
    legend,
    el(
      'div',
      { class: 'charts' },
      el('div', {}, el('h3', {}, 'Last 15 minutes'), c.chart),
      el('div', {}, el('h3', {}, 'Last minute'), c.minute),
    ),
    c.now,
    el(
      'div',
      { class: 'row' },
      el(
        'div',
        {},
        el('h3', {}, 'Limited most, last minute'),
        el('table', { class: 'top' }, el('thead', {}, el('tr', {}, el('th', {}, 'identity'), el('th', {}, 'limited'))), c.top),
      ),
      el('div', {}, el('h3', {}, 'Mode'), c.mode, c.modeNote, el('h3', {}, 'Rules'), c.rules, c.configError),
      el('div', {}, el('h3', {}, 'Quotas'), el('table', { class: 'quotas' }, c.quotas), quotaForm),
      el('div', {}, el('h3', {}, 'Deny list'), c.denyMode, c.denyModeNote, el('table', { class: 'deny' }, c.deny), denyForm),
    ),
    c.message,
  );
  document.getElementById('limiters').append(c.root);
  cards.set(name, c);
  return c;
}

/** Draws one line per outcome over [from, to] (a second with nothing published is zero) into the SVG element. */
function drawChart(chart, seconds, from, to, ticks) {
  // Drawn at the element's own size, so that text keeps its proportions.
  const width = Math.max(200, Math.round(chart.getBoundingClientRect().width) || 960),
    height = 180,
    top = 12,
    bottom = 18;
  chart.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
  const byOutcome = Object.fromEntries(OUTCOMES.map((o) => [o, new Map()]));
  let max = 1;
  for (const s of seconds) {
    if (s.second < from || s.second > to) continue;
    for (const o of OUTCOMES) {
      byOutcome[o].set(s.second, s.counts[o] || 0);
      max = Math.max(max, s.counts[o] || 0);
    }
  }
  const x = (second) => ((second - from) / Math.max(1, to - from)) * width;
  const y = (value) => height - bottom - (value / max) * (height - top - bottom);
  const text = (content, attributes) => {
    const node = svg('text', { 'font-size': 10, fill: '#777', ...attributes });
    node.textContent = content;
    return node;
  };
  chart.replaceChildren();
  for (let i = 1; i <= 3; i++) {
    const value = Math.round((max * i) / 3);
    chart.append(svg('line', { x1: 0, x2: width, y1: y(value), y2: y(value), stroke: '#e3e6ea' }));
    chart.append(text(value + '/s', { x: 4, y: y(value) - 2 }));
  }
  for (const [ago, label] of ticks) {
    const at = x(to - ago);
    chart.append(svg('line', { x1: at, x2: at, y1: top, y2: height - bottom, stroke: '#eef0f3' }));
    chart.append(text(label, { x: at, y: height - 5, 'text-anchor': ago === 0 ? 'end' : at < 30 ? 'start' : 'middle' }));
  }
  for (const o of OUTCOMES) {
    const points = [];
    for (let second = from; second <= to; second++) points.push(x(second).toFixed(1) + ',' + y(byOutcome[o].get(second) || 0).toFixed(1));
    chart.append(svg('polyline', { points: points.join(' '), fill: 'none', stroke: COLORS[o], 'stroke-width': 1.5, 'data-outcome': o }));
  }
}

function renderChart(c, view, from, to) {
  drawChart(c.chart, view.seconds, from, to, [
    [900, '-15 min'],
    [600, '-10 min'],
    [300, '-5 min'],
    [0, 'now'],
  ]);
  drawChart(c.minute, view.seconds, to - 59, to, [
    [59, '-60 s'],
    [45, '-45 s'],
    [30, '-30 s'],
    [15, '-15 s'],
    [0, 'now'],
  ]);
  c.chart.setAttribute('data-from', from);
  c.chart.setAttribute('data-to', to);
  c.chart.setAttribute('data-seconds', JSON.stringify(view.seconds.map((s) => [s.second, ...OUTCOMES.map((o) => s.counts[o] || 0)])));
  const last =
    view.seconds.length > 0 && view.seconds[view.seconds.length - 1].second === to ? view.seconds[view.seconds.length - 1] : undefined;
  for (const span of c.legend.querySelectorAll('[data-outcome]'))
    span.querySelector('.last').textContent = String(last ? last.counts[span.dataset.outcome] || 0 : 0) + '/s';
  c.now.textContent =
    'Decisions per second, summed over every instance that publishes; the legend is the newest second every instance has published (' +
    new Date(to * 1000).toISOString().slice(11, 19) +
    ' UTC).';
}

function renderTop(c, view) {
  c.top.replaceChildren(
    ...view.topLimited.map(([identity, count]) => el('tr', {}, el('td', {}, identity), el('td', { class: 'n' }, String(count)))),
  );
  if (view.topLimited.length === 0) c.top.append(el('tr', {}, el('td', { class: 'note' }, 'none')));
}

/** An epoch-ms time as text; one a Date cannot hold (a bad stored entry) as the number, never an exception. */
function timeText(ms) {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) + ' (not a time)' : date.toISOString().replace('.000', '');
}

function renderConfig(c, config, configError, denySkipped) {
  for (const button of c.mode.querySelectorAll('button'))
    button.classList.toggle('current', (config && config.mode) === button.dataset.mode);
  c.root.setAttribute('data-mode', (config && config.mode) || '');
  c.modeNote.textContent = config && config.mode ? '' : " (none stored: the code's mode)";
  for (const button of c.denyMode.querySelectorAll('button'))
    button.classList.toggle('current', (config && config.denyMode) === button.dataset.denyMode);
  c.root.setAttribute('data-deny-mode', (config && config.denyMode) || '');
  c.denyModeNote.textContent = config && config.denyMode ? '' : " (none stored: the code's, enforce by default)";
  c.rules.textContent = config && config.rules ? JSON.stringify(config.rules, null, 1) : "none stored: the code's rules";
  c.configError.textContent = configError ? 'the stored configuration is not valid, instances ignore it: ' + configError : '';
  const quotas = Object.entries((config && config.quotas) || {});
  c.quotas.replaceChildren(
    ...quotas.map(([identity, rules]) => {
      const remove = el('button', { type: 'button' }, 'remove');
      remove.addEventListener('click', () => act(c, { action: 'removeQuota', identity }));
      return el('tr', { 'data-identity': identity }, el('td', {}, identity), el('td', {}, JSON.stringify(rules)), el('td', {}, remove));
    }),
  );
  if (quotas.length === 0) c.quotas.append(el('tr', {}, el('td', { class: 'note' }, 'none')));
  const now = Date.now();
  const deny = (config && config.deny) || [];
  c.deny.replaceChildren(
    ...deny.map((entry) => {
      const remove = el('button', { type: 'button' }, 'remove');
      remove.addEventListener('click', () => act(c, { action: 'removeDeny', match: entry.match }));
      const until =
        entry.until === undefined ? 'until removed' : 'until ' + timeText(entry.until) + (entry.until <= now ? ' (expired)' : '');
      return el(
        'tr',
        { 'data-match': entry.match },
        el('td', {}, entry.match),
        el('td', {}, until),
        el('td', {}, entry.reason || ''),
        el('td', {}, remove),
      );
    }),
  );
  // Entries the server left out as not valid (instances ignore them): said so, and removable by their match.
  for (const skipped of denySkipped || []) {
    const cells = [
      el('td', {}, skipped.match === undefined ? '(no match)' : skipped.match),
      el('td', { class: 'error' }, 'not valid, ignored: ' + skipped.problem),
      el('td', {}),
    ];
    if (skipped.match !== undefined) {
      const remove = el('button', { type: 'button' }, 'remove');
      remove.addEventListener('click', () => act(c, { action: 'removeDeny', match: skipped.match }));
      cells.push(el('td', {}, remove));
    }
    c.deny.append(el('tr', { 'data-skipped': String(skipped.index) }, ...cells));
  }
  if (deny.length === 0 && !(denySkipped && denySkipped.length > 0)) c.deny.append(el('tr', {}, el('td', { class: 'note' }, 'none')));
}

/** A document the store lost (no tombstone): what instances keep, and a button that writes it back. */
function renderLost(c, lost) {
  c.lost.hidden = !lost;
  c.root.setAttribute('data-lost', lost ? String(lost.revision) : '');
  if (!lost) return c.lost.replaceChildren();
  const restore = el('button', { type: 'button', 'data-restore': '' }, 'restore revision ' + lost.revision);
  restore.addEventListener('click', () => act(c, { action: 'restore' }));
  c.lost.replaceChildren(
    'The stored configuration is gone and no operator deleted it (the store restarted empty?). Instances that applied it keep revision ' +
      lost.revision +
      (lost.denyEntries > 0 ? ' and its ' + lost.denyEntries + ' deny ' + (lost.denyEntries === 1 ? 'entry' : 'entries') : '') +
      "; instances started since have only their code's. ",
    restore,
  );
}

async function poll() {
  try {
    const response = await fetch('/api/state?names=' + encodeURIComponent([...added].join(',')), { headers, cache: 'no-store' });
    const answer = await response.json();
    if (!response.ok) {
      banner(answer.error || 'the dashboard answered ' + response.status);
    } else {
      banner(undefined);
      document.getElementById('clock').textContent = new Date().toISOString().slice(11, 19) + ' UTC';
      document.getElementById('names-note').textContent =
        (answer.analytics ? '' : 'This store has no analytics reader: no decisions to show. ') +
        (answer.namesListed ? '' : 'This store cannot list configuration names: add them here.');
      for (const view of answer.limiters) {
        const c = card(view.name);
        renderLost(c, view.lost);
        // One card that cannot be drawn says so on itself; the cards after it are drawn all the same.
        try {
          renderChart(c, view, answer.from, answer.to);
          renderTop(c, view);
          renderConfig(c, view.config, view.configError, view.denySkipped);
        } catch (error) {
          c.message.className = 'error';
          c.message.textContent = 'this limiter could not be shown: ' + error.message;
        }
      }
    }
  } catch (error) {
    banner('the dashboard server did not answer: ' + error.message);
  }
  setTimeout(poll, 1000);
}

document.getElementById('add-name').addEventListener('submit', (event) => {
  event.preventDefault();
  const input = event.target.elements.name;
  const name = input.value.trim();
  if (name === '') return;
  added.add(name);
  localStorage.setItem('sluice-dashboard-names', JSON.stringify([...added]));
  input.value = '';
});
poll();

/*
 * usage.js - usage over time: for each tenant and GPU model, the GPUs it
 * had allocated and the GPUs it used (allocation times the engine-active
 * ratio), averaged over each step, as an SVG line chart built here, with
 * the totals as a table. A tenant sees only its own.
 */
'use strict';

const CHART = {w: 760, h: 220, left: 56, right: 16, top: 16, bottom: 36};

function usageWindow(u) {
    const now = new Date(), day = 86400000;
    const to = u.get('to') || new Date(Math.floor(now / day) * day + day).toISOString()
        .replace('.000', '');
    const from = u.get('from') || new Date(Date.parse(to) - 30 * day).toISOString()
        .replace('.000', '');
    return {from, to, step: u.get('step') || '1d', tenant: u.get('tenant') || ''};
}

/* Series summed over profiles: key tenant / model, points in GPUs. */
function byTenantModel(doc) {
    const hours = (doc.stepSeconds || 3600) / 3600, out = new Map();
    for (const s of TS.items(doc, 'series')) {
        const key = s.tenant + ' / ' + s.model;
        if (!out.has(key)) out.set(key, {tenant: s.tenant, model: s.model,
            points: s.points.map(p => ({t: p.t, alloc: 0, used: 0}))});
        const o = out.get(key);
        s.points.forEach((p, i) => {
            o.points[i].alloc += p.allocationMicroGpuHours / 1e6 / hours;
            o.points[i].used += p.usageMicroGpuHours / 1e6 / hours;
        });
    }
    return [...out.values()];
}

function axisLabels(g, ymax, pts, x) {
    const S = TS.svg, c = CHART;
    for (let k = 0; k <= 4; k++) {
        const y = c.top + (c.h - c.top - c.bottom) * (1 - k / 4);
        g.append(S('line', {class: 'axis', x1: c.left - 4, x2: c.left, y1: y, y2: y}),
            S('text', {x: c.left - 6, y: y + 4, 'text-anchor': 'end'}, TS.num(ymax * k / 4)));
    }
    const every = Math.max(1, Math.ceil(pts.length / 6));
    pts.forEach((p, i) => {
        if (i % every) return;
        g.appendChild(S('text', {x: x(i), y: c.h - c.bottom + 16, 'text-anchor': 'middle'},
            p.t.replace('T', ' ').replace(':00Z', '')));
    });
}

function chart(series) {
    const S = TS.svg, c = CHART, pts = series.points;
    const ymax = Math.max(1e-9, ...pts.map(p => Math.max(p.alloc, p.used))) * 1.1;
    const x = i => c.left + (c.w - c.left - c.right) * (pts.length > 1 ? i / (pts.length - 1)
        : 0.5);
    const y = v => c.top + (c.h - c.top - c.bottom) * (1 - v / ymax);
    const line = f => pts.map((p, i) => (i ? 'L' : 'M') + x(i).toFixed(1) + ' ' +
        y(f(p)).toFixed(1)).join(' ');
    const col = TS.colour(series.tenant);
    const title = series.tenant + ' on ' + series.model + ': allocated vs used GPUs';
    const g = S('svg', {class: 'chart', viewBox: '0 0 ' + c.w + ' ' + c.h, width: c.w,
        height: c.h, role: 'img', 'aria-label': title}, S('title', {}, title));
    g.append(S('line', {class: 'axis', x1: c.left, x2: c.left, y1: c.top,
        y2: c.h - c.bottom}), S('line', {class: 'axis', x1: c.left, x2: c.w - c.right,
        y1: c.h - c.bottom, y2: c.h - c.bottom}),
    S('path', {class: 'alloc', d: line(p => p.alloc), stroke: '#333'}),
    S('path', {class: 'used', d: line(p => p.used), stroke: col === '#ffffff' ? '#000' : col}),
    S('path', {class: 'used', d: line(p => p.used), stroke: '#000', 'stroke-width': 0.5}));
    axisLabels(g, ymax, pts, x);
    return g;
}

function usageForm(who, q) {
    const f = TS.el('form', {class: 'row', 'aria-label': 'Choose the window'});
    const input = (label, name) => TS.el('label', {}, label,
        TS.el('input', {name, value: q[name]}));
    f.append(input('From', 'from'), input('To', 'to'), input('Step', 'step'));
    if (TS.isOperator(who)) f.append(input('Tenant', 'tenant'));
    f.append(TS.el('button', {type: 'submit'}, 'Show'));
    return TS.onSearch(f);
}

TS.page('Usage', async (main, who) => {
    const q = usageWindow(new URLSearchParams(location.search));
    main.appendChild(usageForm(who, q));
    if (!who.metering) {
        main.appendChild(TS.el('p', {}, 'This server has no metering store (serve --db).'));
        return;
    }
    const doc = await TS.api('usage', {from: q.from, to: q.to, step: q.step,
        tenant: q.tenant || null});
    main.appendChild(TS.el('p', {class: 'muted'}, 'Dashed: GPUs allocated; solid: GPUs ' +
        'used (allocation times engine activity), each averaged over a step of ' +
        (doc.stepSeconds / 3600) + ' h.'));
    for (const s of byTenantModel(doc))
        main.append(TS.el('h2', {}, s.tenant + ' on ' + s.model), chart(s));
    main.appendChild(TS.table('GPU-hours from ' + doc.from + ' to ' + doc.to,
        ['tenant', 'model', 'profile', 'allocated', 'used', 'unknown'],
        TS.items(doc, 'totals').map(t => [t.tenant, t.model, t.profile,
            TS.num(t.allocationMicroGpuHours / 1e6, 6), TS.num(t.usageMicroGpuHours / 1e6, 6),
            TS.num(t.unknownUsageMicroGpuHours / 1e6, 6)])));
});

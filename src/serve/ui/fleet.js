/*
 * fleet.js - the fleet map (operators): every card as its MIG grid (the
 * placements in grid units) or its pool's clients, coloured by tenant.
 * Hovering or focusing an instance shows its workload, profile, placement,
 * instance UUID and current holder. Built once into a fragment with one
 * listener for the whole map, so 1,000 cards stay quick.
 */
'use strict';

const FLEET_GRID = 8; /* grid units of a MIG card: A100 and H100 place in 8 */

function fleetSummary(sum) {
    const box = (label, value) => TS.el('div', {}, TS.el('strong', {}, value), label);
    return TS.el('section', {class: 'summary', 'aria-label': 'Summary'},
        box('GPUs used', sum.gpusUsed + ' of ' + sum.gpusTotal),
        box('GPUs without sharing', sum.naiveGpus),
        box('saved', TS.num(sum.savingsPercent, 1) + ' %'),
        box('cost per hour', sum.costPerHour === null || sum.costPerHour === undefined
            ? 'n/a' : TS.num(sum.costPerHour) + ' ' + (sum.currency || '')));
}

function slotLabel(card, inst) {
    if (inst.canary) return 'canary slice (kept free)';
    const who = inst.tenant ? inst.tenant + '/' + inst.workload : 'free';
    return who + (inst.profile ? ' ' + inst.profile : '') + (inst.guest ? ' (guest)' : '');
}

function slotDetail(card, inst) {
    const place = inst.start !== null && inst.start !== undefined
        ? inst.profile + ':' + inst.start + ' (size ' + inst.size + ')' : card.mode;
    return [['Card', card.node + ' #' + card.index + ' (' + card.model + ', ' + card.mode + ')'],
        ['Tenant', inst.tenant || '-'], ['Workload', inst.workload || '-'],
        ['Profile', inst.profile || card.mode], ['Placement', place],
        ['Memory', TS.num(inst.memoryGiB, 1) + ' GiB'],
        ['Instance UUID', inst.uuid || 'not recorded'],
        ['Holder', inst.holder || 'not recorded']];
}

function cardGrid(card, detailOf) {
    const mig = card.mode === 'mig';
    const insts = card.instances || [];
    const width = mig ? Math.max(FLEET_GRID, ...insts.map(i => (i.start || 0) + (i.size || 0)))
        : Math.max(1, insts.length);
    const grid = TS.el('div', {class: 'grid'});
    grid.style.gridTemplateColumns = 'repeat(' + width + ', 1fr)';
    const used = new Array(width).fill(false);
    insts.forEach((inst, k) => {
        const start = mig ? inst.start : k, size = mig ? inst.size : 1;
        const label = slotLabel(card, inst);
        const s = TS.el('div', {class: 'slot', tabindex: '0', role: 'button',
            'aria-label': card.node + ' GPU ' + card.index + ': ' + label}, label);
        s.style.gridColumn = (start + 1) + ' / span ' + size;
        s.style.background = TS.colour(inst.tenant);
        detailOf.set(s, slotDetail(card, inst));
        for (let u = start; u < start + size && u < width; u++) used[u] = true;
        grid.appendChild(s);
    });
    used.forEach((u, k) => {
        if (u) return;
        const f = TS.el('div', {class: 'slot free'}, mig ? '' : 'free');
        f.style.gridColumn = (k + 1) + ' / span 1';
        grid.appendChild(f);
    });
    return TS.el('div', {class: 'card', 'data-node': card.node, 'data-index': card.index},
        TS.el('h3', {}, card.node + ' #' + card.index + ' ' + card.model + ' ' + card.mode),
        grid);
}

function fleetDetail(panel, rows) {
    const dl = TS.el('dl', {});
    for (const [k, v] of rows) dl.append(TS.el('dt', {}, k), TS.el('dd', {}, v));
    panel.replaceChildren(dl);
}

function fleetLegend(gpus) {
    const names = [...new Set(gpus.flatMap(g => (g.instances || []).map(i => i.tenant))
        .filter(Boolean))];
    return TS.el('ul', {class: 'legend', 'aria-label': 'Tenants'}, names.map(n => {
        const sw = TS.el('span', {class: 'swatch', 'aria-hidden': 'true'});
        sw.style.background = TS.colour(n);
        return TS.el('li', {}, sw, n);
    }));
}

/* The ledger's latest custody entry per device, queued by node, tenant,
 * workload and profile in chain order: the k-th instance of that key in card
 * order is the k-th device recorded for it. */
async function fleetCustody(who) {
    const queues = new Map();
    if (!who.metering) return queues;
    const pages = await Promise.all((who.tenants || []).map(t =>
        TS.api('ledger/history', {tenant: t, limit: 1000}).catch(() => null)));
    const latest = new Map();
    for (const e of pages.flatMap(p => TS.items(p))) {
        if (e.source === 'observed') continue;
        const id = e.instanceUuid || e.gpuUuid, old = latest.get(id);
        latest.set(id, old ? {...e, first: old.first} : {...e, first: e.seq});
    }
    for (const e of [...latest.values()].sort((a, b) => a.first - b.first)) {
        const key = [e.node, e.tenant, e.workload, e.profile || 'whole'].join('|');
        if (!queues.has(key)) queues.set(key, []);
        queues.get(key).push(e);
    }
    return queues;
}

function fleetAttach(gpus, queues) {
    for (const g of gpus)
        for (const i of g.instances || []) {
            const q = queues.get([g.node, i.tenant, i.workload, i.profile || 'whole'].join('|'));
            const e = q && q.shift();
            if (!e) continue;
            i.uuid = e.instanceUuid || e.gpuUuid;
            i.holder = e.tenant + '/' + e.workload + ' since ' + e.time + ' (ledger seq ' +
                e.seq + ')';
        }
}

TS.page('Fleet', async (main, who) => {
    const [plan, queues] = await Promise.all([TS.api('plan'), fleetCustody(who)]);
    const gpus = TS.items(plan, 'gpus');
    fleetAttach(gpus, queues);
    main.appendChild(fleetSummary(plan.summary || {}));
    const panel = TS.el('section', {class: 'detail', 'aria-live': 'polite',
        'aria-label': 'Selected instance'}, TS.el('p', {class: 'muted'},
        'Hover over or focus (Tab) an instance to see its workload, profile, placement, ' +
        'instance UUID and holder.'));
    const detailOf = new WeakMap();
    const map = TS.el('section', {class: 'fleet', 'aria-label': 'Cards'});
    const frag = document.createDocumentFragment();
    for (const card of gpus) frag.appendChild(cardGrid(card, detailOf));
    map.appendChild(frag);
    const show = ev => {
        const rows = detailOf.get(ev.target);
        if (rows) fleetDetail(panel, rows);
    };
    map.addEventListener('mouseover', show);
    map.addEventListener('focusin', show);
    main.append(TS.el('h2', {}, gpus.length + ' cards'), fleetLegend(gpus), panel, map);
}, {operatorOnly: true});

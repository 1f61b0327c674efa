/*
 * grid.js - cards drawn as the fleet map draws them (fleet.js, and a
 * tenant's own cards in tenant.js): a MIG card as its grid of placement
 * units, each instance spanning its placement; a whole card or a pool as its
 * clients side by side; coloured by tenant, each instance focusable, with a
 * detail panel that hover and keyboard focus fill (one listener per map);
 * instance UUIDs and holders as the plan gives them (its `uuid` and
 * `holder`, from the custody ledger).
 */
'use strict';

const GRID_UNITS = 8; /* placement units of a MIG card: A100 and H100 place in 8 */

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
        ['Holder', holderText(inst.holder)],
        ['Card UUID', card.uuid || 'not recorded'],
        ['Card holder', holderText(card.holder)]];
}

function cardGrid(card, detailOf) {
    const mig = card.mode === 'mig';
    const insts = card.instances || [];
    const width = mig ? Math.max(GRID_UNITS, ...insts.map(i => (i.start || 0) + (i.size || 0)))
        : Math.max(1, insts.length);
    const grid = TS.el('div', {class: 'grid'});
    grid.style.gridTemplateColumns = 'repeat(' + width + ', 1fr)';
    const used = new Array(width).fill(false);
    insts.forEach((inst, k) => {
        const start = mig ? inst.start : k, size = mig ? inst.size : 1;
        const label = slotLabel(card, inst);
        const top = inst.canary ? 'canary' : inst.tenant || 'free';
        const bottom = inst.profile || (inst.guest ? 'guest' : card.mode);
        /* the name starts with the text shown (WCAG 2.5.3, label in name) */
        const s = TS.el('div', {class: 'slot', tabindex: '0', role: 'button',
            'aria-label': top + ' ' + bottom + ', ' + card.node + ' GPU ' + card.index + ': ' +
                label, 'data-tenant': inst.tenant || ''},
        TS.el('span', {}, top), ' ', TS.el('span', {}, bottom));
        s.style.gridArea = '1 / ' + (start + 1) + ' / 2 / span ' + size;
        s.style.background = TS.colour(inst.tenant);
        detailOf.set(s, slotDetail(card, inst));
        for (let u = start; u < start + size && u < width; u++) used[u] = true;
        grid.appendChild(s);
    });
    used.forEach((u, k) => {
        if (u) return;
        /* a tenant is not shown the others on its cards: their units are 'other' */
        const other = card.sharedWithOthers;
        const f = TS.el('div', {class: other ? 'slot other' : 'slot free', 'aria-hidden': 'true'},
            mig ? '' : other ? 'other' : 'free');
        f.style.gridArea = '1 / ' + (k + 1) + ' / 2 / span 1';
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

/* The tenants' colours; pressing one dims every other tenant's instances
 * (pressing it again, or another, changes that). */
function fleetLegend(gpus, map) {
    const names = [...new Set(gpus.flatMap(g => (g.instances || []).map(i => i.tenant))
        .filter(Boolean))];
    const buttons = [];
    const pick = name => {
        for (const b of buttons)
            b.setAttribute('aria-pressed', String(b.dataset.tenant === name));
        for (const s of map.querySelectorAll('.slot[role=button]'))
            s.classList.toggle('dim', name !== null && s.dataset.tenant !== name);
    };
    return TS.el('ul', {class: 'legend', 'aria-label': 'Highlight a tenant'}, names.map(n => {
        const sw = TS.el('span', {class: 'swatch', 'aria-hidden': 'true'});
        sw.style.background = TS.colour(n);
        const b = TS.el('button', {type: 'button', 'aria-pressed': 'false', 'data-tenant': n},
            sw, n);
        b.addEventListener('click', () =>
            pick(b.getAttribute('aria-pressed') === 'true' ? null : n));
        buttons.push(b);
        return TS.el('li', {}, b);
    }));
}

/* A custody entry of the plan (`holder`) as text. */
function holderText(h) {
    return h ? h.tenant + '/' + h.workload + ' since ' + h.since + ' (ledger seq ' + h.seq + ')'
        : 'not recorded';
}

/* The panel and the map of cards; hover or focus on an instance fills the panel. */
function gridMap(gpus, label) {
    const panel = TS.el('section', {class: 'detail', 'aria-live': 'polite',
        'aria-label': 'Selected instance'}, TS.el('p', {class: 'muted'},
        'Hover over or focus (Tab) an instance to see its workload, profile, placement, ' +
        'instance UUID and holder.'));
    const detailOf = new WeakMap();
    const map = TS.el('section', {class: 'fleet', 'aria-label': label});
    const frag = document.createDocumentFragment();
    for (const card of gpus) frag.appendChild(cardGrid(card, detailOf));
    map.appendChild(frag);
    const show = ev => {
        const slot = ev.target.closest('.slot');
        const rows = slot && detailOf.get(slot);
        if (rows) fleetDetail(panel, rows);
    };
    map.addEventListener('mouseover', show);
    map.addEventListener('focusin', show);
    return [panel, map];
}

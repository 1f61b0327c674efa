/*
 * ledger.js - the ledger search (operators): who held a GPU or MIG
 * instance at a time, and the custody history of a device or a tenant.
 */
'use strict';

const LEDGER_HEADS = ['seq', 'time', 'tenant', 'workload', 'node', 'GPU', 'instance',
    'profile', 'placement', 'source'];

function ledgerRows(list) {
    return list.map(e => [e.seq, e.time, e.tenant, e.workload, e.node, e.gpuUuid,
        e.instanceUuid, e.profile, e.placement, e.source]);
}

function ledgerForm(q) {
    const f = TS.el('form', {class: 'row', 'aria-label': 'Search the ledger'});
    const input = (label, name, extra) => TS.el('label', {}, label,
        TS.el('input', {name, value: q[name] || '', ...extra}));
    f.append(input('GPU or MIG UUID', 'uuid', {size: 44}),
        input('Tenant (history)', 'tenant', {}),
        input('At (RFC 3339)', 'at', {placeholder: '2026-11-02T12:00:00Z'}),
        TS.el('button', {type: 'submit'}, 'Search'));
    return TS.onSearch(f);
}

TS.page('Ledger', async (main, who) => {
    const u = new URLSearchParams(location.search);
    const q = {uuid: u.get('uuid'), tenant: u.get('tenant'), at: u.get('at')};
    main.appendChild(ledgerForm(q));
    if (!who.metering) {
        main.appendChild(TS.el('p', {}, 'This server has no metering store (serve --db).'));
        return;
    }
    if (q.uuid) {
        const h = await TS.api('ledger/holders', {uuid: q.uuid, at: q.at});
        main.append(TS.el('h2', {}, 'Holders of ' + h.uuid + ' at ' + h.at),
            TS.table('Custody', LEDGER_HEADS, ledgerRows(h.custody || [])),
            TS.table('Observed', LEDGER_HEADS, ledgerRows(h.observed || [])));
    }
    if (q.uuid || q.tenant) {
        const p = q.uuid ? {uuid: q.uuid} : {tenant: q.tenant};
        const hist = await TS.api('ledger/history', {...p, limit: 500});
        main.append(TS.el('h2', {}, 'History'), TS.el('p', {class: 'muted'},
            TS.items(hist).length + ' of ' + hist.total + ' entries'),
        TS.table('Entries in chain order', LEDGER_HEADS, ledgerRows(TS.items(hist))));
    }
}, {operatorOnly: true});

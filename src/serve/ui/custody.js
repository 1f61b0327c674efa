/*
 * custody.js - custody violations (a pod of one tenant seen on a device
 * another holds, from the ledger) and the webhook's recent admission
 * denials by rule (operators).
 */
'use strict';

function pager(doc) {
    return TS.el('p', {class: 'muted'}, 'Showing ' + TS.items(doc).length + ' of ' +
        (doc.total || 0) + (doc.dropped ? ' (' + doc.dropped + ' older dropped)' : ''));
}

TS.page('Custody and admission', async (main, who) => {
    const u = new URLSearchParams(location.search);
    const tenant = u.get('tenant') || null, rule = u.get('rule') || null;
    main.appendChild(TS.el('h2', {}, 'Custody violations'));
    if (who.metering) {
        const v = await TS.api('violations', {tenant, limit: 200});
        main.append(pager(v), TS.table('Pods seen on a device another tenant holds',
            ['seq', 'time', 'pod', 'tenant', 'node', 'device', 'profile', 'source'],
            TS.items(v).map(e => [e.seq, e.time, e.pod || e.workload, e.tenant, e.node,
                e.instanceUuid || e.gpuUuid, e.profile, e.source])));
    } else {
        main.appendChild(TS.el('p', {}, 'This server has no metering store (serve --db).'));
    }
    main.appendChild(TS.el('h2', {}, 'Admission denials'));
    const d = await TS.api('denials', {tenant, rule, limit: 200});
    const byRule = new Map();
    for (const x of TS.items(d)) byRule.set(x.rule, (byRule.get(x.rule) || 0) + 1);
    main.append(pager(d), TS.table('Denials on this page by rule', ['rule', 'count'],
        [...byRule].map(([r, n]) => [r, n])),
    TS.table('Recent denials, newest first', ['time', 'rule', 'tenant', 'namespace',
        'kind', 'message'], TS.items(d).map(x => [x.time, x.rule, x.tenant, x.namespace,
        x.kind, x.message])));
}, {operatorOnly: true});

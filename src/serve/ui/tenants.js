/*
 * tenants.js - tenants (operators): each tenant's contract as the API
 * gives it and the decisions the planner took for its workloads, with the
 * rule and its reason.
 */
'use strict';

function contractRows(t) {
    const rows = [];
    for (const [k, v] of Object.entries(t)) {
        if (k === 'name' || k === 'tenant' || k === 'decisions' || v === null) continue;
        rows.push([k, typeof v === 'object' ? JSON.stringify(v) : String(v)]);
    }
    return rows;
}

function decisionRows(ds) {
    return ds.map(d => [d.workload, d.mechanism, d.profile || '-', d.gpuModel,
        String(d.gpus) + ' x ' + String(d.replicas), d.rule, d.reason]);
}

TS.page('Tenants', async main => {
    const [tenants, plan] = await Promise.all([TS.api('tenants'), TS.api('plan')]);
    const decisions = TS.items(plan, 'decisions');
    for (const t of TS.items(tenants, 'tenants')) {
        const name = t.name || t.tenant;
        const sec = TS.el('section', {'aria-label': 'Tenant ' + name});
        sec.appendChild(TS.el('h2', {}, name));
        const rows = contractRows(t);
        if (rows.length) sec.appendChild(TS.table('Contract', ['field', 'value'], rows));
        const ds = Array.isArray(t.decisions) ? t.decisions
            : decisions.filter(d => d.tenant === name);
        sec.appendChild(TS.table('Decisions', ['workload', 'mechanism', 'profile', 'model',
            'GPUs x replicas', 'rule', 'reason'], decisionRows(ds)));
        main.appendChild(sec);
    }
}, {operatorOnly: true});

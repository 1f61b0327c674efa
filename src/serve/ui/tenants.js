/*
 * tenants.js - tenants (operators): each tenant's contract (isolation,
 * namespaces, workloads), the decisions the planner took for its
 * workloads with the rule and its reason, and what each entitles its pods
 * to. Each tenant links to the page it sees itself.
 */
'use strict';

function contractRows(t) {
    const c = t.contract || {};
    const rows = [['display name', t.displayName || t.name],
        ['namespaces', (t.namespaces || []).join(', ')]];
    for (const [k, v] of Object.entries(c))
        rows.push([k, typeof v === 'object' ? JSON.stringify(v) : String(v)]);
    return rows;
}

function decisionRows(ds) {
    return ds.map(d => [d.workload, d.mechanism, d.profile || '-', d.gpuModel,
        String(d.gpus) + ' x ' + String(d.replicas), d.rule, d.reason]);
}

function entitlementRows(es) {
    return es.map(e => [e.workload, e.mechanism, e.profile || '-', e.resource,
        e.perContainer, e.instances]);
}

function tenantSection(t) {
    const sec = TS.el('section', {'aria-label': 'Tenant ' + t.name, 'data-tenant': t.name});
    sec.append(TS.el('h2', {}, t.name),
        TS.el('p', {}, TS.link('tenant.html', {tenant: t.name}, 'What ' + t.name + ' sees')),
        TS.table('Contract', ['field', 'value'], contractRows(t)),
        TS.table('Decisions', ['workload', 'mechanism', 'profile', 'model', 'GPUs x replicas',
            'rule', 'reason'], decisionRows(t.decisions || [])),
        TS.table('Entitlements', ['workload', 'mechanism', 'profile', 'resource',
            'per container', 'instances'], entitlementRows(t.entitlements || [])));
    return sec;
}

TS.page('Tenants', async main => {
    let doc = await TS.api('tenants', {limit: 1000});
    const all = [...TS.items(doc)];
    while (doc.next) {
        doc = await TS.api('tenants', {limit: 1000, offset: all.length});
        all.push(...TS.items(doc));
    }
    main.appendChild(TS.el('p', {}, all.length + ' tenants'));
    for (const t of all) main.appendChild(tenantSection(t));
}, {operatorOnly: true});

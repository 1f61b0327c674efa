/*
 * tenant.js - a tenant's own page: its allocation (cards and instances it
 * holds, as the API shows them to it: never another tenant's), why each
 * workload is isolated the way it is (mechanism, boundary, rule, reason),
 * and links to its usage and invoices. Its cards are drawn as the fleet
 * map draws them (grid.js), with only its own instances on them. An operator may open it with
 * ?tenant=NAME to see what that tenant sees.
 */
'use strict';

function isolationRows(ds) {
    return ds.map(d => [d.workload, d.mechanism, d.profile || '-', d.gpuModel,
        d.securityBoundary ? 'yes: hardware boundary' : 'no: shared with other clients',
        d.rule, d.reason]);
}

function allocationRows(gpus) {
    const rows = [];
    for (const g of gpus)
        for (const i of g.instances || [])
            rows.push([g.node + ' #' + g.index, g.model, i.workload || '-',
                i.profile || g.mode, i.start !== null && i.start !== undefined
                    ? i.start + ':' + i.size : '-', TS.num(i.memoryGiB, 1),
                g.sharedWithOthers ? 'yes' : 'no']);
    return rows;
}

TS.page('My allocation', async (main, who) => {
    const asked = new URLSearchParams(location.search).get('tenant');
    const tenant = TS.isOperator(who) ? asked : who.tenant;
    if (!tenant) { location.href = 'fleet.html'; return; }
    const plan = await TS.api('plan', {tenant});
    const sum = plan.summary || {}, gpus = TS.items(plan, 'gpus');
    main.appendChild(TS.el('p', {class: 'lead'}, 'Tenant ' + tenant + ': ' +
        (sum.instances || 0) + ' instances on ' + (sum.gpus || gpus.length) + ' GPUs' +
        (Number.isFinite(sum.naiveGpus) ? ' (' + sum.naiveGpus +
            ' GPUs if each workload had a whole one).' : '.')));
    main.append(TS.el('h2', {}, 'Allocation'), ...gridMap(gpus, 'Your cards'),
        TS.table('Cards and instances',
        ['card', 'model', 'workload', 'profile', 'placement', 'memory GiB',
            'card shared with others'], allocationRows(gpus)),
    TS.el('h2', {}, 'Why each workload is isolated this way'),
    TS.table('Decisions', ['workload', 'mechanism', 'profile', 'model', 'isolation', 'rule',
        'reason'], isolationRows(TS.items(plan, 'decisions'))),
    TS.el('h2', {}, 'More'), TS.el('ul', {},
        TS.el('li', {}, TS.link('usage.html', TS.isOperator(who) ? {tenant} : null,
            'Usage over time')),
        TS.el('li', {}, TS.link('invoices.html', TS.isOperator(who) ? {tenant} : null,
            'Invoices (HTML, CSV, printable)'))));
});

/*
 * invoices.js - invoices for a month: an operator's for every tenant (or
 * one), a tenant's only its own. Each as a table, with its CSV and HTML
 * (tessera invoice -o csv|html, from the API) to download and a printable
 * page (the print stylesheet drops the navigation and forms).
 */
'use strict';

/* Integer minor units as a decimal string, exactly (no floating point). */
function money(minor, exp) {
    if (minor === null || minor === undefined) return 'unpriced';
    const neg = minor < 0, s = String(Math.abs(minor)).padStart(exp + 1, '0');
    const whole = exp ? s.slice(0, s.length - exp) : s, frac = exp ? '.' + s.slice(-exp) : '';
    return (neg ? '-' : '') + whole + frac;
}

function micro(n) {
    const s = String(Math.abs(n)).padStart(7, '0');
    return (n < 0 ? '-' : '') + s.slice(0, -6) + '.' + s.slice(-6);
}

function lastMonth() {
    const d = new Date();
    d.setUTCDate(1);
    d.setUTCMonth(d.getUTCMonth() - 1);
    return d.toISOString().slice(0, 7);
}

async function download(params, type, name) {
    const r = await TS.get('/api/v1/invoices?' + new URLSearchParams(params));
    if (!r.ok) throw new TS.ApiError(r.status, await r.text());
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([await r.text()], {type}));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
}

function invoiceActions(inv, status) {
    const base = {period: inv.period, tenant: inv.tenant};
    const btn = (text, fn) => {
        const b = TS.el('button', {type: 'button'}, text);
        b.addEventListener('click', () => fn().catch(e => TS.showError(status, e)));
        return b;
    };
    const file = 'invoice-' + inv.tenant + '-' + inv.period;
    return TS.el('p', {class: 'actions'},
        btn('Download CSV', () => download({...base, format: 'csv'}, 'text/csv', file + '.csv')),
        ' ', btn('Download HTML', () => download({...base, format: 'html'}, 'text/html',
            file + '.html')),
        ' ', btn('Print', async () => window.print()));
}

function invoiceSection(inv) {
    const exp = inv.currencyExponent || 0, cur = inv.currency || '';
    const rows = TS.items(inv, 'lines').map(l => [l.model, l.profile, micro(l.microGpuHours),
        micro(l.usedMicroGpuHours), l.pricePerGpuHourMicro < 0 ? 'no price'
            : money(l.pricePerGpuHourMicro, 6), money(l.amountMinor, exp)]);
    const sec = TS.el('section', {class: 'invoice', 'data-tenant': inv.tenant,
        'aria-label': 'Invoice of ' + inv.tenant});
    sec.append(TS.el('h2', {}, 'Invoice ' + (inv.number || '') + ': ' +
        (inv.tenantDisplayName || inv.tenant) + ', ' + inv.period),
    TS.el('p', {}, 'From ' + (inv.providerDisplayName || 'the provider') + ', for ' +
        (inv.periodStart || '') + ' to ' + (inv.periodEnd || '') + ' (' + cur + ')'),
    TS.table('Lines', ['model', 'profile', 'GPU-hours allocated', 'GPU-hours used',
        'price per GPU-hour', 'amount'], rows),
    TS.el('p', {class: 'total'}, 'Total (allocation basis): ',
        TS.el('strong', {'data-total': ''}, money(inv.totalMinor, exp) + ' ' + cur)),
    TS.el('p', {class: 'muted'}, 'On usage basis: ' + money(inv.usageTotalMinor, exp) + ' ' +
        cur));
    const status = TS.el('div', {role: 'status'});
    sec.append(invoiceActions(inv, status), status);
    return sec;
}

function invoiceForm(who, q) {
    const f = TS.el('form', {class: 'row', 'aria-label': 'Choose invoices'});
    f.append(TS.el('label', {}, 'Month (YYYY-MM)', TS.el('input', {name: 'period',
        value: q.period, pattern: '[0-9]{4}-[0-9]{2}', required: true})));
    if (TS.isOperator(who)) {
        const sel = TS.el('select', {name: 'tenant'}, TS.el('option', {value: ''},
            'every tenant'));
        for (const t of who.tenants || [])
            sel.appendChild(TS.el('option', {value: t, selected: t === q.tenant}, t));
        f.append(TS.el('label', {}, 'Tenant', sel));
    }
    f.append(TS.el('button', {type: 'submit'}, 'Show'));
    return TS.onSearch(f);
}

TS.page('Invoices', async (main, who) => {
    const u = new URLSearchParams(location.search);
    const q = {period: u.get('period') || lastMonth(), tenant: u.get('tenant') || ''};
    main.appendChild(invoiceForm(who, q));
    if (!who.metering) {
        main.appendChild(TS.el('p', {}, 'This server has no metering store (serve --db).'));
        return;
    }
    const doc = await TS.api('invoices', {period: q.period, tenant: q.tenant || null});
    const list = TS.items(doc, 'invoices');
    if (!list.length) main.appendChild(TS.el('p', {}, 'No invoices for ' + q.period + '.'));
    for (const inv of list) main.appendChild(invoiceSection(inv));
});

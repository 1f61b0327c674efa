// console.mjs - the console in a real browser: Debian's chromium, headless,
// driven by playwright-core, against a running `tessera console` (started by
// tests/cli/console_browser.sh, which passes what it computed in the
// environment). For each operator and tenant page: it loads with no console
// error (a CSP violation is one), shows the worked example's numbers, has no
// serious or critical axe-core violation, and is screenshotted into $SHOTS.
// A tenant's session cannot see another tenant's data; hostile text renders
// as text. Prints "console.mjs: N passed, M failed"; exits 1 on a failure.
import {readFileSync, mkdirSync} from 'node:fs';
import {chromium} from 'playwright-core';

const env = k => { if (!process.env[k]) throw new Error('missing ' + k); return process.env[k]; };
const BASE = env('BASE'), SHOTS = env('SHOTS'), PERIOD = env('PERIOD');
const OP = env('OP_TOKEN'), TA = env('TA_TOKEN');
const AXE = readFileSync(new URL('./node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');
let passed = 0, failed = 0;
function check(what, cond, got) {
    if (cond) { passed++; return; }
    failed++;
    console.log('FAIL: ' + what + (got === undefined ? '' : ' (got: ' +
        String(got).slice(0, 300) + ')'));
}

/* A new tab on PATH (the token in the fragment, as an operator's link has it). */
async function open(ctx, path, token) {
    const page = await ctx.newPage();
    const p = {page, errors: []};
    page.on('console', m => { if (m.type() === 'error') p.errors.push(m.text()); });
    page.on('pageerror', e => p.errors.push(String(e)));
    return visit(p, path + (token ? '#token=' + token : ''));
}

/* The same tab on to PATH: its sessionStorage (the token) stays. */
async function visit(p, path) {
    p.errors.length = 0;
    await p.page.goto(BASE + '/ui/' + path);
    await p.page.waitForSelector('body[data-ready]', {timeout: 20000});
    return p;
}

async function axe(page, name) {
    await page.evaluate(AXE);
    const r = await page.evaluate(() => window.axe.run(document, {resultTypes: ['violations']}));
    const bad = r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical');
    check(name + ': axe-core serious/critical violations', bad.length === 0,
        bad.map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')).join('; '));
}

/* Loaded clean, accessible, not injected into, screenshotted. */
async function common(p, name, expectErrors) {
    const {page, errors} = p;
    const want = expectErrors || [];
    const unexpected = errors.filter(e => !want.some(w => e.includes(w)));
    check(name + ': console errors', unexpected.length === 0, unexpected.join(' | '));
    check(name + ': injected code ran', await page.evaluate(() => window.pwned === undefined),
        await page.evaluate(() => window.pwned));
    const scripts = await page.evaluate(() => [...document.scripts].map(s => s.src || 'inline'));
    check(name + ': scripts are the page\'s own',
        scripts.every(s => s.startsWith(new URL(BASE).origin + '/ui/')), scripts.join(' '));
    const links = await page.evaluate(() => [...document.querySelectorAll('a[href]')]
        .map(a => a.href).filter(h => !h.startsWith(location.origin)));
    check(name + ': links leave the console', links.length === 0, links.join(' '));
    await axe(page, name);
    await page.screenshot({path: SHOTS + '/' + name + '.png', fullPage: true});
}

/* Cards whose units are not all on one row (a placement drawn below its card). */
async function ragged(page) {
    return page.locator('.card .grid').evaluateAll(gs => gs.filter(g => new Set(
        [...g.children].map(c => Math.round(c.getBoundingClientRect().top))).size !== 1).length);
}

async function text(page, sel) {
    return (await page.locator(sel).allTextContents()).join('\n');
}

async function operator(ctx) {
    let p = await open(ctx, 'fleet.html', OP);
    const cards = await p.page.locator('.card').count();
    check('fleet: 4 cards', cards === 4, cards);
    const heads = await text(p.page, '.card h3');
    for (const i of [0, 1, 2, 3])
        check('fleet: card ' + i, heads.includes('gpu-node-1 #' + i), heads);
    check('fleet: every card\'s units on one row', await ragged(p.page) === 0);
    const sum = await text(p.page, '.summary');
    check('fleet: 4 GPUs used of 4', sum.includes('4 of 4'), sum);
    check('fleet: 7 GPUs without sharing', sum.includes('7GPUs without sharing'), sum);
    await p.page.locator('.slot[aria-label*="client-a/chat-13b"]').first().hover();
    let detail = await text(p.page, '.detail');
    check('fleet: hover shows the workload', detail.includes('chat-13b'), detail);
    check('fleet: hover shows the profile', detail.includes('3g.40gb'), detail);
    /* cards 0 and 1 hold alike instances: the ledger cannot tell them apart */
    check('fleet: no UUID guessed on card 0', /Instance UUIDnot recorded/.test(detail), detail);
    await p.page.locator('.slot[aria-label*="provider/embedding"]').first().hover();
    detail = await text(p.page, '.detail');
    check('fleet: hover shows an instance UUID', /MIG-[0-9a-f-]{8,}/.test(detail), detail);
    check('fleet: hover shows the holder', /provider\/embedding since .*ledger seq/.test(detail),
        detail);
    check('fleet: hover shows the card UUID', /Card UUIDGPU-[0-9a-f-]{8,}/.test(detail), detail);
    await p.page.mouse.move(0, 0);
    await p.page.locator('.slot[role=button]').first().blur();
    await p.page.keyboard.press('Tab');
    for (let k = 0; k < 40; k++) {
        const onSlot = await p.page.evaluate(() =>
            document.activeElement.classList.contains('slot'));
        if (onSlot) break;
        await p.page.keyboard.press('Tab');
    }
    const focused = await p.page.evaluate(() => document.activeElement.getAttribute('aria-label'));
    detail = await text(p.page, '.detail');
    check('fleet: keyboard focus reaches an instance', /gpu-node-1 GPU 0:/.test(focused || ''),
        focused);
    check('fleet: focus shows its placement', /Placement/.test(detail) && /\d+ \(size \d+\)/
        .test(detail), detail);
    const legend = p.page.locator('.legend button[data-tenant="client-a"]');
    await legend.click();
    const lit = await p.page.locator('.slot[role=button]:not(.dim)').evaluateAll(
        s => s.map(x => x.dataset.tenant));
    check('fleet: the legend highlights client-a\'s 2 instances', lit.join() ===
        'client-a,client-a', lit.join());
    await axe(p.page, 'fleet (client-a highlighted)');
    await legend.click();
    const dim = await p.page.locator('.slot.dim').count();
    check('fleet: pressed again, nothing dimmed', dim === 0, dim);
    await common(p, 'fleet');

    p = await open(ctx, 'tenants.html', OP);
    const tenants = await p.page.locator('section[data-tenant]').count();
    check('tenants: every tenant', tenants === Number(env('TENANTS')), tenants);
    const body = await text(p.page, 'main');
    check('tenants: rules and reasons', /R[1-6]/.test(body) && body.includes('isolated'), body);
    check('tenants: hostile display name as text', body.includes(env('HOSTILE')), body);
    await common(p, 'tenants');

    p = await open(ctx, 'usage.html?from=' + env('FROM') + '&to=' + env('TO') + '&step=1h', OP);
    const charts = await p.page.locator('svg.chart').count();
    check('usage: a chart per tenant and model', charts === Number(env('SERIES')), charts);
    const points = await p.page.locator('svg.chart path.used').first().getAttribute('d');
    check('usage: 24 hourly points', (points.match(/[ML]/g) || []).length === 24, points);
    await common(p, 'usage');
    // from the navigation, as a user first gets there: the page's own window
    // and step (1d, once answered 400)
    await Promise.all([p.page.waitForNavigation(), p.page.click('nav a[href^="usage.html"]')]);
    await p.page.waitForSelector('body[data-ready]', {timeout: 20000});
    const navBody = await text(p.page, 'main');
    check('usage from the navigation: no error', !/error/i.test(navBody), navBody);
    check('usage from the navigation: daily steps', navBody.includes('a step of 24 h'), navBody);

    p = await open(ctx, 'invoices.html?period=' + PERIOD + '&tenant=client-a', OP);
    const total = await text(p.page, '[data-total]');
    check('invoices: client-a total = tessera invoice', total === env('TOTAL'), total);
    await common(p, 'invoices');

    p = await open(ctx, 'custody.html', OP);
    const cust = await text(p.page, 'main');
    check('custody: the hostile denial as text', cust.includes(env('HOSTILE_NS')),
        cust.slice(cust.indexOf('message')));
    check('custody: the hostile pod of a violation as text', cust.includes(env('HOSTILE_POD')),
        cust.slice(0, 600));
    check('custody: denials by rule', /Denials on this page by rule/.test(cust), cust);
    await common(p, 'custody');

    p = await open(ctx, 'ledger.html?uuid=' + env('UUID') + '&at=' + env('AT'), OP);
    const led = await text(p.page, 'main');
    check('ledger: client-a held the instance', led.includes('client-a') &&
        led.includes('chat-13b'), led);
    await common(p, 'ledger');

    p = await open(ctx, 'tenant.html?tenant=client-a', OP);
    await common(p, 'tenant-as-operator');
}

const OTHERS = () => env('OTHER_TENANTS').split(' ');
async function tenant(ctx) {
    let p = await open(ctx, 'index.html', TA);
    await p.page.waitForURL(/tenant\.html/);
    await p.page.waitForSelector('body[data-ready]');
    let body = await text(p.page, 'body');
    check('tenant: signs in to its own page', body.includes('Tenant client-a'), body);
    check('tenant: its instances', body.includes('chat-13b') && body.includes('3g.40gb'), body);
    check('tenant: its isolation reason', /R[1-6]/.test(body), body);
    const own = await p.page.locator('.slot[role=button]').count();
    check('tenant: its 2 instances drawn', own === 2, own);
    const hidden = await p.page.locator('.slot.other').count();
    check('tenant: the others on its cards drawn as "other"', hidden > 0, hidden);
    check('tenant: every card\'s units on one row', await ragged(p.page) === 0);
    await p.page.locator('.slot[role=button]').first().hover();
    const detail = await text(p.page, '.detail');
    /* its instances are on cards 0 and 1, which the ledger cannot tell apart */
    check('tenant: no instance UUID guessed', /Instance UUIDnot recorded/.test(detail) &&
        !/MIG-/.test(detail), detail);
    for (const o of OTHERS())
        check('tenant: no sign of ' + o, !body.includes(o), body);
    await common(p, 'tenant');

    await visit(p, 'invoices.html?period=' + PERIOD);
    const total = await text(p.page, '[data-total]');
    check('tenant invoices: its total = tessera invoice', total === env('TOTAL'), total);
    const secs = await p.page.locator('section[data-tenant]').evaluateAll(
        s => s.map(x => x.getAttribute('data-tenant')));
    check('tenant invoices: only its own', secs.join() === 'client-a', secs.join());
    for (const [button, want] of [['Download CSV', 'CSV'], ['Download HTML', 'HTML']]) {
        const [dl] = await Promise.all([p.page.waitForEvent('download'),
            p.page.getByRole('button', {name: button}).click()]);
        const got = readFileSync(await dl.path(), 'utf8');
        check('tenant invoices: ' + button + ' = tessera invoice -o ' + want.toLowerCase(),
            got === readFileSync(env(want), 'utf8'), got.slice(0, 200));
    }
    await p.page.emulateMedia({media: 'print'});
    const shown = await p.page.evaluate(() => ['.top', 'form', '.actions', '.invoice table']
        .map(q => document.querySelector(q)).map(e => e && e.getBoundingClientRect().height > 0));
    check('tenant invoices: printed without navigation, form, buttons; with the lines',
        shown.join() === 'false,false,false,true', shown.join());
    await p.page.pdf({path: SHOTS + '/tenant-invoice.pdf'});
    await p.page.emulateMedia({media: 'screen'});
    await common(p, 'tenant-invoices');

    await visit(p, 'usage.html?from=' + env('FROM') + '&to=' + env('TO') + '&step=1h');
    body = await text(p.page, 'main');
    check('tenant usage: its chart', body.includes('client-a on'), body);
    for (const o of OTHERS())
        check('tenant usage: no sign of ' + o, !body.includes(o), body);
    await common(p, 'tenant-usage');

    /* Asking for another tenant through the UI's own parameters. */
    for (const path of ['invoices.html?period=' + PERIOD + '&tenant=client-b',
        'usage.html?from=' + env('FROM') + '&to=' + env('TO') + '&tenant=client-b',
        'tenant.html?tenant=client-b']) {
        await visit(p, path);
        body = await p.page.evaluate(() => {
            const m = document.querySelector('main').cloneNode(true);
            m.querySelectorAll('.error, form').forEach(e => e.remove());
            return m.textContent;
        });
        for (const o of OTHERS())
            check(path + ': no data of ' + o + ' (tenant)', !body.includes(o), body);
    }
    for (const path of ['fleet.html', 'tenants.html', 'custody.html', 'ledger.html']) {
        await visit(p, path);
        check(path + ' sends a tenant to its own page', /tenant\.html$/.test(p.page.url()),
            p.page.url());
    }
    /* A new tab has no token: the sign-in page, and nothing else. */
    const q = await open(ctx, 'tenant.html', null);
    check('a new tab without a token signs in first', /index\.html$/.test(q.page.url()),
        q.page.url());
}

/* client-b's session: its own page, and nothing of client-a's (whose name is hostile). */
async function otherTenant(ctx) {
    const p = await open(ctx, 'tenant.html', env('TB_TOKEN'));
    const body = await text(p.page, 'body');
    check('client-b: its own page', body.includes('Tenant client-b') &&
        body.includes('code-7b'), body);
    check('client-b: nothing of client-a', !body.includes('client-a') &&
        !body.includes('chat-13b') && !body.includes('pwned'), body);
    await visit(p, 'invoices.html?period=' + PERIOD + '&tenant=client-a');
    const inv = await p.page.evaluate(() => {
        const m = document.querySelector('main').cloneNode(true);
        m.querySelectorAll('.error, form').forEach(e => e.remove());
        return m.textContent;
    });
    check('client-b asking for client-a\'s invoice sees none of it', !inv.includes('pwned') &&
        !inv.includes(env('TOTAL')), inv);
    check('client-b asking for client-a\'s invoice is told 403',
        await p.page.locator('.error').count() === 1);
}

/* An operator with a client certificate and no token: straight from the
 * sign-in page to the fleet map, the API answering by certificate; a
 * browser without one stays at the form. */
async function certificate(ctx, plain) {
    const page = await ctx.newPage();
    await page.goto(BASE + '/ui/index.html');
    await page.waitForURL(/fleet\.html/, {timeout: 20000});
    await page.waitForSelector('body[data-ready]', {timeout: 20000});
    const body = await text(page, 'body');
    check('certificate: the fleet map without a token', body.includes('operator') &&
        /Fleet/.test(body) && !/error/i.test(await text(page, 'main')), body);
    const other = await plain.newPage();
    await other.goto(BASE + '/ui/index.html');
    await other.waitForSelector('body[data-ready]', {timeout: 20000});
    check('no certificate, no token: the sign-in form stays',
        other.url().endsWith('/ui/index.html') &&
        await other.locator('#token').count() === 1, other.url());
}

mkdirSync(SHOTS, {recursive: true});
const browser = await chromium.launch({executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox']});
try {
    const tls = {ignoreHTTPSErrors: true, viewport: {width: 1280, height: 900}};
    await operator(await browser.newContext(tls));
    await tenant(await browser.newContext(tls));
    await otherTenant(await browser.newContext(tls));
    await certificate(await browser.newContext({...tls, clientCertificates: [
        {origin: BASE, certPath: env('CERT'), keyPath: env('KEY')}]}),
        await browser.newContext(tls));
} catch (e) {
    failed++;
    console.log('FAIL: ' + (e.stack || e));
} finally {
    await browser.close();
}
console.log('console.mjs: ' + passed + ' passed, ' + failed + ' failed');
process.exit(failed ? 1 : 0);

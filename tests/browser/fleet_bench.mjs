// fleet_bench.mjs - how quickly the fleet map of a large fleet is usable in
// Debian's chromium (bench/console_bench.sh starts tessera console and passes BASE,
// OP_TOKEN and RUNS): time from navigation to the map being built
// (body[data-ready]), the plan's size, and how long one hover and one
// keyboard focus take to update the detail panel. Prints one Markdown row per
// run; measures, asserts nothing. Times are the page's own clock
// (performance.now() from navigation start); hover and focus are one event
// on an instance and the layout it causes, measured inside the page.
import {chromium} from 'playwright-core';

const BASE = process.env.BASE, TOKEN = process.env.OP_TOKEN;
const RUNS = Number(process.env.RUNS || 3);
const browser = await chromium.launch({executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox']});
console.log('| run | cards | instances | plan bytes | plan fetched (ms) | page ready (ms) | ' +
    'hover to panel (ms) | focus to panel (ms) |');
console.log('|---|---|---|---|---|---|---|---|');
/* In the page: one event on the middle instance, then a forced layout. */
const react = kind => {
    const slots = document.querySelectorAll('.slot[role=button]');
    const el = slots[Math.floor(slots.length / 2)], t = performance.now();
    if (kind === 'hover') el.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
    else el.focus();
    void document.querySelector('.detail').getBoundingClientRect().height;
    return performance.now() - t;
};
for (let run = 1; run <= RUNS; run++) {
    const ctx = await browser.newContext({ignoreHTTPSErrors: true,
        viewport: {width: 1280, height: 900}});
    const page = await ctx.newPage();
    await page.goto(BASE + '/ui/fleet.html#token=' + TOKEN);
    await page.waitForSelector('body[data-ready]', {timeout: 60000});
    const m = await page.evaluate(() => {
        const plan = performance.getEntriesByType('resource')
            .find(e => e.name.includes('/api/v1/plan'));
        return {ready: performance.now(), plan: plan.responseEnd, bytes: plan.decodedBodySize,
            cards: document.querySelectorAll('.card').length,
            insts: document.querySelectorAll('.slot[role=button]').length};
    });
    const hover = await page.evaluate(react, 'hover');
    const focus = await page.evaluate(react, 'focus');
    console.log('| ' + [run, m.cards, m.insts, m.bytes, m.plan.toFixed(0), m.ready.toFixed(0),
        hover.toFixed(1), focus.toFixed(1)].join(' | ') + ' |');
    await ctx.close();
}
await browser.close();

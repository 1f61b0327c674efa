// fleet_bench.mjs - how quickly the fleet map of a large fleet is usable in
// Debian's chromium (bench/console_bench.sh starts serve and passes BASE,
// OP_TOKEN and RUNS): time from navigation to the map being built
// (body[data-ready]), the plan's size, and how long one hover and one
// keyboard focus take to update the detail panel. Prints one Markdown row per
// run; measures, asserts nothing.
import {chromium} from 'playwright-core';

const BASE = process.env.BASE, TOKEN = process.env.OP_TOKEN;
const RUNS = Number(process.env.RUNS || 3);
const browser = await chromium.launch({executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox']});
console.log('| run | cards | instances | page ready (ms) | plan bytes | hover to panel (ms) | ' +
    'focus to panel (ms) |');
console.log('|---|---|---|---|---|---|---|');
for (let run = 1; run <= RUNS; run++) {
    const ctx = await browser.newContext({ignoreHTTPSErrors: true,
        viewport: {width: 1280, height: 900}});
    const page = await ctx.newPage();
    let bytes = 0;
    page.on('response', async r => {
        if (r.url().includes('/api/v1/plan')) bytes = (await r.body()).length;
    });
    await page.goto(BASE + '/ui/fleet.html#token=' + TOKEN);
    await page.waitForSelector('body[data-ready]', {timeout: 60000});
    const ready = await page.evaluate(() => performance.now());
    const cards = await page.locator('.card').count();
    const insts = await page.locator('.slot[role=button]').count();
    const slot = page.locator('.slot[role=button]').nth(Math.floor(insts / 2));
    const t0 = await page.evaluate(() => performance.now());
    await slot.hover();
    await page.waitForFunction(() => document.querySelector('.detail dl'));
    const hover = await page.evaluate(t => performance.now() - t, t0);
    const t1 = await page.evaluate(() => performance.now());
    await page.locator('.slot[role=button]').last().focus();
    await page.waitForFunction(n => document.activeElement.getAttribute('aria-label') === n,
        await page.locator('.slot[role=button]').last().getAttribute('aria-label'));
    const focus = await page.evaluate(t => performance.now() - t, t1);
    console.log('| ' + [run, cards, insts, ready.toFixed(0), bytes, hover.toFixed(0),
        focus.toFixed(0)].join(' | ') + ' |');
    await ctx.close();
}
await browser.close();

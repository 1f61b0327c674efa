/*
 * common.js - what every console page shares: the bearer token (taken from
 * the URL fragment #token=... or the sign-in form, kept in sessionStorage,
 * never in a cookie), API calls with Authorization: Bearer, building
 * elements from untrusted text (text nodes only, never parsed as markup), the
 * navigation for an operator or a tenant, and SVG helpers for the charts.
 */
'use strict';

const TS = (() => {
    const KEY = 'tessera.token';
    const SVGNS = 'http://www.w3.org/2000/svg';
    /* Light fills with dark text: every pair passes WCAG AA contrast. */
    const PALETTE = ['#a6cee3', '#b2df8a', '#fdbf6f', '#cab2d6', '#ffff99', '#fb9a99',
        '#8dd3c7', '#bebada', '#fccde5', '#d9d9d9', '#ccebc5', '#ffed6f'];

    /* A token in the fragment is moved to sessionStorage and the fragment
     * cleared, so it is neither sent to the server nor kept in history. */
    function takeFragment() {
        const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
        if (!m) return;
        sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
        history.replaceState(null, '', location.pathname + location.search);
    }

    function token() { return sessionStorage.getItem(KEY); }
    function setToken(t) { sessionStorage.setItem(KEY, t); }
    function signOut() { sessionStorage.removeItem(KEY); location.href = 'index.html'; }

    /* el('td', {class: 'n'}, 'text', child): attributes by setAttribute (never
     * on*, style or a URL attribute from data), children as text nodes. */
    function el(tag, attrs, ...kids) {
        const e = document.createElement(tag);
        setAttrs(e, attrs);
        for (const k of kids) add(e, k);
        return e;
    }
    function svg(tag, attrs, ...kids) {
        const e = document.createElementNS(SVGNS, tag);
        setAttrs(e, attrs);
        for (const k of kids) add(e, k);
        return e;
    }
    function setAttrs(e, attrs) {
        for (const [k, v] of Object.entries(attrs || {})) {
            if (/^on|^style$|^href$|^src$/i.test(k)) throw new Error('refused attribute ' + k);
            if (v !== null && v !== undefined && v !== false) e.setAttribute(k, String(v));
        }
    }
    function add(e, k) {
        if (k === null || k === undefined || k === false) return;
        if (Array.isArray(k)) { for (const x of k) add(e, x); return; }
        e.appendChild(k instanceof Node ? k : document.createTextNode(String(k)));
    }
    /* A link to one of the console's own pages: the target is built here. */
    function link(page, params, text) {
        const q = new URLSearchParams(params || {}).toString();
        const a = el('a', {}, text);
        a.href = page + (q ? '?' + q : '');
        return a;
    }

    class ApiError extends Error {
        constructor(status, message) { super(message); this.status = status; }
    }

    const sleep = ms => new Promise(done => setTimeout(done, ms));

    /* GET with the token, or with none when the browser's client
     * certificate is the identity (same-origin: the browser sends its
     * certificate, and there are no cookies to send); a 429 (the console
     * answers a few API requests at once) is tried again after its
     * Retry-After, a few times. */
    async function get(url) {
        const headers = {Accept: 'application/json'};
        if (token()) headers.Authorization = 'Bearer ' + token();
        for (let tries = 0; ; tries++) {
            const r = await fetch(url, {headers, credentials: 'same-origin', cache: 'no-store'});
            if (r.status !== 429 || tries === 4) return r;
            await sleep(1000 * Math.min(5, Number(r.headers.get('Retry-After')) || 1));
        }
    }

    async function api(path, params) {
        const q = new URLSearchParams();
        for (const [k, v] of Object.entries(params || {}))
            if (v !== null && v !== undefined && v !== '') q.set(k, v);
        const r = await get('/api/v1/' + path + (q.toString() ? '?' + q : ''));
        const text = await r.text();
        let body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (!r.ok) {
            const msg = body && (body.error && (body.error.message || body.error) ||
                body.message) || text || r.statusText;
            throw new ApiError(r.status, String(msg));
        }
        return body;
    }

    /* The list a response carries: {items: [...]}, {<key>: [...]} or [...]. */
    function items(doc, key) {
        if (!doc) return [];
        if (Array.isArray(doc)) return doc;
        if (Array.isArray(doc.items)) return doc.items;
        if (key && Array.isArray(doc[key])) return doc[key];
        return [];
    }

    let me = null;
    async function whoami() {
        if (!me) me = await api('whoami');
        return me;
    }
    function isOperator(who) { return who && (who.role === 'operator' || who.operator === true); }

    const OPERATOR_NAV = [['fleet.html', 'Fleet'], ['tenants.html', 'Tenants'],
        ['usage.html', 'Usage'], ['invoices.html', 'Invoices'], ['custody.html', 'Custody'],
        ['ledger.html', 'Ledger']];
    const TENANT_NAV = [['tenant.html', 'My allocation'], ['usage.html', 'Usage'],
        ['invoices.html', 'Invoices']];

    function header(who) {
        const nav = el('ul', {});
        const here = location.pathname.split('/').pop();
        for (const [page, text] of isOperator(who) ? OPERATOR_NAV : TENANT_NAV) {
            const a = link(page, null, text);
            if (page === here) a.setAttribute('aria-current', 'page');
            nav.appendChild(el('li', {}, a));
        }
        const out = el('button', {type: 'button', class: 'signout'}, 'Sign out');
        out.addEventListener('click', signOut);
        const name = isOperator(who) ? 'operator' : 'tenant ' + who.tenant;
        return el('header', {class: 'top no-print'},
            el('span', {class: 'brand'}, 'tessera'),
            el('nav', {'aria-label': 'Console'}, nav),
            el('span', {class: 'who'}, 'Signed in as ' + name + ' (' + who.via + ' ' +
                who.subject + ')'), out);
    }

    function showError(where, err) {
        const box = el('p', {class: 'error', role: 'alert'},
            err.status ? 'Error ' + err.status + ': ' + err.message : String(err.message || err));
        where.appendChild(box);
    }

    /* Start a page: token (or client certificate), identity, header;
     * run(main, who) fills <main>. No identity: to the sign-in page. */
    async function page(title, run, opts) {
        takeFragment();
        const main = document.querySelector('main');
        let who;
        try {
            who = await whoami();
        } catch (e) {
            if (e.status === 401) { signOut(); return; }
            showError(main, e);
            return;
        }
        if (opts && opts.operatorOnly && !isOperator(who)) {
            location.href = 'tenant.html';
            return;
        }
        document.body.insertBefore(header(who), main);
        main.appendChild(el('h1', {}, title));
        try {
            await run(main, who);
        } catch (e) {
            showError(main, e);
        }
        document.body.setAttribute('data-ready', '1');
    }

    /* One colour per tenant, in the order first asked. */
    const colours = new Map();
    function colour(tenant) {
        if (!tenant) return '#ffffff';
        if (!colours.has(tenant)) colours.set(tenant, PALETTE[colours.size % PALETTE.length]);
        return colours.get(tenant);
    }

    // A filter form: on submit, its non-empty fields become the page's query.
    function onSearch(form) {
        form.addEventListener('submit', ev => {
            ev.preventDefault();
            const p = new URLSearchParams();
            for (const [k, v] of new FormData(form)) if (v) p.set(k, v);
            location.search = p.toString();
        });
        return form;
    }

    function table(caption, heads, rows) {
        const t = el('table', {}, el('caption', {}, caption));
        t.appendChild(el('thead', {}, el('tr', {}, heads.map(h => el('th', {scope: 'col'}, h)))));
        const tb = el('tbody', {});
        for (const r of rows) tb.appendChild(el('tr', {}, r.map(c => el('td', {}, c))));
        if (!rows.length)
            tb.appendChild(el('tr', {}, el('td', {colspan: heads.length, class: 'muted'}, 'none')));
        t.appendChild(tb);
        return t;
    }

    function num(x, digits) {
        if (x === null || x === undefined || x === '') return '';
        const n = Number(x);
        return Number.isFinite(n) ? n.toFixed(digits === undefined ? 2 : digits) : String(x);
    }

    return {takeFragment, token, setToken, signOut, el, svg, link, get, api, items, whoami,
        isOperator, page, colour, table, num, showError, ApiError, onSearch};
})();

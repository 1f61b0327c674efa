/*
 * signin.js - the sign-in page: a token from the fragment (#token=...) or
 * the form goes to sessionStorage; /api/v1/whoami says whether it is an
 * operator's (to the fleet map) or a tenant's (to its own page). Without a
 * token, a browser whose client certificate is an identity goes on at once.
 */
'use strict';

(() => {
    const status = document.getElementById('status');

    async function enter() {
        try {
            const who = await TS.whoami();
            location.href = TS.isOperator(who) ? 'fleet.html' : 'tenant.html';
        } catch (e) {
            sessionStorage.clear();
            status.textContent = e.status === 401 || e.status === 403
                ? 'That token is not accepted.' : 'The server did not answer: ' + e.message;
        }
    }

    document.getElementById('form').addEventListener('submit', ev => {
        ev.preventDefault();
        const t = document.getElementById('token').value.trim();
        if (!t) return;
        TS.setToken(t);
        enter();
    });

    /* No token: the client certificate, if the browser has one the console
     * knows; otherwise the form waits. */
    async function byCertificate() {
        try {
            const who = await TS.whoami();
            location.href = TS.isOperator(who) ? 'fleet.html' : 'tenant.html';
        } catch (e) {
            document.body.setAttribute('data-ready', '1');
        }
    }

    TS.takeFragment();
    if (TS.token()) {
        enter();
        document.body.setAttribute('data-ready', '1');
    } else {
        byCertificate();
    }
})();

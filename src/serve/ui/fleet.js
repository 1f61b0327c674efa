/*
 * fleet.js - the fleet map (operators): every card as its MIG grid (the
 * placements in grid units) or its pool's clients, coloured by tenant.
 * Hovering or focusing an instance shows its workload, profile, placement,
 * instance UUID and current holder. Built once into a fragment with one
 * listener for the whole map, so 1,000 cards stay quick.
 */
'use strict';

function fleetSummary(sum) {
    const box = (label, value) => TS.el('div', {}, TS.el('strong', {}, value), label);
    return TS.el('section', {class: 'summary', 'aria-label': 'Summary'},
        box('GPUs used', sum.gpusUsed + ' of ' + sum.gpusTotal),
        box('GPUs without sharing', sum.naiveGpus),
        box('saved', TS.num(sum.savingsPercent, 1) + ' %'),
        box('cost per hour', sum.costPerHour === null || sum.costPerHour === undefined
            ? 'n/a' : TS.num(sum.costPerHour) + ' ' + (sum.currency || '')));
}

TS.page('Fleet', async (main, who) => {
    const plan = await TS.api('plan');
    const gpus = TS.items(plan, 'gpus');
    main.appendChild(fleetSummary(plan.summary || {}));
    const [panel, map] = gridMap(gpus, 'Cards');
    main.append(TS.el('h2', {}, gpus.length + ' cards'), fleetLegend(gpus, map), panel, map);
}, {operatorOnly: true});

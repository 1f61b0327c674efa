/*
 * limits.h - every cap tessera puts on its inputs and tables, in one place,
 * each with why it has the value it has. An input beyond a cap is an error
 * that names the cap (TS_TOO_LARGE or a located error), never cut silently;
 * where a value is cut or clamped instead, its comment says so.
 *
 * Grouped by module, bottom up as the build layers them; names keep their
 * module's prefix (SPEC_, CAT_, ...). Only macros: any module may include
 * this header (it is in util, below everything).
 *
 * What stays where it is used:
 * - a buffer that is the implementation detail of one function (a scratch
 *   line, an edit-distance row, a formatted name);
 * - a size fixed by a file or ABI format, kept beside that format with a
 *   comment: NVML's buffer sizes (agent/nvml_abi.h, INV_STR, FIGHT_UUID_MAX),
 *   the shim's region layout and limit file (shim/shim.h, shim/limits.h: the
 *   shim builds alone and keeps its own), the store's column counts (made by
 *   the column X-macros in store/backend.h);
 * - the range a spec field's value must lie in (GiB, milliseconds, weights,
 *   percentages): that is the schema, in its field table, printed by
 *   `tessera docs spec`; the counts of its lists are here;
 * - timing (retry backoffs, timeouts) and how much of a bad input a message
 *   quotes: tunables beside the code they tune;
 * - test code.
 */
#ifndef TS_LIMITS_H
#define TS_LIMITS_H

/* ---- util: errors and input files ----------------------------------------- */

/* Bytes of one error message, with its NUL: a message names the value, the
 * rule and the fix in one line; a longer one is cut by snprintf. */
#define TS_MSG_MAX 512
/* Bytes of a file name or field path in an error, with its NUL: field
 * paths run to about 60 ("Tenant/client-a.spec.workloads[0].kvCacheGiB");
 * a longer one is cut. */
#define TS_PATH_MAX 256
/* Errors one ts_diag keeps: enough to fix a file in one pass; the rest are
 * counted (ts_diag.dropped) and reported as "... and N more". */
#define TS_DIAG_MAX 50
/* Bytes of one spec, catalog or import file: a memory budget, several times
 * the largest real spec; the loader holds the text and its node tree. */
#define TS_INPUT_MAX (4u * 1024 * 1024)
/* Bytes of one spec file: 50,000 workloads on a 10,000-node fleet, one
 * flow-style line each, take about 5 MB; room for longer lines and
 * comments. The loader holds the text and its node tree (about 100 bytes a
 * node), so this bounds a spec load to a few hundred MB. */
#define SPEC_FILE_MAX (16u * 1024 * 1024)

/* ---- MIG geometry (catalog, inventory, plan) ------------------------------ */

/* MIG placements: memory slices of a card's placement grid. Real cards
 * have 8 (A100/H100/H200/B200), 12 (RTX PRO 6000) or 4 (A30); 32 leaves
 * room for imported models and fits a uint32_t bit set of starts. */
#define TS_MIG_GRID_MAX 32
/* Compute slices of a card or a profile (the 3 of "3g.40gb"): real cards
 * have 7 (4 on A30 and RTX PRO 6000); the same room as the grid. */
#define TS_MIG_SLICES_MAX 32

/* ---- Kubernetes names (spec, inventory) ----------------------------------- */

/* Characters of a DNS-1123 label (tenant, workload, namespace and pool
 * names): Kubernetes' own limit for a label and a namespace name. */
#define TS_K8S_LABEL_MAX 63
/* Characters of a DNS-1123 subdomain (node names): Kubernetes' limit for
 * object names. */
#define TS_K8S_NAME_MAX 253

/* ---- spec: the YAML loader ------------------------------------------------ */

/* Nesting of mappings and lists: a spec nests under 10 deep; the loader
 * keeps one stack entry a level. */
#define SPEC_YAML_MAX_DEPTH 64
/* Nodes of one file after alias expansion: each alias use counts its
 * anchored subtree, so an alias bomb ("billion laughs") fails here; a
 * 10,000-node fleet is about 100,000 nodes and 50,000 workloads (the
 * planner's goal, bench/trace_spec.py) about 700,000. The nodes themselves
 * are bounded by SPEC_FILE_MAX; this bounds the work of walking them. */
#define SPEC_YAML_MAX_NODES 2000000
/* Bytes of one scalar: real values are names, numbers and short texts. */
#define SPEC_YAML_MAX_SCALAR 65536
/* Documents ('---') in one file: a Fleet, a PriceBook and one per tenant, so
 * about a thousand tenants. */
#define SPEC_YAML_MAX_DOCS 1000
/* Anchors in one file: the loader keeps them in a fixed table. */
#define SPEC_YAML_MAX_ANCHORS 1024

/* ---- spec: the field tables ----------------------------------------------- */

/* Fields of one schema table (the widest, Workload, has about 20): the
 * reader marks each key seen in a fixed array. */
#define SPEC_FIELDS_MAX 64
/* Items of a list whose field sets no .max of its own. */
#define SPEC_LIST_MAX 10000
/* Nodes of one fleet: twice the 5,000 nodes Kubernetes supports in one
 * cluster. */
#define SPEC_NODES_MAX 10000
/* GPU model entries of one node: a node carries one model in practice; room
 * for mixed test rigs. */
#define SPEC_NODE_MODELS_MAX 16
/* Cards of one model on one node: HGX boards carry 8, a DGX-2 16. */
#define SPEC_NODE_GPUS_MAX 64
/* GPUs one replica spans (multi-GPU): eight 8-GPU nodes. decide refuses a
 * model that would need more cards than this. */
#define SPEC_REPLICA_GPUS_MAX 64
/* Replicas of one workload, workloads, trusted tenants and consumed shared
 * workloads of one tenant, prices of one PriceBook: far above real
 * tenancies; they bound the quadratic pool and trust checks. */
#define SPEC_REPLICAS_MAX 1000
#define SPEC_WORKLOADS_MAX 1000
#define SPEC_TRUSTS_MAX 1000
#define SPEC_USES_MAX 1000
#define SPEC_PRICES_MAX 1000
/* Namespaces one tenant owns: each gets its own quota, limits, RBAC and
 * network policy objects. */
#define SPEC_NAMESPACES_MAX 100
/* Extra capabilities and host paths a tenant's podSecurity names: a handful
 * in practice; a list past this is a mistake, not a contract. */
#define SPEC_POD_SECURITY_ITEMS_MAX 64
/* Card models one workload may list in gpuModels: the catalog's distinct
 * models a fleet can hold (DECIDE_MODELS_MAX). */
#define SPEC_WORKLOAD_MODELS_MAX 64

/* ---- inventory: the NodeInventory document (filled from NVML) ------------- */

/* `nvidia-smi -L` output (one node, or a whole importer's input): GPU
 * lines, four times INV_GPUS_MAX so outputs of several nodes can be
 * concatenated; MIG device lines, 8 per GPU (seven 1g instances and the
 * grid's spare); the largest GPU or device index (a sanity bound); a
 * product name with its NUL (NVML's name buffer is 96); a profile name with
 * its NUL ("1c.3g.40gb+me"). */
#define INV_SMI_GPUS_MAX 64
#define INV_SMI_MIGS_MAX 512
#define INV_SMI_INDEX_MAX 1024
#define INV_SMI_NAME_MAX 128
#define INV_SMI_PROFILE_MAX 48
/* GPUs of one node: HGX boards carry 8, a DGX-2 16. */
#define INV_GPUS_MAX 16
/* GPU-instance profiles one card offers: NVML defines 17 profile kinds
 * (NVML_GPU_INSTANCE_PROFILE_COUNT), each read once. */
#define INV_PROFILES_MAX 24
/* Placements of one profile: at most one per grid slice (12 on real cards). */
#define INV_PLACEMENTS_MAX 16
/* GPU instances on one card: at most one per compute slice (7). */
#define INV_GIS_MAX 16
/* Compute instances in one GPU instance: NVML defines 8 compute-instance
 * profiles (NVML_COMPUTE_INSTANCE_PROFILE_COUNT). */
#define INV_CIS_MAX 8
/* A node name with its NUL. */
#define INV_NODE_MAX (TS_K8S_NAME_MAX + 1)

/* ---- catalog: GPU models (builtin.yaml, imported entries) ----------------- */

/* MIG profiles of one model: NVML has 17 profile kinds; the richest model of
 * builtin.yaml lists 11. */
#define CAT_PROFILES_MAX 64
/* Product names of one model (as NVML and nvidia-smi report them). */
#define CAT_PRODUCT_NAMES_MAX 32
/* A profile ID: NVML's and nvidia-smi's IDs are small integers (at most
 * 67 in builtin.yaml). */
#define CAT_PROFILE_ID_MAX 255
/* Instances of one profile one card holds (maxCount): 7 on real cards. */
#define CAT_PROFILE_COUNT_MAX 32
/* Multiprocessors of a card or a profile: 132 on H100 SXM. */
#define CAT_SMS_MAX 10000
/* GiB of a card or a profile: the largest cards today have under 200. */
#define CAT_MEMORY_GIB_MAX 10000
/* catalog import of nvidia-smi output: bytes a line (the longest real one
 * is 560); tokens kept a line (a longer line is marked); input files (one
 * per command and GPU, with room); a profile name with its NUL
 * ("1g.10gb+gfx" is 11). GPUs, their indexes and product names are the
 * `nvidia-smi -L` parser's caps (INV_SMI_*). */
#define IMP_LINE_MAX 1024
#define IMP_TOKENS_MAX 48
#define IMP_GPUS_MAX INV_SMI_GPUS_MAX
#define IMP_GPU_INDEX_MAX INV_SMI_INDEX_MAX
#define IMP_FILES_MAX 64
#define IMP_NAME_MAX 32
#define IMP_PRODUCT_MAX INV_SMI_NAME_MAX

/* ---- decide ---------------------------------------------------------------- */

/* Distinct GPU models one fleet uses, the candidates decide tries in fleet
 * order (the built-in catalog has 18); later ones are not tried. */
#define DECIDE_MODELS_MAX 64
/* Kinds of row (model, MIG or not, mechanism, enforcer) whose eligible
 * cards decide remembers: each count is a pass over the fleet, once per
 * kind instead of once per workload (a fleet of five models has a few
 * dozen kinds); past it the count is made each time. Not an input cap. */
#define DECIDE_ELIG_MEMO_MAX 256

/* ---- plan ------------------------------------------------------------------ */

/* GPU instances (replicas x GPUs over all workloads) planned in one run:
 * the layout keeps every instance in memory and sorts them; split a larger
 * fleet into several specs. */
#define PLAN_MAX_INSTANCES 100000
/* Placement variables (item x card x start) of the exact (GLPK) MIG model:
 * above this the exact solver is not tried and the heuristic layout stands;
 * a memory and time budget for a solver that gets seconds per model. */
#define PLAN_EXACT_VARS_MAX 40000
/* `plan --max-drains N`: drains are of cards, and PLAN_MAX_INSTANCES bounds
 * the cards a plan can use, so a larger N could never bind; refused rather
 * than read as "no limit" (leave the flag out for that). */
#define RECONF_MAX_DRAINS_MAX PLAN_MAX_INSTANCES
/* Replanning: running MIG cards tried one at a time as the one card the
 * keep candidate may drain (each try lays out the whole fleet once); past
 * this the fresh plan is the only other candidate. */
#define RECONF_RELEASE_TRIES_MAX 256
/* Replanning's drains-for-cards search (reconf/evac.c): cards emptied one
 * at a time, each a plan kept in memory (a 10,000-card plan is about 2 MB;
 * the best for each count, and one on the search's path for each: twice
 * that at most) and a point reported; and cards tried per step, each try
 * scanning the fleet once for room. Past them the search stops with what it
 * found. */
#define RECONF_EVACUATIONS_MAX 64
#define RECONF_EVAC_TRIES_MAX 64
/* The same search's other orders and its two-card repacks (a card emptied
 * with one other MIG card laid out again beside it): partners tried for a
 * card, and the work of every try but the first order's one-card ones, in
 * cards scanned (a try scans the fleet once: about 13 tries on a
 * 10,000-card plan, 18,000 on 6 cards). */
#define RECONF_EVAC_PAIRS_MAX 16
#define RECONF_EVAC_SEARCH_MAX (1L << 17)
/* The same search run again from the keep plan with its new work taken
 * out, placed as cards are emptied (so a card the keep plan drained for it
 * may stay as it runs): at most this many new MIG instances carried (each
 * try's work counted that many times over); past it, not run. */
#define RECONF_EVAC_PENDING_MAX 64
/* Replanning's exact trade on MIG (reconf/relay.c): the MIG cards laid out
 * again as one integer program when it has at most this many placement
 * columns (16 cards of 40 instances: about 2,600); its solves (one per
 * card count) stop together after this many branch-and-bound nodes,
 * counted so a busy machine plans the same (held-out changes on 12-24
 * cards took 0-50 in all, at 5-40 ms a node), or at this wall-clock
 * ceiling in milliseconds, which only a machine several times slower than
 * the benchmark's reaches. */
#define RECONF_RELAY_COLS_MAX 4000
#define RECONF_RELAY_NODES 100L
#define RECONF_RELAY_MS 5000
/* `plan --max-cards N`: a card budget, at most the cards a plan can use. */
#define RECONF_MAX_CARDS_MAX PLAN_MAX_INSTANCES
/* A plan's JSON as `plan --current` and `agent apply` read it: cards (above
 * the 10,000-GPU fleets the planner is built for; the file itself is capped
 * by CLI_PLAN_FILE_MAX), instances on one card (MPS allows 48 or 64 clients,
 * plus best-effort guests), and a card's index on its node. */
#define RECONF_PLAN_GPUS_MAX 65536
#define RECONF_CARD_INSTANCES_MAX 256
#define RECONF_GPU_INDEX_MAX 1023
/* Tenants for which the pool phase keeps every pair's trust in a tenants x
 * tenants byte table (4 MiB at this size; a spec holds at most
 * SPEC_YAML_MAX_DOCS tenants); above it trust is looked up each time. Not
 * an input cap: nothing is refused. */
#define PLAN_TRUST_MEMO_TENANTS_MAX 2048
/* Card configurations (counts per item type one card holds) enumerated for
 * one bin-packing class (plan/config.c), and search steps spent finding
 * them: a memory and time budget (a class of a few dozen item types stays
 * far below); beyond either the class keeps its simple bound and the
 * heuristic layout. */
#define PLAN_CFG_MAX 20000
#define PLAN_CFG_NODES_MAX 400000
/* Resources a configuration's sums count (plan_cfg_sums): pools count
 * memory, SM shares and clients. */
#define PLAN_CFG_RES_MAX 3
/* A pool class of more types lists its configurations by asking its fits
 * test at each step, without sums: their table of types that may not
 * share a card grows as the types squared, and the walk of so many types
 * ends at its step cap whichever way it goes. */
#define PLAN_CFG_SUMS_TYPES_MAX 512
/* The cost objective (plan/cost.c): MIG profile types per card model in its
 * program (a catalog model has a few dozen at most; past it no cost bound
 * is given and decide's models stand), and its columns (a class of alike
 * workloads on one card model, and the cards' configurations) past which
 * GLPK's branch and bound is not tried and decide's models stand (the
 * bound is still given). Not input caps: nothing is refused. */
#define PLAN_COST_TYPES_MAX 64
#define PLAN_COST_ALTS_MAX 4000
/* GLPK stops the cost program's branch and bound once its layout is within
 * this fraction of the best bound of the open nodes (0.1%: well inside
 * the gap to the LP bound that the planner reports). */
#define PLAN_COST_MIP_GAP 0.001
/* The cost program's search (plan/costsolve.c) stops after this much work,
 * counted, not timed, so a busy machine plans what a quiet one does (with
 * a time limit of 0.5 s, the 1,000-GPU trace fleet at load 0.8, seed 5,
 * planned 655 cards quiet and 664 beside other builds). A node's work
 * grows as the program's (rows + columns) to the power 1.5 (measured: 0.08
 * ms at 94, 0.26 ms at 404, 6.3 ms at 3,445): about 0.8 s on these 2
 * cores, and at most PLAN_COST_SEARCH_NODES nodes (a small program's tree
 * grows dearer per node as it deepens). Small fleets' programs close in
 * milliseconds. */
#define PLAN_COST_SEARCH_WORK 24000000.0
#define PLAN_COST_SEARCH_NODES 6000L
/* A search of fewer nodes is not made: at 10,000 GPUs (117-140 nodes of
 * 6 ms) GLPK found no integer solution in them, and the kept search runs
 * instead; 3,000 GPUs get 600-750 and find one. */
#define PLAN_COST_SEARCH_MIN_NODES 300.0
/* The kept search (plan/costsolve.c): the LP's whole choices kept, the
 * rest searched depth first in this many nodes a round (counted; about
 * 0.2 s at 10,000 GPUs; 500 planned the same at load 0.8, seed 3). */
#define PLAN_COST_KEPT_NODES 200L
/* Its answer's neighbourhood where it breaks its pool groups' cuts
 * (hood_search): nodes a round (counted), rounds at most (10,000 GPUs at
 * load 0.7: seed 3 keeps every cut after 4 rounds, seed 21 after 7-9). */
#define PLAN_COST_HOOD_NODES 500L
#define PLAN_COST_HOOD_ROUNDS 10
/* A model whose cards the LP fills to within this many is full: where the
 * kept search finds nothing, it searches again with a full model's cards
 * held below the fleet's by what rounding its fractional columns up adds
 * (the 10,000-GPU trace fleet at load 0.72, seed 6, found none in 200
 * nodes with every model but two full). */
#define PLAN_COST_FULL_SLACK 0.5
/* Seconds of wall clock the search and the proof may take at most, and at
 * most the plan's own --time-limit (10 s by default): a ceiling only a
 * machine far slower or busier than the work budget expects reaches (the
 * 1,000-GPU search of 1.3 s CPU took about 8 s of wall clock at load 12
 * on 2 cores, past a 5 s ceiling tried first). */
#define PLAN_COST_TIME_S 60.0
/* The cost bound: on a program of at most this many columns GLPK also
 * tries to prove its integer optimum (a stronger bound than the LP's) in
 * at most PLAN_COST_PROOF_NODES nodes; small priced fleets prove in
 * milliseconds. */
#define PLAN_COST_PROOF_COLS_MAX 100
/* A small program's pool group lists its configurations as columns
 * (plan/costcfg.c) in at most this many search steps. */
#define PLAN_COST_CUT_STEPS_MAX 20000
/* The cost program's cut for a sharing-pool group (plan/costcut.c) lists
 * the group's configurations in at most this many search steps, else the
 * group keeps its memory row alone. 20,000 left a trace fleet's groups of
 * ~98 guests in 9-11 sizes on a 141 GiB card (2,000-8,500 configurations)
 * without a cut: the search filled 16 cards at 99% where 17 are needed
 * (1,000 GPUs at load 0.8: 1.8% -> 0.9% over the bound, 3.1 -> 2.6 s). */
#define PLAN_COST_GROUP_CUT_STEPS_MAX 200000
/* Branch-and-bound nodes GLPK may take to prove a small program's integer
 * optimum (counted, not timed), with Gomory and MIR cuts (about 3 ms a
 * node on the 100-GPU trace fleet at load 0.8, seed 1, which leaves
 * 0.3% open after them); else the least bound of its open nodes. */
#define PLAN_COST_PROOF_NODES 1500L
/* On a small program (PLAN_COST_PROOF_COLS_MAX workloads and columns) a
 * sharing-pool group is its configurations' columns (plan/costcfg.c) when
 * they are at most this many (listed in the cut's steps above), else one
 * column of fluid cards and its cut. The small priced pools of
 * `bench/cost_bench.py --pools` have 5-130; a group of 400 keeps GLPK's
 * proof of a small program within milliseconds. */
#define PLAN_COST_GROUP_CFGS_MAX 400
/* The cost program's search adds the cuts of the pool groups its integer
 * solution uses and solves again at most this many times. */
#define PLAN_COST_CUT_ROUNDS 3
/* Spare cards per model for a layout whose pools ran out of cards
 * (plan/spare.c): this share of the model's cards, at least
 * PLAN_POOL_SPARE_MIN. */
#define PLAN_POOL_SPARE_SHARE 0.05
#define PLAN_POOL_SPARE_MIN 8
/* A pool group's separation (plan/costcut.c's group_cut): the clients a
 * solution puts in it, scaled to whole numbers for the configuration LP
 * (the most of a type PLAN_COST_SEPARATION_SCALE: only their ratios matter
 * to its dual prices); a cut broken by less than PLAN_COST_SEPARATION_MIN
 * cards is not added. */
#define PLAN_COST_SEPARATION_SCALE 100000.0
/* Rounds of separation at the LP's solutions (the bound, and the search's
 * LP where the search runs), each solving the LP again: at most
 * PLAN_COST_SEPARATION_ROUNDS, none once the last
 * PLAN_COST_SEPARATION_WINDOW raised it by less than
 * PLAN_COST_SEPARATION_GAIN of its value, and none once the group LPs
 * solved hold PLAN_COST_SEPARATION_WORK configurations in all (counted:
 * the 10,000-GPU trace fleet at load 0.7 solves about 150,000 a round,
 * 0.15 s; its LP 8201.4 -> 8207.6 in 4 rounds, 8214.6 in 40; at 1,000 GPUs
 * 15,000 a round). */
#define PLAN_COST_SEPARATION_ROUNDS 40
#define PLAN_COST_SEPARATION_WINDOW 3
#define PLAN_COST_SEPARATION_GAIN 1e-4
#define PLAN_COST_SEPARATION_WORK 600000L
#define PLAN_COST_SEPARATION_MIN 1e-3
/* A cut's prices (cards per client) rounded down to this step. */
#define PLAN_COST_CUT_PRICE_STEP 1e-4
/* Where the search's models do not lay out or cost more than the program
 * said, it is told so and solved again at most this many times
 * (plan_choose_models; counted, each search its own work budget,
 * PLAN_COST_TIME_S the wall-clock ceiling of all): on a small program whose
 * search closed, those models are ruled out; else the pool groups its
 * solution uses get their cuts, and a model whose cards ran out gets
 * PLAN_COST_FEWER_SHARE fewer. */
#define PLAN_COST_RESOLVE_ROUNDS 8
#define PLAN_COST_FEWER_SHARE 0.003
/* A large program is told so at most this many times (each round a search
 * of ~0.8 s): the trace fleets at load 0.8 lay out after one; 1,000 GPUs
 * at load 0.7, seed 3, failed three times and then cost more than decide's
 * models (4.6 s against 1.5). */
#define PLAN_COST_FEWER_ROUNDS 2
/* Fleets of more cards than this compare their models' quick layouts
 * first (plan/choose.c's TRIAL_RANK): a full layout of the 10,000-GPU
 * trace fleet takes 1.2 s, of the 1,000-GPU one 10-50 ms. */
#define PLAN_COST_FULL_TRIAL_GPUS 4000
/* The search's cost program splits a trust set that is not a clique into
 * its maximal cliques, at most this many in all (else it stays one pool). */
#define PLAN_COST_CLIQUES_MAX 16
/* Larger programs: branch and bound runs this many nodes divided by the
 * program's columns (counted, not timed, so a loaded machine gives the same
 * bound; about 0.1 s) and its least open bound is kept. Twice as many
 * raised the 1,000-GPU trace fleet's bound from 588.13 to 589.09 (its
 * program's optimum is 592.2: glpsol, 8,559 nodes) and nothing at 10,000
 * GPUs, for 0.04 and 0.09 s CPU more (bench/RESULTS.md, 2026-12-06). */
#define PLAN_COST_BOUND_WORK 40000
/* GLPK's pass over one pool class (plan/improve.c): configurations (its
 * columns) and branch-and-bound nodes. Each node re-solves the LP, so the
 * work of a class is about nodes x configurations; at 3,756 configurations
 * (a 3,000-GPU trace fleet) one node took ~4 ms and GLPK found no proof in
 * 10 s, while classes of a few hundred configurations finish in
 * milliseconds. Past either cap the heuristic's layout (or the best GLPK
 * found) stands, so the pass is bounded per class and plan time grows with
 * the fleet, not with GLPK's search. Node counts, unlike time, give the same
 * plan on a loaded machine. */
#define PLAN_POOL_ILP_CONFIGS_MAX 2000
#define PLAN_POOL_ILP_NODES_MAX 200

/* ---- render ---------------------------------------------------------------- */

/* Bytes of one rendered file: a memory budget far above the largest ones
 * (the cluster's DeviceClasses, a big tenant's claims). */
#define RENDER_FILE_MAX (16u << 20)
/* Bytes of the manifest of a previous render read back (.tessera-render),
 * one line a file: thousands of files; what lies beyond is not read. */
#define RENDER_MANIFEST_MAX (1u << 20)
/* Bytes of one device-plugin config entry: it goes into a ConfigMap, which
 * Kubernetes caps at 1 MiB. */
#define RENDER_ENTRY_MAX (1u << 20)
/* Bytes of one config text for the nodes (the mig-parted configs, one
 * node's MIG script or device-plugin config): a memory budget above the
 * 1 MiB a ConfigMap may hold. */
#define RENDER_CONFIG_MAX (4u << 20)
/* Bytes of cluster/agent-nodes.yaml's data (every node's NodeConfig, keys
 * included): one ConfigMap, which Kubernetes caps at 1 MiB. */
#define RENDER_AGENT_NODES_MAX (1u << 20)

/* ---- admit: the admission request ------------------------------------------ */

/* Bytes of one AdmissionReview: an UPDATE carries object and oldObject,
 * each up to the API server's own request limit (3 MiB), plus 1 MiB for the
 * envelope and JSON escaping. Memory stays bounded by the entry count and
 * the concurrent decodes (serve), not by this. */
#define ADMIT_BODY_MAX (7u * 1024 * 1024)
/* Entries of one AdmissionReview (objects, arrays, and each member or item
 * after a container's first), counted before parsing: the largest real
 * pods and workloads (dozens of containers, hundreds of env vars, their
 * managedFields) have a few thousand, an UPDATE two objects of them; this is
 * 16 times that. Each entry costs jansson about 100 bytes or more, so this
 * bounds one decode's memory too (with SERVE_DECODE_MEM). */
#define AD_ENTRIES_MAX 65536
/* JSON nesting ({ and [), checked before parsing: a Pod nests about 10 deep;
 * jansson recurses once a level. */
#define ADMIT_DEPTH_MAX 64
/* Bytes of the JSON path of the value being read, with its NUL (keys in it
 * are clipped to 64 bytes). */
#define AD_PATH_MAX 512
/* Bytes of the verdict message, with its NUL: denials joined with "; ",
 * with "and N more" when they do not fit; read by a person in kubectl. */
#define AD_MSG_MAX 1024
/* Characters of a resource quantity ("80Gi", "1500m"): real quantities are
 * short. */
#define AD_QTY_MAX 64
/* Entries of a list in a ResourceClaim: the API allows 32 requests and 32
 * configs per claim, 8 alternatives per request; more is malformed (and
 * would make the request x config loop quadratic in a 3 MiB body). */
#define AD_CLAIM_LIST_MAX 128
/* A device count above any entitlement; larger ones are clamped to it (no
 * overflow). */
#define AD_COUNT_MAX 1000000000L
/* Bytes of a hostPath checked against the protected ones: Linux's PATH_MAX. */
#define AD_HOST_PATH_MAX 4096

/* ---- store ----------------------------------------------------------------- */

/* Bytes of one stored exposition (a raw scrape body): dcgm-exporter's body
 * is tens of KiB a node. */
#define STORE_EXPOSITION_MAX (16 * 1024 * 1024)

/* ---- ledger ---------------------------------------------------------------- */

/* Bytes of one entry's canonical text (what is hashed): a memory budget far
 * above an entry (UUIDs, names, a time; under 1 KiB). */
#define LEDGER_CANON_MAX (1u << 20)

/* ---- meter ----------------------------------------------------------------- */

/* Bytes of one exposition line: dcgm-exporter's lines are under 1 KiB; a
 * longer line is skipped to its end and reported. */
#define METER_LINE_MAX (64 * 1024)
/* Labels of one sample: dcgm-exporter writes about 12. */
#define METER_LABELS_MAX 32
/* Bytes kept of a label value (node, UUID, namespace, pod), with its NUL:
 * namespaces have at most 63 and UUIDs 40; a longer value is cut. */
#define METER_NAME_MAX 128
/* Tenants one device time is charged to: the clients of one shared card
 * (MPS allows 48 on Volta, 64 after); a charge past them is dropped. */
#define METER_CHARGES_MAX 64
/* Bytes of the suffix "#namespace/pod" that splits a device's key per pod,
 * with its NUL: sized for Kubernetes' longest names (a namespace of 63, a pod
 * of 253), so two pods are never cut into one key; a longer name is not one
 * Kubernetes makes, and its line is rejected. */
#define METER_SUFFIX_MAX (TS_K8S_LABEL_MAX + TS_K8S_NAME_MAX + 3)
/* Bytes of a usage key (tenant, model, profile, device), with its NUL: above
 * the longest device key ingest makes (a device of 2 x METER_NAME_MAX and
 * its suffix: 574). */
#define METER_KEY_MAX 640
/* Device-times (one pod on one device at one scrape time, about 1 KiB
 * each) gathered before the scrape times older than the newest are stored:
 * 16 MiB (an import stays under 64 MiB), and the window within which a
 * file may be out of order (a line of a time already stored is rejected,
 * never merged half). */
#define METER_GATHER_MAX 16384
/* Device-times of ONE scrape time, never stored before it ends: 1 GiB, a
 * page of 100,000 GPUs as 7 MIG instances each with room. */
#define METER_SCRAPE_DEVICES_MAX (1024 * 1024)
/* Warnings of one kind per import (a plan contradicted by the scrape): the
 * first devices name the problem; the rest are billed alike. */
#define METER_WARNINGS_MAX 16
/* Distinct custody violations (device, observed tenant) kept per import
 * for the report and the ledger; more are counted. */
#define METER_VIOLATIONS_MAX 256
/* Scrapes waiting for the store: an hour of 15 s rounds (240) of one
 * target; beyond that the oldest is dropped and counted as lost. */
#define METER_SCRAPE_PENDING_MAX 256
/* Bytes of one scrape body (the default of --max-body): a memory budget far
 * above dcgm-exporter's body for the largest node. */
#define METER_SCRAPE_BODY_MAX ((size_t)256 << 20)
/* meter scrape --discover: the EndpointSliceList body taken from the API, and
 * the exporters (ready endpoints) of one Service at most */
#define METER_DISCOVER_BODY_MAX ((size_t)16 << 20)
#define METER_DISCOVER_TARGETS_MAX 4096
/* Bytes of one Prometheus query_range answer (`meter prometheus`): the
 * answer, jansson's tree of it and the lines made from it take about 20x
 * its size at the peak (measured: 21 MB, 4,000 series x 240 points, 440 MB
 * RSS), so 32 MiB stays under about 700 MB; a larger answer is refused. */
#define METER_PROM_BODY_MAX ((size_t)32 << 20)
/* Scrape intervals (--interval) in one window of raw samples: 60 is 15
 * minutes at 15 s, so one answer of 10 DCGM series per GPU stays under the
 * cap up to ~1,000 GPUs (about 50 bytes a sample) when --interval is
 * Prometheus' scrape interval of the exporter. */
#define METER_PROM_STEPS_MAX 60
/* Selectors of `meter prometheus` (--query, repeatable): each is one
 * request a window; the default is two (DCGM and Istio's counter). */
#define METER_PROM_QUERIES_MAX 8

/* ---- serve: the webhook ---------------------------------------------------- */

/* Bytes jansson may use to decode one review and build its answer: what
 * AD_ENTRIES_MAX entries and a 7 MiB body of long strings need, with room.
 * Beyond it the review gets a 400 naming this limit. */
#define SERVE_DECODE_MEM ((size_t)24 << 20)
/* Reviews decoded at once (at most one per server thread): with
 * SERVE_DECODE_MEM each, what decoding can hold stays under the
 * Deployment's 128Mi limit together with the bodies being received. */
#define SERVE_DECODES_MAX 2
/* Bytes of request bodies held in memory at once, all connections
 * together: four bodies at ADMIT_BODY_MAX, or ten legal 3 MiB UPDATEs. With
 * SERVE_DECODES_MAX regions of SERVE_DECODE_MEM (touched only as far as a
 * decode goes) the webhook stays under its Deployment's 128Mi; a review
 * whose body does not fit is answered 429 before it is read. */
#define SERVE_BODIES_MEM ((size_t)32 << 20)
/* Bytes of SERVE_BODIES_MEM one client address outside --reserve-for may
 * hold at once: a quarter of the budget, never more than one review's cap
 * (so 7 MiB: one maximal review). Without it one hostile pod declaring
 * five 6.4 MiB bodies held the whole budget and every other review got 429. */
#define SERVE_BODIES_PER_CLIENT \
    (SERVE_BODIES_MEM / 4 < ADMIT_BODY_MAX ? SERVE_BODIES_MEM / 4 : (size_t)ADMIT_BODY_MAX)
/* Bytes of SERVE_BODIES_MEM only --reserve-for addresses (the API server)
 * may take: one maximal review always fits for them, whatever the other
 * addresses hold. */
#define SERVE_BODIES_RESERVED ((size_t)ADMIT_BODY_MAX)
/* The slowest a body from outside --reserve-for may arrive, averaged from
 * the end of its headers and judged once SERVE_BODY_RATE_AFTER_S have
 * passed; a slower one is cut. The API server sends a review at network
 * speed (megabytes a second); a client trickling a byte a second would
 * otherwise hold its share of the budget until the request deadline. */
#define SERVE_BODY_RATE_MIN (64.0 * 1024)
#define SERVE_BODY_RATE_AFTER_S 1.0
/* Networks of --reserve-for: the API server's addresses (a few). */
#define SERVE_RESERVE_NETS_MAX 16
/* Bytes of one AdmissionReview response: the request's own cap (3 MiB)
 * with room for the verdict. */
#define SERVE_REVIEW_MAX (8u << 20)
/* Bytes of the /metrics text: the webhook's own series plus the relabelled
 * expositions (SERVE_RELABEL_MAX) and GPU-hours (SERVE_HOURS_MAX). */
#define SERVE_METRICS_MAX (128u << 20)
/* Bytes of the cached GPU-hours text served on /metrics: a memory budget. */
#define SERVE_HOURS_MAX ((size_t)16 << 20)
/* Bytes of the cached relabelled expositions: four stored expositions at
 * their cap (STORE_EXPOSITION_MAX). */
#define SERVE_RELABEL_MAX ((size_t)64 << 20)
/* Bytes libmicrohttpd may use per connection (its memory pool: the request
 * line and headers, the read buffer bodies pass through, the response
 * headers): the API server's requests carry a few hundred bytes of headers.
 * It is what each connection can make the server hold beyond TLS's own
 * buffers, so with --max-connections it bounds the connections' memory:
 * 2,000 slow-header clients held 106 MB at 64 KiB; 16 KiB holds them to a
 * quarter of that. Larger headers are answered 431. */
#define SERVE_HEADER_MAX (16 * 1024)
/* A TLS handshake's deadline: this many request deadlines (--request-timeout),
 * at least SERVE_HANDSHAKE_MIN_S seconds. The request deadline starts when
 * the handshake ends, so handshakes slowed by load do not eat it; a client
 * that never finishes one is still cut. */
#define SERVE_HANDSHAKE_FACTOR 3
#define SERVE_HANDSHAKE_MIN_S 10.0
/* Bytes of a TLS certificate chain or key file: real ones are a few KiB. */
#define SERVE_TLS_FILE_MAX (1u << 20)
/* Days of validity `tessera cert --days/--ca-days` accept: ten years, longer
 * than any CA/B-style advice for a key of these sizes. */
#define SERVE_CERT_DAYS_MAX 3650
/* Bytes of the library `tessera shim install` copies: the shim is well under
 * 1 MiB (a debug build with sanitizers a few MiB); more is not a shim. */
#define CLI_SHIM_MAX ((size_t)64 << 20)
/* Distinct admission rules counted in /metrics: the policy has under 40;
 * a rule past them is not counted. */
#define SERVE_RULES_MAX 64
/* (tenant, rule) pairs counted per tenant on /metrics (a tenant's allowed
 * reviews are one pair): the tenants with reviews (a spec's tens to
 * hundreds) times the few rules that deny each; a pair past them is not
 * counted per tenant (the per-rule totals still are). */
#define SERVE_TENANT_RULES_MAX 4096
/* Admission denials kept for GET /api/v1/denials (about 2 KiB each): the
 * recent ones a person looks at; older ones are counted as dropped. */
#define SERVE_DENIALS_MAX 1024
/* The console reads the webhook's denials from at most this many replicas
 * (the addresses --denials-from's name resolves to), each answer at most
 * SERVE_DENIALS_BODY_MAX: SERVE_DENIALS_MAX denials of ~1.6 KB as JSON,
 * twice over for escaped text. */
#define SERVE_DENIALS_SOURCES_MAX 16
#define SERVE_DENIALS_BODY_MAX (4u << 20)
/* /api/v1/ requests answered at once: the API shares the webhook's memory
 * and cores, so a console left open (or a script) never starves admission;
 * one more is 429 with Retry-After. */
#define SERVE_API_MAX 4
/* NodeInventory files of serve --inventory (one per node): 2,048 GPUs at
 * eight a node; each is a struct inv_node of fixed arrays (425 KiB), so
 * all of them stay near 100 MiB. */
#define SERVE_INVENTORY_FILES_MAX 256

/* ---- api: the JSON API under /api/v1/ ------------------------------------ */

/* Bytes of one API answer: the plan of a 1,000-GPU fleet is about 1.5 MiB
 * of JSON and a page is at most API_LIMIT_MAX items (about 0.5 MiB of
 * ledger entries); a larger answer is 413 naming the parameter to narrow.
 * With SERVE_API_MAX answers at once (and jansson's tree of each, a few
 * times its size) the webhook stays inside its Deployment's 128Mi. */
#define API_ANSWER_MAX ((size_t)8 << 20)
/* Items of one page (limit=): a console table; 100 by default. */
#define API_LIMIT_MAX 1000
#define API_LIMIT_DEFAULT 100
/* Query parameters of one request: the longest route takes seven. */
#define API_PARAMS_MAX 16
/* Bytes of one parameter value, decoded: a UUID is 40, a time 35. */
#define API_VALUE_MAX 256
/* Points of one /usage series: a month at hourly steps is 744, so 500
 * hours (three weeks) or a year in days; each point is a scan of the window
 * in the store, so this bounds a request's work as well as its size. */
#define API_USAGE_POINTS_MAX 500
/* Entries of the identities file (--tokens): people and tenants of a
 * cluster, with room. */
#define API_IDENTITIES_MAX 4096
/* Bytes of the identities file: 4,096 lines of about 100 bytes. */
#define API_IDENTITIES_FILE_MAX (1u << 20)
/* Bytes of a name in an identity (tenant, certificate CN or DNS name):
 * a Kubernetes name (253) and a DNS name (253) fit. */
#define API_NAME_MAX 256
/* Bytes of the Authorization header value looked at: "Bearer tsk_" + 64
 * hex digits is 75; anything longer is no token of ours. */
#define API_AUTH_MAX 128

/* ---- agent ------------------------------------------------------------------ */

/* Processes listed per card when apply refuses to touch a busy card: enough
 * to name them; NVML's answer may be longer (listed up to this). */
#define AGENT_PROCS_MAX 64

/* The agent's journal of one card's change (agent/journal.c): the card's
 * 16 GPU instances and up to 32 steps, ~150 bytes each as JSON; 64 KiB is
 * ten times that. A larger file is not one the agent wrote. */
#define AGENT_JOURNAL_MAX (64 * 1024)

/* `agent watch --node-config`: the node's plan (or the whole fleet's
 * `plan -o json`, which the agent filters to its node): the plan file's
 * cap, CLI_PLAN_FILE_MAX's value. */
#define AGENT_NODE_CONFIG_MAX (TS_INPUT_MAX * 4)

/* `agent watch`: the poll interval's range (1 ms lets the tests run fast;
 * an hour is the longest a node may go without noticing its plan), and the
 * longest wait between retries after failures (exponential backoff from
 * the interval, doubling, up to this). */
#define AGENT_INTERVAL_MS_MAX 3600000
#define AGENT_BACKOFF_MS_MAX 300000

/* /proc/PID/status read for the pid map: the kernel's is ~1.5 KiB. */
#define AGENT_PROC_STATUS_MAX 16384

/* `agent watch`'s enforcement (agent/enforce.c): GPU processes judged per
 * round over all cards (NVML lists each card's up to this; a node with
 * more is judged on the first ones and says so); /proc/PID/cgroup as read
 * (the kernel's is one line per hierarchy, ~13 on cgroup v1, each path
 * ~250 bytes: 16 KiB is four times the largest seen); the configMap
 * volumes of one pod looked at for a limit file (a pod with more is not
 * one the webhook admitted with the shim's recipe: what is past this is
 * not read, and said); the label sets of the violations metric (tenant,
 * workload, kind, action; beyond this they count under tenant "other"). */
#define AGENT_ENFORCE_PROCS_MAX 1024
#define AGENT_CGROUP_MAX 16384
#define AGENT_POD_VOLUMES_MAX 64
#define AGENT_VIOLATION_SERIES_MAX 256
/* The SM share (agent/sm.c): NVML's utilisation samples are read every
 * AGENT_SM_POLL_MS (faster than the driver's period, 1/6 s to 1 s, so a
 * query sees at most one new sample per process); the window keeps one
 * slice per enforcement round (the window is at most this many rounds);
 * containers followed per card; processes with samples per card and round
 * (past it, their time counts as the card's, to nobody); samples read per
 * query. A container is judged only when the card was at least
 * AGENT_SM_BUSY_PCT busy over the window and the other processes ran at
 * least AGENT_SM_NEIGHBOUR_PCT of it, and is over past smPercent +
 * AGENT_SM_MARGIN_PCT. */
#define AGENT_SM_POLL_MS 100
#define AGENT_SM_SLICES 128
#define AGENT_SM_CTRS 32
#define AGENT_SM_PIDS 256
#define AGENT_SM_SAMPLES 1024
#define AGENT_SM_BUSY_PCT 90
#define AGENT_SM_NEIGHBOUR_PCT 5
#define AGENT_SM_MARGIN_PCT 10
/* The enforcement's Kubernetes client (agent/kube.c): an answer of the API
 * server read at most (the node's pods as metadata only: a few KiB a pod,
 * 250 pods a node at most by default, so 8 MiB is far past any node); the
 * service account token (a bound token is about 1 KiB); the URL; a
 * request's connect and whole time (an eviction is two requests, and the
 * enforcement round waits for them). */
#define AGENT_KUBE_BODY_MAX (8u << 20)
#define AGENT_KUBE_TOKEN_MAX 65536
#define AGENT_KUBE_URL_MAX 1024
#define AGENT_KUBE_CONNECT_MS 2000
#define AGENT_KUBE_TIMEOUT_MS 5000

/* ---- fight: the noisy-neighbour test ---------------------------------------- */

/* Bytes of one line a tenant reports, without its '\n': a line is a few
 * numbers. */
#define FIGHT_LINE_MAX 256
/* Samples one tenant may report over a run: a memory budget, 64 MiB of
 * latencies and GPU times (8 bytes each). */
#define FIGHT_SAMPLES_MAX (4u << 20)
/* Repeats of each phase (--repeat): the p99 of each is kept and reported;
 * 32 paired repeats put a 95% interval of the median change between the
 * 10th and 23rd of them, enough to decide all but a change on the line. */
#define FIGHT_REPEAT_MAX 32
/* Operations the neighbour keeps in flight (--noisy-depth): one event
 * each; real serving stacks queue a few to a few dozen. */
#define FIGHT_DEPTH_MAX 64
/* SLA requests per second (--rate): past 100k/s the 10 us between sends is
 * below what a host sleep can keep to, so the schedule would be fiction. */
#define FIGHT_RATE_MAX 100000
/* Requests (--requests, --warmup) of one run: a million of the SLA tenant's
 * 100 us kernel take about 100 s. */
#define FIGHT_REQUESTS_MAX 1000000
/* MIG devices read from `nvidia-smi -L`: 7 a card, on up to 8 cards; the
 * fight uses the first two. */
#define FIGHT_MIG_MAX 64
/* Bytes of a kernel module image (--kernels): real cubins are a few MiB. */
#define FIGHT_KERNELS_FILE_MAX (64u << 20)

/* ---- cli: the command's own flags and outputs ---------------------------- */

/* Files one -f or --catalog flag list names: a spec split one file per
 * tenant, with room. */
#define CLI_MAX_FILES 64
/* --target URLs of one scrape loop: one dcgm-exporter a node. */
#define CLI_TARGETS_MAX 256
/* --runtime-class values of the webhook: clusters define a handful of
 * RuntimeClasses (runc, kata, gvisor, nvidia). */
#define CLI_RUNTIME_CLASSES_MAX 16
/* A count flag (--count, --retries): a sanity bound, far above any use. */
#define CLI_COUNT_MAX 1000000000L
/* --retries of one scrape: with the doubling wait (at most 30 s between
 * tries) 100 retries wait about 50 minutes. */
#define CLI_RETRIES_MAX 100
/* Bytes of an --hmac-key-file: a key is 32 to 64 bytes. */
#define CLI_KEY_FILE_MAX 4096
/* Bytes of the nvidia-smi output `ledger record --from-nvidia-smi` reads:
 * several nodes' output in one file. */
#define CLI_SMI_FILE_MAX (16u << 20)
/* Bytes of the plan JSON `agent apply` reads: a plan is several times the
 * spec it comes from. */
#define CLI_PLAN_FILE_MAX (TS_INPUT_MAX * 4)
/* Bytes of what a verb prints, memory budgets by kind of output: a catalog
 * entry or the field reference; one node's or one tenant's document (an
 * inventory, an apply log, an invoice); a whole report (plan, usage, the
 * fight); the custody ledger as CSV (every entry ever recorded). */
#define CLI_ENTRY_MAX (1u << 20)
#define CLI_DOC_MAX (16u << 20)
#define CLI_REPORT_MAX (64u << 20)
/* Columns the plan's text wraps its reasons to at the least, whatever
 * $COLUMNS says: below it a wrapped reason is a word a line. */
#define CLI_TEXT_MIN_COLUMNS 40
#define CLI_LEDGER_CSV_MAX ((size_t)1 << 34)

#endif

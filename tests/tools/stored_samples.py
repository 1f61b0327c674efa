"""stored_samples.py - put metering samples straight into a SQLite store of
tessera's schema (v9: a reading names its attribution, stored once), as a
test does to store what no ingest would accept (hostile texts, hand-made
days). Texts may be str or bytes: bytes are stored as TEXT unchanged."""


def put_sample(db, node, device, ts_ms, model, profile, tenant, ns, pod, share_ppm, util_ppm,
               workload=""):
    """One sample into db (a sqlite3 connection); the caller commits."""
    texts = (node, model, profile, tenant, ns, pod, workload)
    db.execute("INSERT INTO attributions (node, model, profile, tenant, ns, pod, workload)"
               " VALUES (" + ", ".join(["CAST(? AS TEXT)"] * 7) + ") ON CONFLICT DO NOTHING",
               texts)
    attr = db.execute("SELECT id FROM attributions WHERE node = CAST(? AS TEXT) AND"
                      " model = CAST(? AS TEXT) AND profile = CAST(? AS TEXT) AND"
                      " tenant = CAST(? AS TEXT) AND ns = CAST(? AS TEXT) AND"
                      " pod = CAST(? AS TEXT) AND workload = CAST(? AS TEXT)",
                      texts).fetchone()[0]
    db.execute("INSERT INTO readings (device, ts_ms, attribution, share_ppm, util_ppm)"
               " VALUES (CAST(? AS TEXT), ?, ?, ?, ?)", (device, ts_ms, attr, share_ppm, util_ppm))

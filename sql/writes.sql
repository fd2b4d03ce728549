-- writes: everything that lands in some rank's memory, one row per target
-- range, with the rank that owns the target (owner).
--
-- put, signal and amo land in the peer's memory (owner = peer); a write is a
-- local store into the issuer's own memory; a get lands in its local
-- destination (local_region, local_offset) on the issuer's rank: the read of
-- the peer is not a write. A put_signal gives two rows: its payload
-- (part = 'data') and its signal word (part = 'signal', region = sig_region).
-- words counts the elements covered: ceil(nbytes / elem_bytes), 1 for a
-- signal word or an amo.
CREATE VIEW writes AS
WITH _targets AS (
    SELECT rank, core, seq, ts, launch, kind, engine, site, epoch,
           'data' AS part, peer AS owner, region, "offset", nbytes, NULL::TINYINT AS op, value
    FROM _raw_events WHERE kind IN (_kind_code('put'), _kind_code('put_signal'))
    UNION ALL
    SELECT rank, core, seq, ts, launch, kind, engine, site, epoch,
           'signal', peer, sig_region, sig_offset, NULL, op, value
    FROM _raw_events WHERE kind = _kind_code('put_signal')
    UNION ALL
    SELECT rank, core, seq, ts, launch, kind, engine, site, epoch,
           'data', peer, region, "offset", NULL, op, value
    FROM _raw_events WHERE kind IN (_kind_code('signal'), _kind_code('amo'))
    UNION ALL
    SELECT rank, core, seq, ts, launch, kind, engine, site, epoch,
           'data', rank, region, "offset", nbytes, NULL, value
    FROM _raw_events WHERE kind = _kind_code('write')
    UNION ALL
    SELECT rank, core, seq, ts, launch, kind, engine, site, epoch,
           'data', rank, local_region, local_offset, nbytes, NULL, NULL
    FROM _raw_events WHERE kind = _kind_code('get')
)
SELECT
    t.rank,                                          -- rank that issued the operation
    t.core,                                          -- core that issued it
    t.seq,                                           -- its seq (a put_signal's two rows share it)
    t.ts,                                            -- its ts on the issuer's clock
    t.launch,                                        -- launch index
    _kind_name(t.kind) AS kind,                      -- put, put_signal, signal, amo, write or get
    t.part,                                          -- 'data', or 'signal' for a put_signal's signal word
    t.owner,                                         -- rank whose memory the target lives in
    _region_name(t.region) AS region,                -- target region
    t."offset",                                      -- first target element
    coalesce(t.nbytes, r.elem_bytes) AS nbytes,      -- bytes written (one element for signal words, amo)
    CASE WHEN t.nbytes IS NULL THEN 1
         ELSE (t.nbytes + r.elem_bytes - 1) // r.elem_bytes END AS words,
                                                     -- elements covered, from offset on
    _op_name(t.op) AS op,                            -- set / add for signal words and amo; NULL otherwise
    t.value,                                         -- value written where the event says (flag patterns)
    _engine_name(t.engine) AS engine,                -- engine that carried it (NULL for write)
    r.role,                                          -- the target region's role (payload, flag, ...)
    t.site,                                          -- call-site id
    t.epoch                                          -- the kernel's generation
FROM _targets AS t
LEFT JOIN _regions AS r ON r.id = t.region;

-- events: every event of the dataset, one row each, names in place of codes.
--
-- The columns are the trace contract's (ingest/contract.py, documented in
-- docs/trace-format.md) under their JSON names: an event's JSON line and its
-- row here carry the same fields with the same values; a field its kind does
-- not carry is NULL. Rows come in no particular order: ORDER BY rank, core,
-- seq for program order. The integer codes are in _raw_events.
CREATE VIEW events AS
SELECT
    e.rank,                                        -- rank (PE) that executed the operation
    e.core,                                        -- AIV core / block / SM within the rank
    e.seq,                                         -- program order, strictly increasing per (rank, core)
    e.ts,                                          -- device cycles; monotone per core, not aligned across ranks
    e.launch,                                      -- host round / kernel launch index
    _kind_name(e.kind) AS kind,                    -- operation kind (put, signal, wait_begin, ...)
    e.site,                                        -- call-site id
    s.text AS site_text,                           -- the call site as file:line, from the manifest's sites
    e.epoch,                                       -- the kernel's own generation / magic value
    e.name,                                        -- kernel name (kernel_begin, kernel_end)
    _engine_name(e.engine) AS engine,              -- transfer engine (mte, sdma, udma, roce, local; all on quiet/fence)
    e.peer,                                        -- target rank of a one-sided operation
    _region_name(e.region) AS region,              -- symmetric region, by manifest name
    e."offset",                                    -- offset in elements of the region
    e.nbytes,                                      -- bytes moved or written
    _region_name(e.local_region) AS local_region,  -- get: local destination region
    e.local_offset,                                -- get: local destination offset in elements
    _region_name(e.sig_region) AS sig_region,      -- put_signal: region of the signal word
    e.sig_offset,                                  -- put_signal: offset of the signal word
    coalesce(_op_name(e.op), _pipe_op_name(e.pipe_op)) AS op,
                                                   -- set / add (signal, amo, put_signal), add / none
                                                   -- (atomic_mode), or pipe_sync's operation (set_flag, ...)
    e.value,                                       -- word written or compared against, or count announced
    _cmp_name(e.cmp) AS cmp,                       -- wait comparison (eq, ne, gt, ge, lt, le)
    e.words,                                       -- wait: consecutive words that must all satisfy cmp
    e.observed,                                    -- wait_end: the value that satisfied the wait
    _outcome_name(e.outcome) AS outcome,           -- wait_end: ok or timeout
    _pipe_event_name(e.event) AS event,            -- pipe_sync hardware event (mte3_s, s_mte3, ...)
    _dtype_name(e.dtype) AS dtype,                -- atomic_mode element type
    _scope_name(e.scope) AS scope,                 -- barrier scope (all, core, team)
    e.token,                                       -- route: token index on the owner rank
    e.topk,                                        -- route: top-k slot of the token
    e.expert,                                      -- route: global expert id as the kernel used it
    e.dst_rank,                                    -- route: rank the kernel sent the pair to
    e.slot,                                        -- route: slot within the destination segment
    e.local_expert,                                -- count / deliver: local expert index on the receiver
    e.src_rank,                                    -- deliver: rank whose rows were delivered
    e.requested,                                   -- deliver: rows the sender announced
    e.delivered,                                   -- deliver: rows the receiver actually took
    e.capacity                                     -- count / deliver: receive capacity in rows
FROM _raw_events AS e
LEFT JOIN _sites AS s ON s.id = e.site;

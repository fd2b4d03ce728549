-- waits: every wait, its wait_begin paired with its wait_end, and the waits
-- that never ended (stuck).
--
-- A wait_begin's end is the next wait event on the same (rank, core) in
-- program order, when that event is a wait_end. A wait_begin followed by
-- another wait_begin, or by nothing, has no end: stuck is true and every end_*
-- column is NULL. The trace's end is the moment of the post-mortem, so a
-- stuck wait is one still spinning when the trace was taken.
CREATE VIEW waits AS
WITH _wait_events AS (
    SELECT
        rank, core, seq, ts, launch, kind, region, "offset", cmp, value, words, observed, outcome,
        site, epoch,
        lead(kind) OVER w AS next_kind,
        lead(seq) OVER w AS next_seq,
        lead(ts) OVER w AS next_ts,
        lead(region) OVER w AS next_region,
        lead("offset") OVER w AS next_offset,
        lead(observed) OVER w AS next_observed,
        lead(outcome) OVER w AS next_outcome
    FROM _raw_events
    WHERE kind IN (_kind_code('wait_begin'), _kind_code('wait_end'))
    WINDOW w AS (PARTITION BY rank, core ORDER BY seq)
),
_paired AS (
    SELECT *, next_kind IS NOT DISTINCT FROM _kind_code('wait_end') AS ended
    FROM _wait_events
    WHERE kind = _kind_code('wait_begin')
)
SELECT
    rank,                                                   -- rank that waited (and owns the word)
    core,                                                   -- core that waited
    launch,                                                 -- launch of the wait_begin
    _region_name(region) AS region,                         -- region of the waited-on word
    "offset",                                               -- offset of the first waited-on word
    _cmp_name(cmp) AS cmp,                                  -- comparison the words must satisfy
    value AS target,                                        -- value compared against
    coalesce(words, 1) AS words,                            -- consecutive words that must all satisfy cmp
    CASE WHEN ended THEN next_observed END AS observed,     -- value the wait_end reports (NULL if stuck)
    CASE WHEN ended THEN coalesce(_outcome_name(next_outcome), 'ok') END AS outcome,
                                                            -- ok or timeout (an end without outcome is ok);
                                                            -- NULL if stuck
    NOT ended AS stuck,                                     -- true: no wait_end follows this wait_begin
    seq AS begin_seq,                                       -- seq of the wait_begin
    ts AS begin_ts,                                         -- ts of the wait_begin
    CASE WHEN ended THEN next_seq END AS end_seq,           -- seq of the wait_end
    CASE WHEN ended THEN next_ts END AS end_ts,             -- ts of the wait_end
    CASE WHEN ended THEN next_ts - ts END AS duration,      -- cycles from begin to end (NULL if stuck)
    ended AND (next_region IS DISTINCT FROM region OR next_offset IS DISTINCT FROM "offset")
        AS end_mismatch,                                    -- the wait_end names another word than its begin
    site,                                                   -- call-site id of the wait_begin
    (SELECT text FROM _sites WHERE id = site) AS site_text, -- the call site as file:line
    epoch                                                   -- the kernel's generation at the wait_begin
FROM _paired;

-- The baseline: what a user would write by hand in DuckDB instead of moetrace,
-- for two of its checks, straight over the dataset's parquet files.
-- {EVENTS} is the parquet glob; {PUT}, {SIGNAL}, ... are the contract's kind codes
-- (bench/perf.py fills them in from ingest.contract, so no code is restated here).
-- Statements are separated by ';' on a line of its own; each SELECT is run and fetched.

CREATE VIEW ev AS
SELECT * FROM read_parquet('{EVENTS}', hive_partitioning = false)
;

-- 1. Stuck waits and their producers.
-- A wait is stuck when no wait_end on the same (rank, core, launch, word) follows
-- its wait_begin (anti-join). The producers it expects are the (rank, core) that
-- wrote that word in earlier launches; the missing ones are those that did not
-- write it in the wait's launch (anti-join again); each is tagged with whether it
-- is stuck itself (one step of the chain moetrace follows to the root).
CREATE TEMP TABLE stuck AS
WITH wb AS (
    SELECT rank, core, seq, launch, region, "offset", value AS target
    FROM ev WHERE kind = {WAIT_BEGIN}
), we AS (
    SELECT rank, core, seq, launch, region, "offset"
    FROM ev WHERE kind = {WAIT_END}
)
SELECT wb.* FROM wb
ANTI JOIN we ON we.rank = wb.rank AND we.core = wb.core AND we.launch = wb.launch
    AND we.region = wb.region AND we."offset" = wb."offset" AND we.seq > wb.seq
;

WITH writes AS (
    -- the word a remote write lands in lives on its peer, a local write on its own rank
    SELECT rank AS w_rank, core AS w_core, launch, region, "offset",
           CASE WHEN kind = {WRITE} THEN rank ELSE coalesce(peer, rank) END AS owner
    FROM ev
    WHERE kind IN ({PUT}, {PUT_SIGNAL}, {SIGNAL}, {AMO}, {WRITE})
      AND (region, "offset") IN (SELECT region, "offset" FROM stuck)
), expected AS (
    SELECT DISTINCT s.rank, s.core, s.seq, s.launch, s.region, s."offset", w.w_rank, w.w_core
    FROM stuck s JOIN writes w
      ON w.owner = s.rank AND w.region = s.region AND w."offset" = s."offset" AND w.launch < s.launch
), missing AS (
    SELECT e.* FROM expected e
    ANTI JOIN writes w
      ON w.owner = e.rank AND w.region = e.region AND w."offset" = e."offset"
     AND w.launch = e.launch AND w.w_rank = e.w_rank AND w.w_core = e.w_core
)
SELECT m.rank, m.core, m.seq, m.launch, m.region, m."offset", m.w_rank, m.w_core,
       EXISTS (SELECT 1 FROM stuck s2 WHERE s2.rank = m.w_rank AND s2.core = m.w_core) AS producer_stuck
FROM missing m
ORDER BY m.rank, m.core, m.seq
;

SELECT * FROM stuck ORDER BY rank, core, seq
;

-- 2. Missing quiet: a signal to a peer while a put to that peer on the same
-- (rank, core) is newer than the last quiet or fence (window in seq order).
WITH ordered AS (
    SELECT rank, core, seq, kind, peer,
           max(CASE WHEN kind IN ({QUIET}, {FENCE}) THEN seq END)
               OVER (PARTITION BY rank, core ORDER BY seq ROWS UNBOUNDED PRECEDING) AS last_quiet
    FROM ev
    WHERE kind IN ({PUT}, {SIGNAL}, {QUIET}, {FENCE})
), per_peer AS (
    SELECT *,
           max(CASE WHEN kind = {PUT} THEN seq END)
               OVER (PARTITION BY rank, core, peer ORDER BY seq ROWS UNBOUNDED PRECEDING) AS last_put
    FROM ordered
    WHERE kind IN ({PUT}, {SIGNAL})
)
SELECT rank, core, seq, peer, last_put, last_quiet
FROM per_peer
WHERE kind = {SIGNAL} AND last_put IS NOT NULL AND (last_quiet IS NULL OR last_put > last_quiet)
ORDER BY rank, core, seq
;

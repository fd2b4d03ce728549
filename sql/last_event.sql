-- last_event: the last event of every (rank, core) in the trace, with every
-- column of events, plus how many events that core recorded.
--
-- For a hang post-mortem this is where each core stopped: a wait_begin is a
-- core still spinning, a kernel_end a core that finished.
CREATE VIEW last_event AS
SELECT
    *,                                              -- every column of events, for the core's last event
    count(*) OVER (PARTITION BY rank, core) AS events
                                                    -- events the core recorded in the dataset
FROM events
QUALIFY row_number() OVER (PARTITION BY rank, core ORDER BY seq DESC) = 1;

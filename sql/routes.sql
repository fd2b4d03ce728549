-- routes: the router's decisions as the kernel used them, one row per
-- (token, topk) pair, with the expert id checked against the manifest.
--
-- num_experts comes from the manifest's params (num_experts, or
-- local_experts * ranks); where it is unknown, valid is NULL.
CREATE VIEW routes AS
SELECT
    e.rank,                                                   -- rank owning the token
    e.core,                                                   -- core that routed it
    e.seq,                                                    -- seq of the route event
    e.ts,                                                     -- ts of the route event
    e.launch,                                                 -- launch index
    e.token,                                                  -- token index on the owner rank
    e.topk,                                                   -- top-k slot of the token
    e.expert,                                                 -- global expert id as the kernel used it
    e.dst_rank,                                               -- rank the kernel sent the pair to (if recorded)
    e.slot,                                                   -- slot within the destination segment
    e.expert >= 0 AND e.expert < m.num_experts AS valid,      -- expert id in [0, num_experts)
    e.expert IS NOT DISTINCT FROM m.expert_sentinel AS sentinel,
                                                              -- the manifest's accepted masked-route value
    CASE WHEN e.expert >= 0 AND e.expert < m.num_experts
         THEN e.expert // m.local_experts END AS expert_rank, -- rank that owns the expert (valid ids only)
    CASE WHEN e.expert >= 0 AND e.expert < m.num_experts
         THEN e.expert % m.local_experts END AS local_expert, -- the expert's index on its rank
    e.site,                                                   -- call-site id
    e.epoch                                                   -- the kernel's generation
FROM _raw_events AS e, _manifest AS m
WHERE e.kind = _kind_code('route');

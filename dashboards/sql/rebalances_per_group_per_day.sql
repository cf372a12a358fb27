-- Rebalances (new generations) per group per UTC day, with the members seen that day.
-- Placeholders: ${delta_root}.
SELECT s.`group`,
       s.snapshot_date                       AS day,
       count(DISTINCT s.generation)          AS rebalances,
       min(s.generation)                     AS first_generation,
       max(s.generation)                     AS last_generation,
       max(s.member_count)                   AS max_members,
       count(DISTINCT s.leader)              AS leaders
FROM delta.`${delta_root}/group_snapshots` AS s
WHERE NOT s.tombstone AND s.generation IS NOT NULL
GROUP BY s.`group`, s.snapshot_date
ORDER BY day DESC, rebalances DESC, s.`group`

-- Members of each group's latest generation whose consumer-protocol subscription version is
-- older than the newest version seen anywhere in the fleet (clients still to upgrade; versions
-- below 1 cannot report owned partitions, so cooperative rebalancing cannot work for them).
-- Placeholders: ${delta_root}.
WITH latest AS (
  SELECT `group`, max_by(named_struct('p', source_partition, 'o', source_offset),
                         source_timestamp) AS at
  FROM delta.`${delta_root}/group_snapshots`
  WHERE NOT tombstone
  GROUP BY `group`
),
newest AS (
  SELECT max(subscription_version) AS v FROM delta.`${delta_root}/member_assignments`
)
SELECT m.`group`, m.generation, m.member_id, m.client_id, m.client_host,
       m.subscription_version, n.v AS newest_version_in_fleet
FROM delta.`${delta_root}/member_assignments` AS m
JOIN latest AS l
  ON m.`group` = l.`group` AND m.source_partition = l.at.p AND m.source_offset = l.at.o
CROSS JOIN newest AS n
WHERE m.subscription_version < n.v
ORDER BY m.subscription_version, m.`group`, m.member_id

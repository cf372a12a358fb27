-- Partitions consumed twice right now: overlap findings in each group's latest generation.
-- Placeholders: ${delta_root}.
WITH latest AS (
  SELECT `group`, max_by(generation, source_timestamp) AS generation,
         max_by(tombstone, source_timestamp) AS deleted
  FROM delta.`${delta_root}/group_snapshots`
  GROUP BY `group`
)
SELECT f.`group`, f.generation, f.topic, f.`partition`, f.members, f.detail, f.detected_at
FROM delta.`${delta_root}/findings` AS f
JOIN latest AS l ON f.`group` = l.`group` AND f.generation = l.generation AND NOT l.deleted
WHERE f.kind IN ('assignment_overlap', 'owned_overlap_same_generation',
                 'owned_overlap_without_generation', 'cooperative_revocation_violation')
ORDER BY f.`group`, f.topic, f.`partition`

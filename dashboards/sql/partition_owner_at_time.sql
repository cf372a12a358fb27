-- Who owned topic-partition ${topic}-${partition} of group ${group} at time ${at}?
-- Placeholders: ${delta_root}, ${group}, ${topic} (quoted strings), ${partition} (integer),
-- ${at} (a timestamp literal such as TIMESTAMP'2026-01-01 12:00:00'). More than one row means
-- two members owned it at once (an overlap). The to_date condition follows from the to_time one
-- and lets Spark skip the days intervals closed on before ${at} (the table's partitions); to_date
-- is a UTC day, so a day's margin keeps it true in any session time zone.
SELECT member_id, client_id, from_generation, from_time, to_generation, to_time
FROM delta.`${delta_root}/partition_ownership`
WHERE `group` = ${group}
  AND topic = ${topic}
  AND `partition` = ${partition}
  AND from_time <= ${at}
  AND (to_time IS NULL OR to_time > ${at})
  AND (to_date IS NULL OR to_date >= date_sub(CAST(${at} AS DATE), 1))
ORDER BY from_time, member_id
